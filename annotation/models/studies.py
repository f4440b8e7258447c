"""A study and its members, and the one definition of its item pool."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q, QuerySet

from spaces.models import Item

# The largest overlap and target the set-up accepts (the columns hold 32,767 and 2,147,483,647 on
# PostgreSQL; a larger number is a form error or a 400, never an overflow): annotation/setup.
MAX_OVERLAP = 1000
MAX_TARGET = 1_000_000


class Study(models.Model):
    class Mode(models.TextChoices):
        PAIRS = "pairs", "pairs"
        GROUPS = "groups", "groups"
        BOTH = "both", "pairs and groups"

    class Pool(models.TextChoices):
        ALL = "all", "all items of the space"
        TAGS = "tags", "items with given tags"
        KEYS = "keys", "an uploaded list of item keys"

    class Strategy(models.TextChoices):
        RANDOM = "random", "random"
        STRATIFIED = "stratified", "stratified by distance"
        UNCERTAINTY = "uncertainty", "uncertainty (active learning)"
        INFORMATION = "information", "expected information, batch D-optimal (active learning)"
        TARGETED = "targeted", "targeted P(comparable) 0.65 + exploration (active learning)"

    name = models.CharField(max_length=200, unique=True)
    space = models.ForeignKey(
        "spaces.EmbeddingSpace", on_delete=models.PROTECT, related_name="studies"
    )
    pool_tags = models.ManyToManyField(
        "spaces.Tag",
        blank=True,
        related_name="studies",
        help_text="Item pool; empty means all items.",
    )
    pool = models.CharField(
        max_length=4,
        choices=Pool.choices,
        default=Pool.TAGS,
        help_text="all: every item; tags: items with a pool tag (none: all); keys: pool_keys.",
    )
    pool_keys = models.ManyToManyField(
        "spaces.Item", blank=True, related_name="+", help_text="The pool when pool is 'keys'."
    )
    pool_revision = models.PositiveIntegerField(
        default=0, help_text="Bumped on every change of the pool (the pool cache's key)."
    )
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.BOTH)
    strategy = models.CharField(max_length=12, choices=Strategy.choices, default=Strategy.RANDOM)
    overlap = models.PositiveSmallIntegerField(
        default=2, help_text="How many annotators answer each pair."
    )
    gold_rate = models.FloatField(default=0.0, help_text="Share of gold pairs shown (0 to 1).")
    candidate_rate = models.FloatField(
        default=1.0,
        help_text="Share of the pairs drawn from the uploaded candidate pairs while some are "
        "left (0 to 1; 1: all of them first, then the strategy).",
    )
    instructions = models.TextField(blank=True, help_text="Markdown.")
    target_per_annotator = models.PositiveIntegerField(default=200)
    stop_at_target = models.BooleanField(
        default=False, help_text="An annotator who reaches the target sees the completion page."
    )
    is_active = models.BooleanField(default=True, help_text="Open: takes answers.")
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="studies"
    )

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(
                condition=Q(gold_rate__gte=0) & Q(gold_rate__lte=1), name="study_gold_rate_0_1"
            ),
            models.CheckConstraint(
                condition=Q(candidate_rate__gte=0) & Q(candidate_rate__lte=1),
                name="study_candidate_rate_0_1",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        ANNOTATOR = "annotator", "annotator"
        REVIEWER = "reviewer", "reviewer"
        ADMIN = "admin", "admin"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.ANNOTATOR)
    target = models.PositiveIntegerField(
        null=True, blank=True, help_text="This annotator's target; empty: the study's."
    )
    attributes = models.JSONField(
        default=dict,
        blank=True,
        help_text="The member's values of the study's member attributes ({name: value}); "
        "seen by the study's admins only (annotation/models/cohorts.py).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "user"]
        constraints = [
            models.UniqueConstraint(fields=["user", "study"], name="membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.study} as {self.role}"


def pool_queryset(study: Study, tag_ids: list[int] | None = None) -> QuerySet[Item]:
    """The items of a study's pool: the one definition (``study.pool``).

    ``all``: every item of the space; ``tags``: items with any of the pool tags (no tags: all);
    ``keys``: the uploaded ``pool_keys``. ``tag_ids`` saves the query for the tags.
    """
    qs = Item.objects.filter(space_id=study.space_id)
    if study.pool == Study.Pool.KEYS:
        chosen = Study.pool_keys.through.objects.filter(study_id=study.pk)
        return qs.filter(pk__in=chosen.values("item_id"))
    if study.pool == Study.Pool.TAGS:
        if tag_ids is None:
            tag_ids = list(study.pool_tags.values_list("pk", flat=True))
        if tag_ids:
            qs = qs.filter(tags__in=tag_ids).distinct()
    return qs
