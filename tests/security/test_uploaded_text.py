"""Text from uploaded files passes the guard form input passes (issue 26, finding 3).

NUL inside uploaded files was a 500 on PostgreSQL (``DataError: unsupported Unicode escape
sequence``, ``PostgreSQL text fields cannot contain NUL``): records CSV cells, Parquet strings
and column names, gold-pair, candidate-pair and item-key uploads. Every upload kind is refused
here with a message naming the line (or row) and what holds the NUL, and writes nothing. Run
this module on PostgreSQL (CI does): SQLite stores NUL, so only PostgreSQL showed the 500s.
"""

from __future__ import annotations

import html
import io
import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.models import CandidatePair, ComparableGroup, GoldPair, PairJudgment
from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.texts import sentence_model
from tests.celery_support import require


def page(response) -> str:
    return html.unescape(response.content.decode())


def counts() -> tuple:
    return tuple(
        model.objects.count()
        for model in (
            EmbeddingSpace,
            EmbeddingImport,
            Item,
            GoldPair,
            CandidatePair,
            PairJudgment,
            ComparableGroup,
        )
    )


@pytest.mark.parametrize(
    ("kind", "filename", "content", "message"),
    [
        ("items", "keys.csv", b"key\nw001\nw0\x0002\n", "Line 3: an item key contains a NUL"),
        ("items", "keys.jsonl", b'{"key": "w\\u0000"}\n', "Line 1: an item key contains a NUL"),
        ("items", "keys.jsonl", b'"w\\ud800"\n', "Line 1: an item key is not valid Unicode"),
        ("pairs", "pairs.csv", b"w001,w002\nw003,w\x00\n", "Line 2: an item key contains a NUL"),
        ("gold", "gold.csv", b"w001,w0\x0002,1\n", "Line 1: an item key contains a NUL"),
        ("gold", "gold.csv", b"w001,w002,1\nw001,w003,caf\xe9\n", "Line 2: the file is not UTF-8"),
    ],
)
def test_set_up_uploads_refuse_nul_naming_the_line(world, kind, filename, content, message):
    url = reverse(f"annotation:study-{kind}", args=[world.study_a.pk])
    before = counts()
    upload = SimpleUploadedFile(filename, content, content_type="text/csv")
    response = world.client("adm_a").post(url, {"file": upload, "confirm": "1"})
    assert response.status_code == 400
    assert message in page(response)
    assert counts() == before


def test_record_uploads_refuse_nul_in_cells_and_names(world, media_root):
    client = world.client("su")
    before = counts()
    for filename, content, message in [
        ("t.csv", b"a,b\n1,x\n2,a\x00b\n", "line 3: the cell in column 'b' contains a NUL"),
        ("t.csv", b"a,b\x00\n1,x\n", "the name of column 2 contains a NUL character"),
        ("t.parquet", _parquet({"a": [1, 2], "b": ["x", "y\x00"]}), "row 2: the cell in column"),
        ("t.parquet", _parquet({"a": [1], "b\x00": ["x"]}), "the name of column 2 contains"),
    ]:
        upload = SimpleUploadedFile(filename, content)
        response = client.post(reverse("spaces:records-upload"), {"file": upload, "name": "r"})
        assert response.status_code == 400, filename
        assert message in page(response), filename
    assert counts() == before


def _parquet(columns: dict) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("filename", "content", "message"),
    [
        ("t.csv", b"text\nhello\nhe\x00llo\n", "line 3: the cell in column 'text' contains a NUL"),
        ("t.jsonl", b'{"text": "a\\u0000b"}\n', "line 1: the cell in column 'text' contains a NUL"),
        ("t.jsonl", b'{"text": "\\udc00"}\n', "is not valid Unicode text (lone surrogate)"),
        ("t.jsonl", b'{"text": "a", "k\\u0000": 1}\n', "line 1: the field name 'k\\x00' contains"),
    ],
)
def test_text_uploads_refuse_nul_and_lone_surrogates(world, media_root, filename, content, message):
    require(sentence_model.available(), "the text extra (pip install -r requirements-text.txt)")
    before = counts()
    upload = SimpleUploadedFile(filename, content)
    body = {"file": upload, "name": "t", "text_column": "text", "key_column": ""}
    response = world.client("su").post(reverse("spaces:texts-upload"), body)
    assert response.status_code == 400
    assert message in page(response)
    assert counts() == before


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"file": ("v.txt", b"ok 1 2\nb\x00d 3 4\n")}, "line 2: the key contains a NUL character"),
        (
            {"file": ("v.csv", b"key,note\na,fine\nb,n\x00te\n"), "extra_file": ("m.npy", None)},
            "line 3: the field 'note' contains a NUL character",
        ),
        (
            {"file": ("m.npy", None), "extra_file": ("m.vocab", b"one\ntw\x00o\n")},
            "line 2: the key contains a NUL character",
        ),
    ],
)
def test_embedding_uploads_refuse_nul_in_keys_fields_and_vocabularies(
    world, media_root, files, message
):
    before = counts()
    body = {"name": "emb", "format": "auto"}
    for field, (filename, content) in files.items():
        if content is None:
            buffer = io.BytesIO()
            np.save(buffer, np.ones((2, 3), dtype=np.float32))
            content = buffer.getvalue()
        body[field] = SimpleUploadedFile(filename, content)
    response = world.client("su").post(reverse("spaces:upload"), body)
    assert response.status_code == 400, page(response)[-3000:]
    assert message in page(response)
    assert counts() == before


def test_the_feedback_import_refuses_nul_naming_the_line(world, tmp_path):
    before = counts()
    cases = [
        ("p.csv", "key_a,key_b,label\nw000,w001,1\nw002,w\x0003,0\n", "line 3: 'key_b' contains"),
        ("g.jsonl", json.dumps({"name": "g\x00", "keys": ["w000", "w001"]}) + "\n", "'name'"),
        ("g2.jsonl", json.dumps({"keys": ["w000", "w\ud800"]}) + "\n", "a key in 'keys' is not"),
    ]
    for name, text, message in cases:
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        with pytest.raises(CommandError, match=message.replace("(", r"\(")):
            call_command("import_feedback", str(path), "--study", str(world.study_a.pk))
    assert counts() == before
