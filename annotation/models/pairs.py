"""Gold and candidate pairs: two items of the study's pool, set up by its admins."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q

from .judgments import Label
from .studies import Study, pool_queryset


def pair_check(study: Study, item_a, item_b) -> None:
    """The model-level rule of gold and candidate pairs: two different items of the study's
    space (the full pool check, which needs queries, is in :meth:`GoldPair.clean`)."""
    if item_a is None or item_b is None:
        return
    if item_a.pk == item_b.pk:
        raise ValidationError("A pair needs two different items.")
    for item in (item_a, item_b):
        if item.space_id != study.space_id:
            raise ValidationError(
                f"Item {item.key!r} belongs to another embedding space than the study's."
            )


def pool_check(study: Study, item_a, item_b) -> None:
    """Both items in the study's pool (ValidationError naming the first that is not)."""
    pair_check(study, item_a, item_b)
    pool = pool_queryset(study)
    found = set(pool.filter(pk__in=[item_a.pk, item_b.pk]).values_list("pk", flat=True))
    for item in (item_a, item_b):
        if item.pk not in found:
            raise ValidationError(f"Item {item.key!r} is not in this study's item pool.")


class PoolPair(models.Model):
    """Shared by gold and candidate pairs: canonical, of the study's pool, checked on save."""

    class Meta:
        abstract = True

    def save(self, *args, **kwargs) -> None:
        # Saved from anywhere (services, admin, shell): never a pair of another space.
        self._canonical()
        pair_check(self.study, self.item_a, self.item_b)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        if self.study_id and self.item_a_id and self.item_b_id:
            self._canonical()
            pool_check(self.study, self.item_a, self.item_b)

    def _canonical(self) -> None:
        if self.item_a_id and self.item_b_id and self.item_a_id > self.item_b_id:
            self.item_a, self.item_b = self.item_b, self.item_a


class GoldPair(PoolPair):
    """A pair with a known answer, set by an admin, shown at the study's gold rate."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="gold_pairs")
    item_a = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    label = models.CharField(
        max_length=12, choices=[c for c in Label.choices if c[0] != Label.UNSURE]
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(item_a__lt=F("item_b")), name="gold_canonical_pair"),
            models.UniqueConstraint(fields=["study", "item_a", "item_b"], name="gold_unique_pair"),
        ]

    def __str__(self) -> str:
        return f"gold {self.item_a_id}-{self.item_b_id}: {self.label}"


class CandidatePair(PoolPair):
    """A pair uploaded by an admin; the sampler offers these before its own strategy, those of
    higher ``priority`` first (pairs an audit asks about: ``ASKED``), at random within one."""

    UPLOADED, ASKED = 0, 1

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="candidate_pairs")
    item_a = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    priority = models.PositiveSmallIntegerField(
        default=0, help_text="Offered before pairs of lower priority (1: asked by an audit)."
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(item_a__lt=F("item_b")), name="candidate_canonical_pair"
            ),
            models.UniqueConstraint(
                fields=["study", "item_a", "item_b"], name="candidate_unique_pair"
            ),
        ]

    def __str__(self) -> str:
        return f"candidate {self.item_a_id}-{self.item_b_id}"
