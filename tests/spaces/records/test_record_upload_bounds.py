"""Record uploads bounded and guarded (issue 26): the Parquet row bomb refused from its footer,
a table at the column limit whose form can be sent, a Parquet binary column decoded as UTF-8 or
refused, NUL in cells and names refused naming where, no server path in messages."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.records import importing

from .uploading import (
    choose,
    nothing_created,
    post_file,
    text,
)


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
    answer = {
        "col_0": "numeric",
        "col_1": "categorical",
        "label_column": " none",
        "key_column": "b",
    }
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
    answer["label_column"] = "+none"  # no outcome among the columns (encoded: " none")
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


def test_a_first_record_longer_than_the_preflight_is_refused_saying_so(
    staff_client, media_root, settings
):
    """The request reads at most PREFLIGHT_KB of a CSV: a first record beyond it is named as
    such (not "a header but no rows")."""
    settings.PREFLIGHT_KB = 64
    header = ",".join(f"c{i}" for i in range(20))
    row = ",".join("x" * 5000 for _ in range(20))  # 100 KB, each cell within the limit
    response = post_file(staff_client, f"{header}\n{row}\n{row}\n".encode(), "t.csv")
    assert response.status_code == 400
    assert "the header and the first record do not fit in 64 KB (PREFLIGHT_KB)" in text(response)
    assert nothing_created(media_root)
