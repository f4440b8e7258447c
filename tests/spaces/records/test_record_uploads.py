"""Record uploads through the pages: the head checked in the request, the columns chosen, the
import queued and run by the worker's body (``record_import_run``), bad input refused."""

from __future__ import annotations

import html
import io
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from numpy.testing import assert_allclose

from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.records import importing
from spaces.records import uploads as record_uploads
from spaces.records.featuremap import apply_feature_map

CSV = b"id,age,sex,hours,income\np1,39,Male,40,<=50K\np2, 50,Female,13,>50K\np3,38,Male,40,<=50K\n"
ANSWER = {
    "col_0": "excluded",
    "col_1": "numeric",
    "col_2": "categorical",
    "col_3": "categorical",
    "col_4": "excluded:hidden",
    "label_column": "income",
    "key_column": "id",
}


@pytest.fixture
def staff_client(client, db, media_root):
    staff = get_user_model().objects.create_user("boss", password="pw-123456", is_staff=True)
    client.force_login(staff)
    return client


@pytest.fixture
def queued(monkeypatch):
    """The imports queued (the worker's task is run by the tests, by its body)."""
    sent = []
    monkeypatch.setattr(record_uploads, "record_import_enqueue", sent.append)
    return sent


def post_file(client, content: bytes, filename: str, name: str = "people"):
    data = {"file": SimpleUploadedFile(filename, content), "name": name}
    return client.post(reverse("spaces:records-upload"), data)


def text(response) -> str:
    return html.unescape(response.content.decode())


def uploads_left(media: Path) -> list[Path]:
    return [p for p in media.glob("uploads/**/*") if p.is_file()]


def nothing_created(media: Path) -> bool:
    return (
        not EmbeddingSpace.objects.exists()
        and not EmbeddingImport.objects.exists()
        and not uploads_left(media)
    )


