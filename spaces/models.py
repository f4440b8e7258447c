"""Embedding spaces: the matrices, their items and tags, and the uploads that create them.

The tables keep the names they had when these models lived in ``annotation`` (``db_table``):
the move was a change of Django state only (``spaces.0001``, ``annotation.0004``).
"""

from __future__ import annotations

import numpy as np
from django.conf import settings
from django.db import models

from common.matrices import matrix_load, matrix_rows


class EmbeddingSpace(models.Model):
    """A matrix of item embeddings, kept as one ``.npy`` file in media storage.

    Items are database rows pointing at row indices of the matrix; vectors are never stored
    one per row. Read the vectors of many items with :meth:`vectors` (one indexed read).
    """

    class Kind(models.TextChoices):
        VECTORS = "vectors", "vectors"  # an uploaded embedding matrix
        RECORDS = "records", "records"  # a table; the matrix is φ(records), see feature_map
        TEXTS = "texts", "texts"  # short texts embedded by a sentence model

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.VECTORS)
    dimension = models.PositiveIntegerField()
    source = models.TextField(blank=True, help_text="Where the vectors come from.")
    matrix = models.FileField(upload_to="spaces/", max_length=500)
    sha256 = models.CharField(max_length=64)
    item_count = models.PositiveIntegerField(default=0)
    feature_map = models.JSONField(
        null=True,
        blank=True,
        help_text="Records: the feature map φ as a plain JSON specification (spaces/featuremap.py).",
    )
    label_column = models.CharField(
        max_length=200, blank=True, help_text="Records: the column kept out of φ as the label."
    )
    hidden_columns = models.JSONField(
        default=list,
        blank=True,
        help_text="Records: the fields annotators never see nor search (by default the label "
        "column); see shown_payload.",
    )
    # Who may use the space (spaces/sharing.py): staff always; its owner; the people it is
    # shared with; every study admin when shared with all of them. No owner: staff only.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Who uploaded it, or who it was given to; none: staff only.",
    )
    shared_with = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="shared_spaces",
        help_text="People who may attach it to the studies they administer.",
    )
    shared_with_study_admins = models.BooleanField(
        default=False,
        help_text="Every admin of a study may attach it to the studies they administer.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotation_embeddingspace"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def holds_words(self) -> bool:
        """Whether the items are words (an uploaded embedding matrix): what word-set tests such
        as WEAT need; records and texts are not."""
        return self.kind == self.Kind.VECTORS

    def shown_payload(self, payload):
        """The part of an item's ``payload`` annotators see: the record without the space's
        hidden columns. The one place for that rule: every item the annotation API returns
        goes through it (``Item.shown_payload``), and its record search reads only these
        fields (``annotation.groups.selectors.item_field_queryset``)."""
        if not isinstance(payload, dict) or not self.hidden_columns:
            return payload
        hidden = set(self.hidden_columns)
        return {k: v for k, v in payload.items() if k not in hidden}

    def load_matrix(self, *, mmap: bool = True) -> np.ndarray:
        """The whole matrix (n, d), memory-mapped read-only by default (on object storage: from a
        local copy kept by sha256, ``common/matrices.py``)."""
        return matrix_load(self.matrix.name, self.sha256, mmap=mmap)

    def vectors(self, rows) -> np.ndarray:
        """Vectors of the given row indices as a float64 array, in the given order: one indexed
        read of the memory-mapped matrix (on object storage: ranged reads of those rows)."""
        return matrix_rows(self.matrix.name, self.sha256, rows)


class Tag(models.Model):
    name = models.CharField(max_length=100, unique=True)

    class Meta:
        db_table = "annotation_tag"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Item(models.Model):
    class Kind(models.TextChoices):
        WORD = "word", "word"
        NAME = "name", "name"
        TEXT = "text", "text"
        RECORD = "record", "record"

    space = models.ForeignKey(EmbeddingSpace, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=255)
    text = models.TextField(blank=True, help_text="Display text; the key when empty.")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.WORD)
    payload = models.JSONField(
        null=True, blank=True, help_text="A record's original field values (JSON), shown."
    )
    row = models.PositiveIntegerField(help_text="Row index into the space's matrix.")
    tags = models.ManyToManyField(
        Tag, blank=True, related_name="items", db_table="annotation_item_tags"
    )

    class Meta:
        db_table = "annotation_item"
        ordering = ["space", "row"]
        constraints = [
            models.UniqueConstraint(fields=["space", "key"], name="item_unique_key_in_space"),
            models.UniqueConstraint(fields=["space", "row"], name="item_unique_row_in_space"),
        ]

    def __str__(self) -> str:
        return self.key

    @property
    def display(self) -> str:
        return self.text or self.key

    @property
    def shown_payload(self):
        """The payload as annotators see it (:meth:`EmbeddingSpace.shown_payload`). Reads
        ``self.space`` for a payload only; lists attach their space first (:func:`attach_spaces`)."""
        if self.payload is None:
            return None
        return self.space.shown_payload(self.payload)


def first_record(space_id: int) -> dict:
    """The fields of a space's first record (all records of a space have the same, the table's
    columns); empty when the space holds no records."""
    payload = (
        Item.objects.filter(space_id=space_id, payload__isnull=False)
        .order_by("row")
        .values_list("payload", flat=True)
        .first()
    )
    return payload if isinstance(payload, dict) else {}


def attach_spaces(items) -> None:
    """Give items that carry a payload their space, read once per space (so rendering many
    records asks for each space once, not once per item)."""
    missing = {
        item.space_id
        for item in items
        if item.payload is not None and not Item.space.is_cached(item)
    }
    if not missing:
        return
    spaces = EmbeddingSpace.objects.only("id", "hidden_columns").in_bulk(missing)
    for item in items:
        if item.space_id in spaces and not Item.space.is_cached(item):
            item.space = spaces[item.space_id]


class EmbeddingImport(models.Model):
    """An embedding file uploaded by an admin, imported as a space by a Celery task."""

    class Status(models.TextChoices):
        PENDING = "pending", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    file = models.FileField(upload_to="uploads/", max_length=500)
    extra_file = models.FileField(
        upload_to="uploads/",
        max_length=500,
        blank=True,
        help_text="npy: the vocabulary file; csv: a .npy of vectors, one row per data row.",
    )
    original_name = models.CharField(max_length=255, blank=True)
    name = models.CharField(max_length=200, help_text="Name of the space to create.")
    format = models.CharField(max_length=20, default="auto")
    kind = models.CharField(max_length=10, blank=True)
    tags = models.JSONField(default=list, blank=True)
    limit = models.PositiveIntegerField(null=True, blank=True)
    options = models.JSONField(
        default=dict, blank=True, help_text="Records and texts: the columns chosen, the key column."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    stage = models.CharField(max_length=20, blank=True, help_text="reading or storing")
    progress_rows = models.PositiveBigIntegerField(default=0)
    total_rows = models.PositiveBigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    space = models.ForeignKey(
        EmbeddingSpace, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "annotation_embeddingimport"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"import of {self.name} ({self.status})"
