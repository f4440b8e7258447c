"""Who labels what: studies, memberships, judgments and groups over the items of ``spaces``."""

from __future__ import annotations

import enum
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q, QuerySet

from spaces.models import Item

# Bounds of what one request may carry (the API's serializers and the services both check them).
MAX_ELAPSED_MS = 24 * 3600 * 1000
MAX_GROUP_NAME = 200
MAX_GROUP_SIZE = 5000


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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "user"]
        constraints = [
            models.UniqueConstraint(fields=["user", "study"], name="membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.study} as {self.role}"


class Source(models.TextChoices):
    ANNOTATED = "annotated", "annotated by a person"
    IMPORTED = "imported", "imported"


class Label(models.TextChoices):
    COMPARABLE = "comparable", "comparable"
    INCOMPARABLE = "incomparable", "incomparable"
    UNSURE = "unsure", "unsure"


class LabelCode(enum.IntEnum):
    """A label as a number in arrays: EXPLORE's y (1 comparable, 0 incomparable), 2 unsure."""

    INCOMPARABLE = 0
    COMPARABLE = 1
    UNSURE = 2

    @classmethod
    def of(cls, label: str) -> LabelCode:
        return cls[Label(label).name]


def canonical_pair(item_a_id: int, item_b_id: int) -> tuple[int, int]:
    """A pair as stored: the smaller item id first (``PairJudgment``'s check constraint)."""
    return (item_a_id, item_b_id) if item_a_id < item_b_id else (item_b_id, item_a_id)


class PairJudgment(models.Model):
    """One answer about one pair. Pairs are stored canonically: ``item_a_id < item_b_id``."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judgments")
    item_a = models.ForeignKey("spaces.Item", on_delete=models.PROTECT, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.PROTECT, related_name="+")
    label = models.CharField(max_length=12, choices=Label.choices)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="judgments",
        help_text="Empty for imported judgments.",
    )
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.ANNOTATED)
    provenance = models.CharField(max_length=300, blank=True)
    client_id = models.UUIDField(unique=True, default=uuid.uuid4, editable=False)
    elapsed_ms = models.PositiveIntegerField(null=True, blank=True)
    is_gold = models.BooleanField(default=False, help_text="Answer to a gold pair.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(item_a__lt=F("item_b")), name="judgment_canonical_pair"
            ),
            # A person answers a pair once (undo, then answer again); imports are exempt.
            models.UniqueConstraint(
                fields=["study", "annotator", "item_a", "item_b"],
                condition=Q(source="annotated", annotator__isnull=False),
                name="judgment_once_per_annotator",
            ),
        ]
        indexes = [
            models.Index(fields=["study", "id"], name="judgment_study_id"),
            models.Index(fields=["study", "annotator", "id"], name="judgment_study_annotator"),
            models.Index(fields=["study", "item_a", "item_b"], name="judgment_study_pair"),
        ]

    def __str__(self) -> str:
        return f"{self.item_a_id}-{self.item_b_id}: {self.label}"


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
    """A pair uploaded by an admin; the sampler offers these before its own strategy."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="candidate_pairs")
    item_a = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")

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


class ComparableGroup(models.Model):
    """A named group of items an annotator (or an import) declares comparable."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="groups")
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="comparable_groups",
    )
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.ANNOTATED)
    provenance = models.CharField(max_length=300, blank=True)
    members = models.ManyToManyField("spaces.Item", related_name="comparable_groups", blank=True)
    revision = models.PositiveIntegerField(
        default=1, help_text="The study-wide group revision of this group's last edit."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="group_unique_name_in_study"),
        ]

    def __str__(self) -> str:
        return self.name


class GroupEdit(models.Model):
    """History of a group: one row per create / rename / add / remove."""

    class Action(models.TextChoices):
        CREATE = "create", "create"
        RENAME = "rename", "rename"
        ADD = "add", "add"
        REMOVE = "remove", "remove"
        DELETE = "delete", "delete"

    group = models.ForeignKey(ComparableGroup, on_delete=models.CASCADE, related_name="edits")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=10, choices=Action.choices)
    item = models.ForeignKey(
        "spaces.Item", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    detail = models.CharField(max_length=300, blank=True)
    revision = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.action} r{self.revision}"


class StudyCounter(models.Model):
    """Monotonic per-study revision of the group data (the watermark refits compare)."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="counter")
    group_revision = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.study_id}: groups r{self.group_revision}"

    @classmethod
    def group_revision_next(cls, study) -> int:
        """Increment the study's group revision atomically and return the new value.

        The conditional UPDATE takes the counter's row lock until commit, so concurrent edits get
        distinct, increasing revisions on PostgreSQL; SQLite serialises writers anyway.
        """
        cls.objects.get_or_create(study=study)
        cls.objects.filter(study=study).update(group_revision=F("group_revision") + 1)
        return cls.objects.values_list("group_revision", flat=True).get(study=study)


class PairSkip(models.Model):
    """An annotator passed on a pair (key S): not an answer, and not offered to them again."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    item_a = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(item_a__lt=F("item_b")), name="skip_canonical_pair"),
            models.UniqueConstraint(
                fields=["study", "annotator", "item_a", "item_b"], name="skip_once_per_annotator"
            ),
        ]

    def __str__(self) -> str:
        return f"skip {self.item_a_id}-{self.item_b_id} by {self.annotator_id}"


class PairComment(models.Model):
    """A short note on a pair by an annotator (key C), for the study's reviewers."""

    MAX_LENGTH = 500

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="pair_comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    item_a = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    item_b = models.ForeignKey("spaces.Item", on_delete=models.CASCADE, related_name="+")
    text = models.CharField(max_length=MAX_LENGTH)
    client_id = models.UUIDField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(item_a__lt=F("item_b")), name="comment_canonical_pair"
            ),
        ]

    def __str__(self) -> str:
        return f"comment on {self.item_a_id}-{self.item_b_id} by {self.author_id}"