def choose(client, url: str, answer: dict, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return client.post(url, answer)


def test_records_upload_guesses_roles_queues_and_the_worker_creates_the_space(
    staff_client, media_root, queued, django_capture_on_commit_callbacks
):
    response = post_file(staff_client, CSV, "people.csv")
    job = EmbeddingImport.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("spaces:records-columns", args=[job.pk])
    assert job.created_by.username == "boss"
    page = staff_client.get(response["Location"])
    assert page.status_code == 200
    assert "3 records" in text(page)
    form = page.context["form"]
    guessed = {c: form[f"col_{i}"].initial for i, c in enumerate(form.columns)}
    # Every column is shown to annotators except the guessed label.
    assert guessed == {
        "id": "excluded",
        "age": "numeric",
        "sex": "categorical",
        "hours": "numeric",
        "income": "excluded:hidden",
    }
    assert form["label_column"].initial == "income"
    assert form["key_column"].initial == "id"
    assert 'name="col_4"' in text(page)
    # The admin treats hours as categorical; the POST only queues the import.
    done = choose(staff_client, response["Location"], ANSWER, django_capture_on_commit_callbacks)
    assert done.status_code == 302
    assert done["Location"] == reverse("spaces:import", args=[job.pk])
    assert queued == [job.pk]
    assert not EmbeddingSpace.objects.exists()
    job.refresh_from_db()
    assert (job.status, job.stage) == ("pending", "queued")
    assert job.options["roles"]["hours"] == "categorical"
    # The import page shows the queued import (no longer the columns form).
    assert staff_client.get(reverse("spaces:import", args=[job.pk])).status_code == 200
    assert importing.record_import_run(import_id=job.pk) == "done"
    space = EmbeddingSpace.objects.get(name="people")
    assert space.kind == "records"
    assert space.owner.username == "boss"
    assert space.label_column == "income"
    assert space.hidden_columns == ["income"]
    assert space.feature_map["feature_names"] == [
        "age",
        "sex=Female",
        "sex=Male",
        "hours=13",
        "hours=40",
    ]
    item = Item.objects.get(space=space, key="p2")
    assert item.payload == {
        "id": "p2",
        "age": "50",
        "sex": "Female",
        "hours": "13",
        "income": ">50K",
    }
    records = pd.DataFrame(list(space.items.order_by("row").values_list("payload", flat=True)))
    assert_allclose(apply_feature_map(space.feature_map, records), space.load_matrix(), atol=1e-6)
    job.refresh_from_db()
    assert (job.status, job.space, job.progress_rows, job.total_rows) == ("done", space, 3, 3)
    assert not uploads_left(media_root)
    # Done: the columns page now leads to the import's page; a second run changes nothing.
    assert staff_client.get(reverse("spaces:records-columns", args=[job.pk])).status_code == 302
    assert importing.record_import_run(import_id=job.pk) == "not run: done"


def test_the_columns_page_stores_which_columns_annotators_see(
    staff_client, media_root, queued, django_capture_on_commit_callbacks
):
    """Shown and in-φ are independent: the excluded id is shown, the numeric age hidden, and
    the label shown when the admin says so."""
    url = post_file(staff_client, CSV, "people.csv")["Location"]
    answer = ANSWER | {"col_1": "numeric:hidden", "col_3": "numeric", "col_4": "excluded"}
    assert choose(staff_client, url, answer, django_capture_on_commit_callbacks).status_code == 302
    job = EmbeddingImport.objects.get()
    assert importing.record_import_run(import_id=job.pk) == "done"
    space = EmbeddingSpace.objects.get(name="people")
    assert space.hidden_columns == ["age"]
    assert space.feature_map["feature_names"][0] == "age"  # hidden, still in φ
    job.refresh_from_db()
    assert job.options["hidden_columns"] == ["age"]
    item = Item.objects.get(space=space, key="p2")
    assert item.shown_payload == {"id": "p2", "sex": "Female", "hours": "13", "income": ">50K"}


def test_parquet_records(staff_client, media_root, queued, django_capture_on_commit_callbacks):
    buffer = io.BytesIO()
    pd.DataFrame({"age": [30, 40, 50], "job": ["a", "b", "a"]}).to_parquet(buffer)
    response = post_file(staff_client, buffer.getvalue(), "t.parquet")
    assert response.status_code == 302
    answer = {"col_0": "numeric", "col_1": "categorical", "label_column": "", "key_column": ""}
    done = choose(staff_client, response["Location"], answer, django_capture_on_commit_callbacks)
    assert done.status_code == 302
    assert importing.record_import_run(import_id=EmbeddingImport.objects.get().pk) == "done"
    space = EmbeddingSpace.objects.get(name="people")
    assert (space.item_count, space.dimension) == (3, 3)
    assert Item.objects.get(space=space, key="row 1").payload == {"age": 30, "job": "a"}


def test_a_table_read_in_many_chunks_gives_the_space_one_chunk_gives(
    staff_client, media_root, queued, django_capture_on_commit_callbacks, monkeypatch
):
    """φ fitted chunk by chunk (partial_fit, category sets) and the items written chunk by
    chunk equal the in-memory path (one chunk) — 2,500 rows in chunks of 100."""
    rows = [f"r{i},{20 + i % 50},{'ABC'[i % 3]},{i % 7}" for i in range(2500)]
    content = ("key,age,group,score\n" + "\n".join(rows) + "\n").encode()
    answer = {"col_0": "excluded", "col_1": "numeric", "col_2": "categorical"}
    answer |= {"col_3": "numeric", "label_column": "", "key_column": "key"}
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


@pytest.mark.parametrize(
    ("content", "filename", "message"),
    [
        (b"a,b\n1,2\n3,4,5\n", "t.csv", "line 3: 3 fields where the header has 2"),
        (b'a,b\n1,"2\n', "t.csv", "malformed CSV"),
        (b"", "t.csv", "The submitted file is empty."),
        (b"  \n", "t.csv", "the file is empty"),
        (b"a,b\n", "t.csv", "a header but no rows"),
        (b"a,b\n1,caf\xe9\n", "t.csv", "line 2: the file is not UTF-8 text"),
        (b"a,a\n1,2\n", "t.csv", "the column 'a' appears twice"),
        (b"not parquet", "t.parquet", "not a readable Parquet file"),
        (CSV, "t.xlsx", "cannot tell the format"),
    ],
)
def test_bad_record_files_are_form_errors_and_leave_nothing(
    staff_client, media_root, content, filename, message
):
    response = post_file(staff_client, content, filename)
    assert response.status_code == 400
    assert message in text(response)
    assert nothing_created(media_root)


def test_too_large_table_is_refused_unread(staff_client, media_root, settings):
    settings.MAX_TABLE_MB = 1
    big = b"a,b\n" + b"1,2\n" * 300_000  # 1.2 MB: read by the form, refused
    response = post_file(staff_client, big, "big.csv")
    assert response.status_code == 400
    assert "larger than 1 MB" in text(response)
    huge = big * 3  # 3.6 MB: refused by its Content-Length, before the body is read
    response = post_file(staff_client, huge, "big.csv")
    assert response.status_code == 413
    assert "larger than 1 MB" in text(response)
    assert nothing_created(media_root)


def test_bad_column_choices_keep_the_upload_and_create_nothing(staff_client, media_root, queued):
    url = post_file(staff_client, CSV, "people.csv")["Location"]
    cases = [
        ({"col_0": "numeric"}, "the column 'id' is the label or key: exclude it"),
        ({"col_0": "numeric", "key_column": ""}, "column 'id', row 1: 'p1' is not a number"),
        ({"col_1": "excluded", "col_2": "excluded", "col_3": "excluded"}, "at least one"),
        ({"col_4": "categorical"}, "the column 'income' is the label or key"),
        ({"label_column": "salary"}, "Select a valid choice"),
        ({"col_2": "ordinal"}, "Select a valid choice"),
    ]
    for change, message in cases:
        response = staff_client.post(url, ANSWER | change)
        assert response.status_code == 400, change
        assert message in text(response), change
    assert not EmbeddingSpace.objects.exists()
    job = EmbeddingImport.objects.get()
    assert (job.status, job.stage, queued) == ("pending", "columns", [])
    assert uploads_left(media_root)


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
    answer |= {"label_column": "", "key_column": "key"}
    assert choose(staff_client, url, answer, django_capture_on_commit_callbacks).status_code == 302
    job = EmbeddingImport.objects.get()
    assert importing.record_import_run(import_id=job.pk) == "columns"
    job.refresh_from_db()
    assert (job.status, job.stage) == ("pending", "columns")
    assert job.error == "column 'age', row 1500: 'unknown' is not a number"
    assert not EmbeddingSpace.objects.exists()
    assert uploads_left(media_root)
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
    answer = {"col_0": "excluded", "col_1": "numeric", "label_column": "", "key_column": "key"}
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
    answer |= {"label_column": "", "key_column": "key"}
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
    original = Item.objects.bulk_create

    def fail_after_the_first_batch(batch, *args, **kwargs):
        original(batch, *args, **kwargs)
        raise OSError(f"disk full at {media_root}/spaces/x.npy")

    monkeypatch.setattr(Item.objects, "bulk_create", fail_after_the_first_batch)
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


def test_the_columns_post_reads_only_the_head_of_the_table(
    staff_client, media_root, queued, django_capture_on_commit_callbacks, settings
):
    """A 20,000-row CSV: the POST parses the first 1,000 records (its head) and writes one
    UPDATE; the rows are the worker's."""
    rows = "\n".join(f"r{i},{i % 90},{'MF'[i % 2]}" for i in range(20_000))
    url = post_file(staff_client, f"key,age,sex\n{rows}\n".encode(), "t.csv")["Location"]
    answer = {"col_0": "excluded", "col_1": "numeric", "col_2": "categorical"}
    answer |= {"label_column": "", "key_column": "key"}
    with CaptureQueriesContext(connection) as queries:
        response = choose(staff_client, url, answer, django_capture_on_commit_callbacks)
    assert response.status_code == 302
    writes = [q["sql"] for q in queries if q["sql"].startswith(("INSERT", "UPDATE"))]
    assert len(writes) == 1
    assert "annotation_embeddingimport" in writes[0]
    assert not Item.objects.exists()


def test_a_table_at_the_column_limit_has_a_form_that_can_be_sent(
    staff_client, media_root, queued, django_capture_on_commit_callbacks, settings
):
    """500 columns (TABLE_MAX_COLUMNS) post 503 fields, within DATA_UPLOAD_MAX_NUMBER_FIELDS;
    two fields per column made 1,003 and the form could never be sent."""
    width = settings.TABLE_MAX_COLUMNS
    header = ",".join(f"c{i}" for i in range(width))
    rows = "\n".join(",".join(str((r * i) % 7) for i in range(width)) for r in range(1, 4))
    url = post_file(staff_client, f"{header}\n{rows}\n".encode(), "wide.csv")["Location"]
    page = staff_client.get(url)
    assert page.status_code == 200
    form = page.context["form"]
    answer = {name: field.initial or "" for name, field in form.fields.items()}
    answer |= {f"col_{i}": "numeric" for i in range(width)}
    answer[f"col_{width - 1}"] = "numeric:hidden"
    assert len(answer) + 1 <= settings.DATA_UPLOAD_MAX_NUMBER_FIELDS  # + the CSRF token
    body = "&".join(f"{k}={v}" for k, v in answer.items())
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            url, body + "&csrfmiddlewaretoken=x", content_type="application/x-www-form-urlencoded"
        )
    assert response.status_code == 302, text(response)[:500]
    job = EmbeddingImport.objects.get()
    assert importing.record_import_run(import_id=job.pk) == "done"
    space = EmbeddingSpace.objects.get()
    assert space.dimension == width
    assert space.hidden_columns == [f"c{width - 1}"]
    assert len(Item.objects.get(space=space, key="row 1").payload) == width
    wider = f"{header},one_more\n{rows.replace(chr(10), ',1' + chr(10))},1\n".encode()
    response = post_file(staff_client, wider, "wider.csv", name="wider")
    assert response.status_code == 400
    assert f"the file has {width + 1} columns; at most {width} (TABLE_MAX_COLUMNS)" in text(
        response
    )


