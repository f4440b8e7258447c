"""Text uploads: a table of short texts checked whole in the request, then queued.

``text_upload_create`` reads the whole upload in the request (CSV with a text column, or JSONL;
read with the bounds of every table, :mod:`spaces.tables`: at most ``MAX_TABLE_MB``,
``TABLE_MAX_ROWS`` rows, cells that pass the guard of form input; every text checked: present,
not blank, at most ``MAX_TEXT_CHARS``; keys unique) — any problem is a form error and nothing is
kept — then queues the embedding (``spaces.embed_texts``, whose body is
:func:`spaces.texts.embedding.text_embed_step`) after the commit.
"""

from __future__ import annotations

import pandas as pd
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from spaces.exceptions import InputFileError
from spaces.models import EmbeddingImport
from spaces.services import MAX_KEY
from spaces.tables import TEXT_FORMATS, read_table
from spaces.texts import sentence_model
from spaces.uploads import import_enqueue, table_upload_store, upload_files_remove

TEXTS_PREFIX = "texts-"
EMBED_TASK = "spaces.embed_texts"
MAX_TEXT_CHARS = 5000


def text_column_values(frame: pd.DataFrame, *, text_column: str, key_column: str = ""):
    """(keys, texts) from an uploaded table; ``InputFileError`` naming the row on bad input."""
    if text_column not in frame.columns:
        raise InputFileError(
            f"no column {text_column!r}; the file has {', '.join(map(str, frame.columns[:10]))}"
        )
    if key_column and key_column not in frame.columns:
        raise InputFileError(f"no column {key_column!r} for the keys")
    texts = []
    for row, value in enumerate(frame[text_column].tolist(), start=1):
        if not isinstance(value, str) or not value.strip():
            raise InputFileError(f"no text in {text_column!r}", line=row, unit="record")
        if len(value) > MAX_TEXT_CHARS:
            raise InputFileError(f"a text longer than {MAX_TEXT_CHARS}", line=row, unit="record")
        texts.append(value.strip())
    if key_column:
        keys = [str(v).strip() for v in frame[key_column].tolist()]
    else:
        keys = [f"text {i}" for i in range(1, len(texts) + 1)]
    seen: dict[str, int] = {}
    for row, key in enumerate(keys, start=1):
        if not key or len(key) > MAX_KEY:
            raise InputFileError("the key is empty or too long", line=row, unit="record")
        if key in seen:
            raise InputFileError(
                f"the key {key!r} appears twice (first in record {seen[key]})",
                line=row,
                unit="record",
            )
        seen[key] = row
    return keys, texts


def text_upload_create(
    *, user, upload: UploadedFile, name: str, text_column: str = "text", key_column: str = ""
) -> EmbeddingImport:
    """Store and check a text upload, then queue its embedding (after the commit)."""
    if not sentence_model.available():
        raise InputFileError(sentence_model.MISSING)
    options = {"text_column": text_column.strip(), "key_column": key_column.strip()}
    job, frame = table_upload_store(
        user=user,
        upload=upload,
        name=name,
        prefix=TEXTS_PREFIX,
        formats=TEXT_FORMATS,
        read=read_table,
        options=options,
    )
    try:
        keys, _ = text_column_values(frame, **options)
    except BaseException:
        upload_files_remove(job)
        raise
    job.stage = "embedding"
    job.total_rows = len(keys)
    with transaction.atomic():
        job.save()
        transaction.on_commit(lambda: text_embed_enqueue(job.pk))
    return job


def text_embed_enqueue(import_id: int) -> None:
    import_enqueue(import_id, EMBED_TASK)
