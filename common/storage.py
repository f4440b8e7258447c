"""Media through Django's storage API: the local folder (``MEDIA_ROOT``) or an S3-compatible
bucket (django-storages' ``S3Storage``, chosen by ``FAIRMETRIC_STORAGE=s3``; settings in
``fairmetric_site/settings_storage.py``, docs/storage.md).

Every file of user data — uploads, embedding matrices, Sigma files, audit inputs, feedback
previews — is named relative to the media root and read or written here or through
``default_storage``; no code builds a path under ``MEDIA_ROOT`` itself. What a reader needs:

* :func:`readable_path` — a local file with the stored bytes for readers that need a path
  (pyarrow, gzip, the bounded readers): the file itself when media are local, else a copy
  streamed to a temporary file under ``STORAGE_WORK_DIR`` (never the whole file in memory),
  removed after the block;
* :func:`read_range`, :func:`range_reader` — bytes ``[start, stop)`` of a stored file: one
  ranged GET on S3 (the matrices' few-row reads, ``common/matrices.py``);
* :func:`cached_copy` — a stored file kept on local disk by its sha256 under
  ``STORAGE_CACHE_DIR`` (a purely local cache, pruned to ``STORAGE_CACHE_MB``): what a worker
  memory-maps to read a whole matrix many times;
* :func:`store_path` — a finished local work file put into storage under its name (local: an
  atomic rename; S3: a streamed, multipart upload);
* :func:`work_folder` — a temporary local folder for a worker's work files;
* :func:`folder_remove`, :func:`files_under` — an upload's folder removed, leftovers listed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from storages.utils import clean_name

CHUNK = 1 << 22  # 4 MiB: the unit of streamed copies


def media_folder() -> Path | None:
    """The local media folder when media are local files, else ``None`` (object storage)."""
    try:
        return Path(default_storage.path(""))
    except NotImplementedError:  # Django's Storage.path: a storage without local files (S3)
        return None


def is_local() -> bool:
    return media_folder() is not None


def _s3_object(name: str):
    """The boto3 object of a stored name (django-storages' own key rule: location + name)."""
    return default_storage.bucket.Object(default_storage._normalize_name(clean_name(name)))


def _work_dir() -> Path:
    folder = Path(settings.STORAGE_WORK_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def work_folder(prefix: str = "work-") -> Iterator[Path]:
    """A new local folder for work files (under ``STORAGE_WORK_DIR``), removed after the block."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=_work_dir()))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def work_prune(cutoff: float) -> int:
    """Remove this machine's work files and folders last changed before ``cutoff`` (a Unix
    time): what a killed worker left (the spaces sweep calls it); returns how many went."""
    folder = Path(settings.STORAGE_WORK_DIR)
    texts = folder / "texts"  # a folder of work files (spaces/texts/embedding.py: work_path)
    entries = [p for p in folder.iterdir() if p != texts] if folder.is_dir() else []
    entries += list(texts.iterdir()) if texts.is_dir() else []
    removed = 0
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.stat().st_mtime < cutoff:
                if entry.is_dir():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed += 1
    return removed


def download(name: str, target: Path) -> None:
    """Copy a stored file to the local ``target``, streamed (S3: s3transfer's ranged parts)."""
    local = media_folder()
    if local is not None:
        shutil.copyfile(local / name, target)
        return
    try:
        _s3_object(name).download_file(str(target))
    except Exception as exc:
        if _missing(exc):
            raise FileNotFoundError(f"no stored file {name}") from None
        raise


def _missing(exc: BaseException) -> bool:
    response = getattr(exc, "response", None) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    return code in {"404", "NoSuchKey", "NotFound"}


@contextlib.contextmanager
def readable_path(name: str) -> Iterator[Path]:
    """A local path with the bytes of the stored file ``name`` (keeping its file name, so that
    formats are recognised by suffix): the file itself when media are local, else a streamed
    copy removed after the block."""
    local = media_folder()
    if local is not None:
        if not (local / name).is_file():
            raise FileNotFoundError(f"no stored file {name}")
        yield local / name
        return
    with work_folder("read-") as folder:
        target = folder / Path(name).name
        download(name, target)
        yield target


def read_range(name: str, start: int, stop: int) -> bytes:
    """Bytes ``[start, stop)`` of a stored file (fewer at its end)."""
    return range_reader(name)(start, stop)


def range_reader(name: str):
    """``read(start, stop) -> bytes`` for one stored file, safe to call from several threads at
    once (S3: one client, made here in the caller's thread, shared: clients are thread-safe)."""
    local = media_folder()
    if local is not None:

        def read_local(start: int, stop: int) -> bytes:
            if stop <= start:
                return b""
            with open(local / name, "rb") as f:
                f.seek(start)
                return f.read(stop - start)

        return read_local
    client = default_storage.connection.meta.client
    bucket, key = default_storage.bucket_name, default_storage._normalize_name(clean_name(name))

    def read_s3(start: int, stop: int) -> bytes:
        if stop <= start:
            return b""
        try:
            body = client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{stop - 1}")
        except Exception as exc:
            if _missing(exc):
                raise FileNotFoundError(f"no stored file {name}") from None
            raise
        with contextlib.closing(body["Body"]) as stream:
            return stream.read()

    return read_s3


def read_bytes(name: str) -> bytes:
    """A small stored file's bytes (a Sigma, an audit's arrays)."""
    with default_storage.open(name, "rb") as f:
        return f.read()


def store_path(path: Path, name: str) -> str:
    """Put the finished local file ``path`` into storage under exactly ``name``, replacing any
    file of that name, and remove ``path``; returns ``name``. Local media: an atomic rename (the
    folder's entry made durable); S3: a streamed (multipart) upload, visible only when whole."""
    path = Path(path)
    local = media_folder()
    if local is not None:
        target = local / name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(path, target)
        except OSError:  # another file system (a separate volume): copy, then rename
            partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.part")
            shutil.copyfile(path, partial)
            os.replace(partial, target)
            path.unlink()
        folder = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
        return name
    with open(path, "rb") as f:  # _save: exactly this key (save() would pick a free name)
        default_storage._save(name, File(f, name=Path(name).name))
    path.unlink(missing_ok=True)
    return name


def store_bytes(data: bytes, name: str) -> str:
    """Small bytes stored under exactly ``name`` (through a work file: atomic when local)."""
    with work_folder("store-") as folder:
        path = folder / Path(name).name
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return store_path(path, name)


def files_under(folder: str) -> Iterator[tuple[str, datetime | None]]:
    """Every stored file under ``folder`` (recursively) with its modification time."""
    try:
        folders, files = default_storage.listdir(folder)
    except FileNotFoundError:
        return
    for file in files:
        name = f"{folder}/{file}"
        try:
            modified = default_storage.get_modified_time(name)
        except (FileNotFoundError, OSError):
            modified = None
        yield name, modified
    for sub in folders:
        yield from files_under(f"{folder}/{sub}")


def folder_remove(folder: str) -> None:
    """Delete a folder of media with everything in it (an upload's ``uploads/<random>``)."""
    local = media_folder()
    if local is not None:
        shutil.rmtree(local / folder, ignore_errors=True)
        return
    for name, _ in list(files_under(folder)):
        default_storage.delete(name)


def cached_copy(name: str, sha256: str) -> Path:
    """A local, read-only copy of a stored file by its sha256: the file itself when media are
    local; else a copy under ``STORAGE_CACHE_DIR`` downloaded (streamed) on first use. Losing
    the cache costs a download, never data; it is pruned to ``STORAGE_CACHE_MB``."""
    local = media_folder()
    if local is not None:
        return local / name
    folder = Path(settings.STORAGE_CACHE_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{sha256}{Path(name).suffix}"
    if target.exists():
        with contextlib.suppress(OSError):
            os.utime(target)  # recently used: pruned last
        return target
    partial = folder / f".{sha256}.{uuid.uuid4().hex[:8]}.part"
    try:
        download(name, partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    cache_prune(keep=target)
    return target


def cache_prune(*, keep: Path | None = None) -> int:
    """Remove the least recently used copies until the cache holds at most ``STORAGE_CACHE_MB``
    (never ``keep``); returns how many went."""
    folder = Path(settings.STORAGE_CACHE_DIR)
    if not folder.is_dir():
        return 0
    entries = []
    for entry in folder.iterdir():
        with contextlib.suppress(OSError):
            if entry.is_file() and not entry.name.startswith("."):
                stat = entry.stat()
                entries.append((stat.st_mtime, stat.st_size, entry))
    total = sum(size for _, size, _ in entries)
    limit = settings.STORAGE_CACHE_MB * 1024 * 1024
    removed = 0
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        if entry != keep:
            entry.unlink(missing_ok=True)
            total -= size
            removed += 1
    return removed