def test_a_columns_page_whose_file_is_gone_says_so(staff_client, media_root):
    url = post_file(staff_client, CSV, "people.csv")["Location"]
    for path in uploads_left(media_root):
        path.unlink()
    response = staff_client.get(url)
    assert response.status_code == 400
    assert "the uploaded file is gone; upload it again" in text(response)


def test_a_parquet_bomb_is_refused_from_its_footer(staff_client, media_root):
    """The issue's bomb, built here in a few KB: 4,000,000 rows that compress to nothing. It was
    accepted, and the columns POST held a web thread ~8 minutes; its footer now refuses it."""
    table = pa.table({"a": pa.array([1] * 4_000_000, pa.int8()), "b": ["x"] * 4_000_000})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", row_group_size=4_000_000)
    assert len(buffer.getvalue()) < 64 * 1024
    response = post_file(staff_client, buffer.getvalue(), "bomb.parquet")
    assert response.status_code == 400
    assert "the file has 4,000,000 rows; at most 1,000,000 (TABLE_MAX_ROWS)" in text(response)
    assert nothing_created(media_root)


def test_a_parquet_binary_column_is_decoded_as_utf8_or_refused_at_upload(
    staff_client, media_root, queued, django_capture_on_commit_callbacks
):
    """Issue finding 4: a binary column with non-UTF-8 bytes was accepted and the columns page
    answered 500 (UnicodeDecodeError in guess_roles). Now binary is read as UTF-8 text, and a
    value that is not UTF-8 is refused at upload naming its column and row."""
    table = pa.table({"n": [1, 2], "b": pa.array([b"ok", b"\xff\xfe"], pa.binary())})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    response = post_file(staff_client, buffer.getvalue(), "bin.parquet")
    assert response.status_code == 400
    assert "row 2: the cell in column 'b' is not UTF-8 (byte 0xff at position 1)" in text(response)
    assert nothing_created(media_root)
    table = pa.table({"n": [1, 2], "b": pa.array([b"ok", "caf\u00e9".encode()], pa.binary())})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    url = post_file(staff_client, buffer.getvalue(), "bin.parquet")["Location"]
    assert staff_client.get(url).status_code == 200
    answer = {"col_0": "numeric", "col_1": "categorical", "label_column": "", "key_column": "b"}
    answer["col_1"] = "excluded"
    choose(staff_client, url, answer, django_capture_on_commit_callbacks)
    assert importing.record_import_run(import_id=EmbeddingImport.objects.get().pk) == "done"
    assert Item.objects.get(key="café").payload == {"n": 2, "b": "café"}


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("csv cell", "line 3: the cell in column 'b' contains a NUL character"),
        ("csv name", "the name of column 2 contains a NUL character"),
        ("parquet cell", "row 2: the cell in column 'b' contains a NUL character"),
        ("parquet name", "the name of column 2 contains a NUL character"),
    ],
)
def test_nul_in_a_record_file_is_a_form_error_naming_where(staff_client, media_root, kind, message):
    """Issue finding 3: NUL in a CSV cell, a Parquet string or a column name was a 500 on
    PostgreSQL (DataError); it is refused at upload, naming the line or row and the column."""
    if kind.startswith("csv"):
        content = b"a,b\x00c\n1,2\n" if kind == "csv name" else b"a,b\n1,x\n2,a\x00b\n"
        filename = "t.csv"
    else:
        name = "b\x00c" if kind == "parquet name" else "b"
        cells = ["x", "y"] if kind == "parquet name" else ["x", "a\x00b"]
        buffer = io.BytesIO()
        pq.write_table(pa.table({"a": [1, 2], name: cells}), buffer)
        content, filename = buffer.getvalue(), "t.parquet"
    response = post_file(staff_client, content, filename)
    assert response.status_code == 400
    assert message in text(response)
    assert nothing_created(media_root)


def test_parquet_errors_name_no_server_path(staff_client, media_root):
    response = post_file(staff_client, b"PAR1 not really parquet", "t.parquet")
    assert response.status_code == 400
    assert str(media_root) not in text(response)
    assert "/uploads/" not in text(response)
    assert "not a readable Parquet file" in text(response)
