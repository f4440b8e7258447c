"""Importing a record upload in the worker: the whole table, a chunk of rows at a time.

``record_import_run`` (the body of the task ``spaces.import_records``) claims the upload with a
conditional UPDATE (pending and queued → running, or a running import whose lease ran out: a
dead worker), then reads the table three times, never more than a chunk in memory
(:func:`spaces.tables.table_chunks`, about ``CHUNK_CELLS`` cells):

1. **checking** — every bound and cell (the readers), the feature map φ fitted
   (:class:`~spaces.records.featuremap.FeatureMapFit`), the keys checked (:class:`KeyCheck`:
   8 bytes a row); a CSV's checked chunks are spooled in Arrow's format for the next passes;
2. **embedding** — φ applied to each chunk, the rows appended to a ``.npy`` in media storage;
3. **storing** — one transaction: the space's row, then its items with their records, batch by
   batch. Nothing is visible before it commits; on any error it rolls back and the matrix file
   is removed (:func:`spaces.services.matrix_file`).

A choice the table contradicts (:class:`ColumnChoiceError`) brings the upload back to its
columns page with the message; any other error fails it and removes its files; a worker that
dies leaves a running row whose lease the spaces sweep, or the redelivered task, takes over
(from the start: the rolled-back transaction left nothing). After ``MAX_ATTEMPTS`` starts the
import fails, saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from common import storage
from common.iterables import batched
from spaces.exceptions import InputFileError
from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.records.errors import ColumnChoiceError
from spaces.records.featuremap import FeatureMapFit, apply_feature_map
from spaces.records.keys import KeyCheck
from spaces.records.uploads import COLUMNS, QUEUED, RECORDS_PREFIX, features
from spaces.records.values import NumberColumns
from spaces.services import (
    BATCH_SIZE,
    NPY_HEADER_BYTES,
    matrix_file,
    npy_header,
    space_name_check,
    space_row_create,
)
from spaces.tables import table_chunks
from spaces.uploads import ProgressWriter, public_error, upload_files_remove, upload_path

# A running import renews its lease with each progress write; the storing transaction cannot
# (its writes are invisible until it commits), so the lease outlasts a table's longest store.
LEASE = timedelta(seconds=900)
MAX_ATTEMPTS = 3
Status = EmbeddingImport.Status


def _claim(import_id: int) -> bool:
    now = timezone.now()
    return (
        EmbeddingImport.objects.filter(
            Q(status=Status.PENDING, stage=QUEUED)
            | Q(status=Status.RUNNING, started_at__lt=now - LEASE),
            pk=import_id,
            format__startswith=RECORDS_PREFIX,
        ).update(
            status=Status.RUNNING,
            started_at=now,
            stage="checking",
            progress_rows=0,
            attempts=F("attempts") + 1,
        )
        == 1
    )


def record_import_run(*, import_id: int) -> str:
    """Import one record upload whose columns are chosen. Returns ``"done"``, ``"columns"``
    (back to its columns page), ``"failed"``, ``"busy"`` (another worker holds the lease) or
    ``"not run: <status>"``."""
    if not _claim(import_id):
        status = EmbeddingImport.objects.filter(pk=import_id).values_list("status", flat=True)
        status = status.first()
        return "busy" if status == Status.RUNNING else f"not run: {status or 'no such import'}"
    job = EmbeddingImport.objects.select_related("created_by").get(pk=import_id)
    if job.attempts > MAX_ATTEMPTS:
        _fail(job, f"the worker stopped {MAX_ATTEMPTS} times while importing this table")
        return "failed"
    # A previous attempt may have committed the space and died before saying so.
    space = EmbeddingSpace.objects.filter(name=job.name, created_at__gte=job.created_at).first()
    try:
        space = space or _import(job)
    except ColumnChoiceError as exc:
        EmbeddingImport.objects.filter(pk=job.pk).update(
            status=Status.PENDING,
            stage=COLUMNS,
            error=public_error(exc),
            progress_rows=0,
            attempts=0,  # a choice refused is no worker's death
        )
        return "columns"
    except InputFileError as exc:
        _fail(job, public_error(exc))
        return "failed"
    except Exception as exc:
        _fail(job, public_error(exc))
        raise
    EmbeddingImport.objects.filter(pk=job.pk).update(
        status=Status.DONE,
        stage="",
        space=space,
        progress_rows=space.item_count,
        total_rows=space.item_count,
        error="",
        finished_at=timezone.now(),
    )
    upload_files_remove(job)
    return "done"


def _fail(job: EmbeddingImport, error: str) -> None:
    EmbeddingImport.objects.filter(pk=job.pk).update(
        status=Status.FAILED, error=error, finished_at=timezone.now()
    )
    upload_files_remove(job)


class _Spool:
    """A CSV's checked chunks, kept in a local work folder in Arrow's IPC format (zstd) while
    pass 1 reads them, so that passes 2 and 3 read columns instead of parsing the CSV twice
    more (the Parquet file itself is read again: it is columnar already). Removed after the
    import, with the local copy of a table kept in object storage."""

    def __init__(self, file: Path, folder: Path, fmt: str):
        self.path = folder / "checked.arrows"
        self.file, self.fmt = file, fmt

    def first(self) -> Iterator[pd.DataFrame]:
        """Pass 1: the file's chunks, checked by the readers, spooled as they go."""
        if self.fmt != "csv":
            yield from table_chunks(self.file, self.fmt)
            return
        options = pa.ipc.IpcWriteOptions(compression="zstd")
        with pa.OSFile(str(self.path), "wb") as sink:
            writer = None
            for chunk in table_chunks(self.file, self.fmt):
                schema = pa.schema([(str(c), pa.string()) for c in chunk.columns])
                if writer is None:
                    writer = pa.ipc.new_stream(sink, schema, options=options)
                writer.write_table(pa.Table.from_pandas(chunk, schema, preserve_index=False))
                yield chunk
            if writer is not None:
                writer.close()

    def again(self) -> Iterator[pd.DataFrame]:
        """Passes 2 and 3 (and the keys' second look): the same chunks, from the spool."""
        if self.fmt != "csv":
            yield from table_chunks(self.file, self.fmt)
            return
        done = 0
        with pa.OSFile(str(self.path), "rb") as source:
            for batch in pa.ipc.open_stream(source):
                frame = batch.to_pandas().astype(object)
                frame.index = pd.RangeIndex(done + 1, done + 1 + len(frame))
                done += len(frame)
                yield frame


