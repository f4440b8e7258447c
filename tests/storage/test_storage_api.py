"""The storage helpers (common/storage.py, common/matrices.py) on the local folder and on a real
S3-compatible bucket: rows read by ranged GETs equal the matrix's rows, a whole matrix comes
from a local copy kept by sha256 and pruned, files put and read back, the sweep and a space's
deletion remove what is in the bucket."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.utils import timezone

from common import matrices, storage
from spaces.deletion import space_delete
from spaces.sweep import _leftovers
from tests.annotation.factories import make_space, make_user
from tests.conftest import ROOT, subprocess_env
from tests.s3_store import s3_environment

pytestmark = pytest.mark.django_db


def test_rows_read_from_storage_equal_the_matrix_rows(media, settings):
    space = make_space(n_words=600, dimension=16)
    rows = [5, 599, 5, 0, 300, 301, 302, 17]
    got = space.vectors(rows)
    cache = settings.STORAGE_CACHE_DIR
    if media.kind == "s3":
        assert not cache.exists() or not list(cache.iterdir())  # ranged reads, no copy
    whole = np.asarray(space.load_matrix(), dtype=np.float64)
    assert got.dtype == np.float64
    assert np.array_equal(got, whole[rows])
    assert space.vectors([]).shape == (0, 16)
    if media.kind == "s3":
        assert [p.suffix for p in cache.iterdir()] == [".npy"]  # the whole one: a local copy


def test_many_scattered_rows_read_the_local_copy(s3_media, settings, monkeypatch):
    space = make_space(n_words=400, dimension=4)
    monkeypatch.setattr(matrices, "MAX_RUNS", 3)
    rows = np.arange(0, 400, 40)  # 10 runs
    got = space.vectors(rows)
    assert len(list(settings.STORAGE_CACHE_DIR.iterdir())) == 1
    assert np.array_equal(got, np.asarray(space.load_matrix(), dtype=np.float64)[rows])


def test_rows_out_of_range_are_refused(s3_media):
    space = make_space(n_words=10, dimension=4)
    with pytest.raises(IndexError):
        space.vectors([space.item_count])


def test_the_local_copies_are_pruned_to_their_budget(s3_media, settings):
    settings.STORAGE_CACHE_MB = 1
    first = make_space(name="first", n_words=9000, dimension=16)  # ≈ 0.58 MB each
    second = make_space(name="second", n_words=9000, dimension=16, seed=1)
    storage.cached_copy(first.matrix.name, first.sha256)
    kept = storage.cached_copy(second.matrix.name, second.sha256)
    assert [p.name for p in settings.STORAGE_CACHE_DIR.iterdir()] == [kept.name]
    assert np.array_equal(np.load(kept), second.load_matrix())


def test_files_are_put_replaced_read_and_removed(media):
    storage.store_bytes(b"one", "things/a/one.bin")
    storage.store_bytes(b"two!", "things/a/one.bin")  # the same name: replaced
    storage.store_bytes(b"x", "things/b/deeper/x.bin")
    assert storage.read_bytes("things/a/one.bin") == b"two!"
    assert storage.read_range("things/a/one.bin", 1, 3) == b"wo"
    with storage.readable_path("things/a/one.bin") as path:
        assert path.read_bytes() == b"two!"
        assert path.name == "one.bin"
    assert sorted(n for n, _ in storage.files_under("things")) == [
        "things/a/one.bin",
        "things/b/deeper/x.bin",
    ]
    storage.folder_remove("things/b")
    assert [n for n, _ in storage.files_under("things")] == ["things/a/one.bin"]
    with pytest.raises(FileNotFoundError):
        storage.read_range("things/none.bin", 0, 4)
    with pytest.raises(FileNotFoundError), storage.readable_path("things/none.bin"):
        pass
    assert (media.kind == "s3") == (media.local_files() == [])


def test_the_sweep_removes_old_leftovers_from_the_bucket(s3_media, settings, monkeypatch):
    space = make_space(name="kept")
    storage.store_bytes(b"x", "uploads/orphan0000/t.csv")
    storage.store_bytes(b"x", "spaces/stray.npy")
    later = timezone.now() + timedelta(hours=settings.UPLOAD_PENDING_HOURS + 1)
    monkeypatch.setattr("spaces.sweep.timezone.now", lambda: later)
    assert _leftovers() == 2
    assert s3_media.bucket_keys() == [space.matrix.name]


def test_deleting_a_space_deletes_its_matrix_in_the_bucket(
    s3_media, django_capture_on_commit_callbacks
):
    owner = make_user("owner", is_staff=True)
    space = make_space(name="gone")
    assert default_storage.exists(space.matrix.name)
    with django_capture_on_commit_callbacks(execute=True):
        space_delete(space=space, actor=owner)
    assert s3_media.bucket_keys() == []


def test_the_environment_alone_points_a_process_at_the_bucket(seaweed, tmp_path):
    """What a deployment's web and worker processes get: FAIRMETRIC_STORAGE=s3 and the AWS_*
    variables (tests/s3_store.py: s3_environment), nothing else."""
    bucket = seaweed.bucket()
    code = (
        "from django.core.files.storage import default_storage as d;"
        "from common import storage;"
        "storage.store_bytes(b'hello', 'probe/one.txt');"
        "print(type(d._wrapped).__name__, storage.is_local(), storage.read_bytes('probe/one.txt'))"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=subprocess_env(
            MEDIA_ROOT=str(tmp_path / "media"),
            VAR_DIR=str(tmp_path / "var"),
            **s3_environment(seaweed, bucket),
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].split() == ["S3Storage", "False", "b'hello'"]
    assert seaweed.keys(bucket) == ["probe/one.txt"]
    assert not (tmp_path / "media").exists()


def test_the_sweep_removes_old_work_files_of_this_machine(media, settings, monkeypatch):
    work = settings.STORAGE_WORK_DIR
    (work / "texts").mkdir(parents=True)
    (work / "texts" / "abc-1.f32").write_bytes(b"1234")
    (work / "upload-x").mkdir()
    (work / "upload-x" / "t.csv").write_bytes(b"x")
    assert _leftovers() == 0  # young: a worker may be using them
    later = timezone.now() + timedelta(hours=settings.UPLOAD_PENDING_HOURS + 1)
    monkeypatch.setattr("spaces.sweep.timezone.now", lambda: later)
    assert _leftovers() == 2
    assert sorted(p.name for p in work.rglob("*")) == ["texts"]
