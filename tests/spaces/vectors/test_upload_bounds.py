"""Uploads are read with bounds (issue 18, item 4): a small ``.gz`` cannot make the web request
or the worker read without end, nor hold a huge line in memory; failed uploads leave nothing
behind, folders included."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.vectors.reader import EmbeddingReader
from spaces.vectors.uploads import embedding_import_run

from .test_uploads import glove_text, upload


@pytest.fixture
def media(media_root) -> Path:
    return media_root


@pytest.fixture
def staff_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("boss", password="pw", is_staff=True))
    return client


def nothing_left(media: Path) -> bool:
    folder = media / "uploads"
    return not folder.exists() or not any(folder.iterdir())


def test_a_gz_of_newlines_is_a_form_error_after_a_bounded_read(staff_client, media):
    bomb = gzip.compress(b"\n" * (64 << 20), compresslevel=9)  # 64 MiB of newlines in ~64 KB
    assert len(bomb) < 100_000
    response = upload(staff_client, bomb, filename="vectors.txt.gz")
    assert response.status_code == 400
    assert b"more than 1 MB of blank lines in a row" in response.content
    assert not EmbeddingImport.objects.exists()
    assert nothing_left(media)


def test_one_huge_line_is_a_form_error(staff_client, media, settings):
    settings.MAX_LINE_KB = 64
    bomb = gzip.compress(b"w " + b"1" * (8 << 20) + b"\n", compresslevel=9)
    response = upload(staff_client, bomb, filename="vectors.txt.gz")
    assert response.status_code == 400
    assert b"line 1: a line longer than 64 KB (MAX_LINE_KB)" in response.content
    assert nothing_left(media)


@pytest.mark.parametrize("suffix", [".txt.gz", ".bin"])
def test_a_huge_line_is_refused_in_bounded_memory(tmp_path, suffix):
    """The worker's read of a 64 MiB line (default MAX_LINE_KB = 1024) stays far below it."""
    path = tmp_path / f"line{suffix}"
    if suffix == ".bin":
        path.write_bytes(b"1 2\n" + b"k" * (64 << 20) + b" ")  # a binary key without end
    else:
        path.write_bytes(gzip.compress(b"w " + b"1 " * (32 << 20) + b"\n", compresslevel=1))
    tracemalloc.start()
    try:
        with pytest.raises(EmbeddingFormatError, match="longer than"):
            for _ in EmbeddingReader(path):
                pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak / 2**20:.1f} MiB"


def test_the_decompressed_size_is_bounded_in_the_worker_not_the_request(
    staff_client, media, settings
):
    settings.MAX_DECOMPRESSED_MB, settings.PREFLIGHT_KB = 1, 64
    text = glove_text(n=40_000, d=4)  # ~1.6 MB decompressed
    assert len(text) > 1 << 20
    response = upload(staff_client, gzip.compress(text), filename="vectors.txt.gz")
    assert response.status_code == 302  # the request read its 64 KB and queued the rest
    job = EmbeddingImport.objects.get()
    assert embedding_import_run(import_id=job.pk) == "failed"
    job.refresh_from_db()
    assert job.error == "the file decompresses to more than 1 MB (MAX_DECOMPRESSED_MB)"
    assert not EmbeddingSpace.objects.exists()
    assert nothing_left(media)


def test_a_file_within_the_bounds_imports(staff_client, media, settings):
    settings.PREFLIGHT_KB = 64
    text = glove_text(n=20_000, d=4)
    response = upload(staff_client, gzip.compress(text), filename="vectors.txt.gz")
    assert response.status_code == 302
    job = EmbeddingImport.objects.get()
    assert embedding_import_run(import_id=job.pk) == "done"
    assert EmbeddingSpace.objects.get().item_count == 20_000
    assert nothing_left(media)


def test_a_failed_upload_leaves_no_empty_folder(staff_client, media):
    response = upload(staff_client, b"a 1 2\nb 1\n", filename="vectors.txt")
    assert response.status_code == 400
    assert nothing_left(media)


def test_a_preflight_error_within_the_budget_is_still_a_form_error(staff_client, media):
    rows = np.arange(6).reshape(3, 2)
    bad = "\n".join(f"w{i} " + " ".join(map(str, r)) for i, r in enumerate(rows)) + "\nx 1\n"
    response = upload(staff_client, gzip.compress(bad.encode()), filename="v.txt.gz")
    assert response.status_code == 400
    assert b"line 4" in response.content