def _import(job: EmbeddingImport) -> EmbeddingSpace:
    name = space_name_check(job.name)
    with upload_path(job.file.name) as table, storage.work_folder("spool-") as folder:
        return _import_from(
            job, name, _Spool(table, folder, job.format.removeprefix(RECORDS_PREFIX))
        )


def _import_from(job: EmbeddingImport, name: str, spool: _Spool) -> EmbeddingSpace:
    options = job.options
    chunks = spool.again
    progress = ProgressWriter(job.pk, renew=True)
    numbers = NumberColumns()
    fit = _fitted(spool, options, progress, job.total_rows, numbers)
    spec = fit.spec()
    rows = fit.rows
    who = job.created_by or "a deleted user"
    with matrix_file(name) as stored:
        with open(stored.partial, "wb") as f:
            f.write(b"\0" * NPY_HEADER_BYTES)
            done = 0
            for chunk in chunks():
                matrix = _phi(spec, chunk)
                f.write(np.ascontiguousarray(matrix, dtype="<f4").tobytes())
                done += len(chunk)
                progress("embedding", done, rows)
            f.seek(0)
            f.write(npy_header((rows, len(spec["feature_names"]))))
        sha256 = stored.store()
        progress("storing", 0, rows)
        return _store(
            job=job,
            chunks=chunks,
            spec=spec,
            rows=rows,
            numbers=numbers if spool.fmt == "csv" else None,
            fields={
                "name": name,
                "kind": EmbeddingSpace.Kind.RECORDS,
                "dimension": len(spec["feature_names"]),
                "source": f"uploaded {job.original_name} by {who}; {rows} records; "
                f"φ: {len(spec['feature_names'])} features",
                "matrix": stored.name,
                "sha256": sha256,
                "item_count": rows,
                "feature_map": spec,
                "label_column": options.get("label_column", ""),
                "hidden_columns": options.get("hidden_columns", []),
                "owner": job.created_by,
            },
        )


def _fitted(spool: _Spool, options, progress, total, numbers: NumberColumns) -> FeatureMapFit:
    """Pass 1: every chunk read and checked, φ fitted, the keys checked, the columns of
    numbers found (``spaces.records.values``)."""
    try:
        fit = FeatureMapFit(**features(options))
    except ValueError as exc:
        raise ColumnChoiceError(str(exc)) from None
    keys = KeyCheck(options.get("key_column") or "")
    for chunk in spool.first():
        try:
            fit.update(chunk)
        except ValueError as exc:
            if isinstance(exc, InputFileError):
                raise
            raise ColumnChoiceError(str(exc)) from None
        keys.update(chunk)
        numbers.update(chunk)
        progress("checking", fit.rows, total)
    keys.finish(spool.again)
    if fit.rows == 0:
        raise InputFileError("the file has a header but no rows")
    return fit


def _phi(spec: dict, chunk) -> np.ndarray:
    try:
        return apply_feature_map(spec, chunk)
    except ValueError as exc:  # the file changed since pass 1
        raise InputFileError(str(exc)) from None


@transaction.atomic
def _store(*, job, chunks, spec, rows, numbers, fields) -> EmbeddingSpace:
    """Pass 3, in one transaction: the space's row, its items with their records (a CSV's
    columns of numbers stored as numbers: ``numbers``)."""
    space = space_row_create(**fields)
    keys = KeyCheck(job.options.get("key_column") or "")
    done = 0
    for chunk in chunks():
        typed = numbers.typed(chunk) if numbers is not None else chunk
        _items_insert(space.pk, keys.keys(chunk), typed)
        done += len(chunk)
    if done != rows:
        raise InputFileError(f"the file changed while it was imported ({done} rows, not {rows})")
    return space


def _items_insert(space_id: int, keys: list[str], chunk) -> None:
    """The items of a chunk: PostgreSQL's ``COPY`` (tens of thousands of rows a second), else
    ``executemany`` INSERTs of ``BATCH_SIZE`` rows. Each record's JSON comes from pandas (the
    rules of ``spaces.records.create.frame_records``, without a round trip through Python
    objects); ``bulk_create``'s per-object work made a million records take many minutes."""
    frame = chunk.copy()
    frame.columns = [str(c) for c in frame.columns]
    records = frame.to_json(
        orient="records", lines=True, date_format="iso", double_precision=15
    ).splitlines()
    rows = (
        (space_id, key, "", Item.Kind.RECORD.value, record, row - 1)
        for key, record, row in zip(keys, records, chunk.index.tolist(), strict=True)
    )
    quote = connection.ops.quote_name
    table = quote(Item._meta.db_table)
    columns = ", ".join(quote(c) for c in ("space_id", "key", "text", "kind", "payload", "row"))
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        sql = f"INSERT INTO {table} ({columns}) VALUES (%s, %s, %s, %s, %s, %s)"
        for batch in batched(rows, BATCH_SIZE):
            cursor.executemany(sql, batch)
