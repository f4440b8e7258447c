"""The worker's side of a record upload (``record_import_run``): chunks, a choice the table
contradicts (back to the columns page), a bad file further down, an error while storing, a dead
worker's lease, a worker that keeps dying."""

from __future__ import annotations

import pytest
from django.urls import reverse
from numpy.testing import assert_allclose

from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.records import importing

from .uploading import (
    ANSWER,
    CSV,
    choose,
    post_file,
    text,
    uploads_left,
)


def test_a_value_beyond_the_first_rows_brings_the_upload_back_to_its_columns(
    staff_client, media_root, queued, django_capture_on_commit_callbacks, settings
):
    """The request checks the choice on the first rows; the worker finds row 1,500's text in
    the numeric column and hands the upload back, the file kept, the message on the page."""
    rows = [f"r{i},{i},{'AB'[i % 2]}" for i in range(1, 2001)]
    rows[1499] = "r1500,unknown,A"
    content = ("key,age,group\n" + "\n".join(rows) + "\n").encode()
    url = post_file(staff_client, content, "t.csv")["Location"]
    answer = {"col_0": "excluded", "col_1": "numeric", "col_2": "categorical"}
    answer |= {"label_column": " none", "key_column": "key"}
    assert choose(staff_client, url, answer, django_capture_on_commit_callbacks).status_code == 302
    job = EmbeddingImport.objects.get()
    assert importing.record_import_run(import_id=job.pk) == "columns"
    job.refresh_from_db()
    assert (job.status, job.stage) == ("pending", "columns")
    assert job.error == "column 'age', row 1500: 'unknown' is not a number"
    assert not EmbeddingSpace.objects.exists()
    assert uploads_left(media_root)
    status = staff_client.get(reverse("spaces:import-status", args=[job.pk])).json()
    assert status["columns_url"] == url  # the progress page goes back to the columns page
    page = staff_client.get(url)
    assert page.status_code == 200
    assert "The import stopped: column 'age', row 1500: 'unknown' is not a number" in text(page)
    # Chosen again (age excluded), the import runs.
    answer["col_1"] = "excluded"
    choose(staff_client, url, answer, django_capture_on_commit_callbacks)
    assert importing.record_import_run(import_id=job.pk) == "done"
    assert EmbeddingSpace.objects.get().item_count == 2000


def test_a_repeated_key_beyond_the_first_rows_names_both_rows(
    staff_client, media_root, queued, django_capture_on_commit_callbacks
):
    rows = [f"r{i},{i}" for i in range(1, 2001)]
    rows[1499] = "r7,1500"
    url = post_file(staff_client, ("key,age\n" + "\n".join(rows)).encode(), "t.csv")["Location"]
    answer = {"col_0": "excluded", "col_1": "numeric", "label_column": " none", "key_column": "key"}
    choose(staff_client, url, answer, django_capture_on_commit_callbacks)
    job = EmbeddingImport.objects.get()
    assert importing.record_import_run(import_id=job.pk) == "columns"
    job.refresh_from_db()
    assert job.error == "row 1500: the key 'r7' appears twice (first in row 7)"
    assert not EmbeddingSpace.objects.exists()


def test_a_bad_file_further_down_fails_the_import_and_removes_it(
    staff_client, media_root, queued, django_capture_on_commit_callbacks, settings
):
    """A NUL in row 3,000 of a CSV (beyond what the request reads) fails the import in the
    worker with its line and column; nothing is stored and the files go."""
    settings.PREFLIGHT_KB = 64
    rows = [f"r{i},{i},{'x' * 30}" for i in range(1, 5001)]
    rows[2999] = "r3000,3000,a\x00b"
    content = ("key,age,note\n" + "\n".join(rows) + "\n").encode()
    url = post_file(staff_client, content, "t.csv")["Location"]
    answer = {"col_0": "excluded", "col_1": "numeric", "col_2": "excluded"}
    answer |= {"label_column": " none", "key_column": "key"}
    choose(staff_client, url, answer, django_capture_on_commit_callbacks)
    job = EmbeddingImport.objects.get()
    assert importing.record_import_run(import_id=job.pk) == "failed"
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error == "line 3001: the cell in column 'note' contains a NUL character"
    assert not EmbeddingSpace.objects.exists()
    assert not Item.objects.exists()
    assert not uploads_left(media_root)
    assert not list(media_root.glob("spaces/*"))


