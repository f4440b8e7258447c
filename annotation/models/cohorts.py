"""Member attributes (cohorts): what a study's admins ask about their annotators (``region``,
``age band``), with the values each may take. A member's values live on
``Membership.attributes`` ({name: value}); only the study's admins read them
(``annotation/setup/cohorts/``). learning fits each value's metric (``learning/cohorts/``)."""

from __future__ import annotations

from django.db import models

from .studies import Study

MAX_ATTRIBUTES = 10  # per study
MAX_VALUES = 20  # per attribute
MAX_NAME = 40  # an attribute's name, and each value


class MemberAttribute(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="member_attributes")
    name = models.CharField(max_length=MAX_NAME)
    values = models.JSONField(default=list, help_text="The values a member may have, in order.")
    ask = models.BooleanField(
        default=False,
        help_text="Ask each member once, on their first visit to the labelling page, when "
        "they have no value yet.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="member_attribute_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} in {self.study}"


def attributes_to_ask(study_id: int, values: dict | None) -> list[MemberAttribute]:
    """The attributes a member with ``values`` (``Membership.attributes``) is still to be asked
    on their first visit: those the admins ask (``ask``) that have no value of theirs yet."""
    values = values or {}
    return [
        attribute
        for attribute in MemberAttribute.objects.filter(study_id=study_id, ask=True)
        if not values.get(attribute.name)
    ]