def test_an_error_while_storing_leaves_no_space_no_item_no_matrix(
    staff_client, media_root, queued, django_capture_on_commit_callbacks, monkeypatch
):
    url = post_file(staff_client, CSV, "people.csv")["Location"]
    choose(staff_client, url, ANSWER, django_capture_on_commit_callbacks)
    job = EmbeddingImport.objects.get()
    original = importing._items_insert

    def fail_after_the_first_rows(*args):
        original(*args)
        assert Item.objects.count() == 3  # written, inside the transaction
        raise OSError(f"disk full at {media_root}/spaces/x.npy")

    monkeypatch.setattr(importing, "_items_insert", fail_after_the_first_rows)
    with pytest.raises(OSError):
        importing.record_import_run(import_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error == "OSError: disk full at x.npy"  # no server path in the message
    assert not EmbeddingSpace.objects.exists()
    assert not Item.objects.exists()
    assert not list(media_root.glob("spaces/*"))
    assert not uploads_left(media_root)


def test_a_dead_workers_import_is_taken_over_after_its_lease(
    staff_client, media_root, queued, django_capture_on_commit_callbacks
):
    url = post_file(staff_client, CSV, "people.csv")["Location"]
    choose(staff_client, url, ANSWER, django_capture_on_commit_callbacks)
    job = EmbeddingImport.objects.get()
    # A worker claimed it and died: within the lease another run is "busy", after it it runs.
    assert importing._claim(job.pk)
    assert importing.record_import_run(import_id=job.pk) == "busy"
    EmbeddingImport.objects.filter(pk=job.pk).update(started_at=job.created_at - importing.LEASE)
    assert importing.record_import_run(import_id=job.pk) == "done"
    job.refresh_from_db()
    assert job.attempts == 2
    assert EmbeddingSpace.objects.get().item_count == 3


def test_an_import_whose_worker_keeps_dying_fails_saying_so(
    staff_client, media_root, queued, django_capture_on_commit_callbacks
):
    url = post_file(staff_client, CSV, "people.csv")["Location"]
    choose(staff_client, url, ANSWER, django_capture_on_commit_callbacks)
    job = EmbeddingImport.objects.get()
    EmbeddingImport.objects.filter(pk=job.pk).update(attempts=importing.MAX_ATTEMPTS)
    assert importing.record_import_run(import_id=job.pk) == "failed"
    job.refresh_from_db()
    assert job.error == "the worker stopped 3 times while importing this table"
    assert not uploads_left(media_root)


def test_a_table_read_in_many_chunks_gives_the_space_one_chunk_gives(
    staff_client, media_root, queued, django_capture_on_commit_callbacks, monkeypatch
):
    """φ fitted chunk by chunk (partial_fit, category sets) and the items written chunk by
    chunk equal the in-memory path (one chunk) — 2,500 rows in chunks of 100."""
    rows = [f"r{i},{20 + i % 50},{'ABC'[i % 3]},{i % 7}" for i in range(2500)]
    content = ("key,age,group,score\n" + "\n".join(rows) + "\n").encode()
    answer = {"col_0": "excluded", "col_1": "numeric", "col_2": "categorical"}
    answer |= {"col_3": "numeric", "label_column": " none", "key_column": "key"}
    spaces = []
    for name, per_chunk in (("one", None), ("many", 100)):
        monkeypatch.setattr(importing, "table_chunks", _chunked(per_chunk))
        url = post_file(staff_client, content, "t.csv", name=name)["Location"]
        choose(staff_client, url, answer, django_capture_on_commit_callbacks)
        job = EmbeddingImport.objects.get(name=name)
        assert importing.record_import_run(import_id=job.pk) == "done"
        spaces.append(EmbeddingSpace.objects.get(name=name))
    one, many = spaces
    assert one.feature_map["feature_names"] == many.feature_map["feature_names"]
    for a, b in zip(one.feature_map["features"], many.feature_map["features"], strict=True):
        assert a.keys() == b.keys()
        if a["kind"] == "numeric":
            assert a["mean"] == pytest.approx(b["mean"], rel=1e-12)
            assert a["scale"] == pytest.approx(b["scale"], rel=1e-12)
    assert_allclose(one.load_matrix(), many.load_matrix(), atol=1e-6)
    keys = [list(s.items.order_by("row").values_list("key", "payload")) for s in spaces]
    assert keys[0] == keys[1]
    assert len(keys[0]) == 2500


READ_CHUNKS = importing.table_chunks


def _chunked(per_chunk):
    return lambda path, fmt: READ_CHUNKS(path, fmt, per_chunk)
