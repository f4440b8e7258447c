"""Record uploads through the pages: the head checked in the request, the columns chosen, the
import queued and run by the worker's body (``record_import_run``), bad input refused."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from numpy.testing import assert_allclose

from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from spaces.records import importing
from spaces.records.featuremap import apply_feature_map

from .uploading import (
    ANSWER,
    CSV,
    choose,
    nothing_created,
    post_file,
    text,
    uploads_left,
)


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
        "age": 50,
        "sex": "Female",
        "hours": 13,
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
    assert item.shown_payload == {"id": "p2", "sex": "Female", "hours": 13, "income": ">50K"}


def test_parquet_records(staff_client, media_root, queued, django_capture_on_commit_callbacks):
    buffer = io.BytesIO()
    pd.DataFrame({"age": [30, 40, 50], "job": ["a", "b", "a"]}).to_parquet(buffer)
    response = post_file(staff_client, buffer.getvalue(), "t.parquet")
    assert response.status_code == 302
    answer = {"col_0": "numeric", "col_1": "categorical", "label_column": " none", "key_column": ""}
    done = choose(staff_client, response["Location"], answer, django_capture_on_commit_callbacks)
    assert done.status_code == 302
    assert importing.record_import_run(import_id=EmbeddingImport.objects.get().pk) == "done"
    space = EmbeddingSpace.objects.get(name="people")
    assert (space.item_count, space.dimension) == (3, 3)
    assert Item.objects.get(space=space, key="row 1").payload == {"age": 30, "job": "a"}


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


def test_the_columns_post_reads_only_the_head_of_the_table(
    staff_client, media_root, queued, django_capture_on_commit_callbacks, settings
):
    """A 20,000-row CSV: the POST parses the first 1,000 records (its head) and writes one
    UPDATE; the rows are the worker's."""
    rows = "\n".join(f"r{i},{i % 90},{'MF'[i % 2]}" for i in range(20_000))
    url = post_file(staff_client, f"key,age,sex\n{rows}\n".encode(), "t.csv")["Location"]
    answer = {"col_0": "excluded", "col_1": "numeric", "col_2": "categorical"}
    answer |= {"label_column": " none", "key_column": "key"}
    with CaptureQueriesContext(connection) as queries:
        response = choose(staff_client, url, answer, django_capture_on_commit_callbacks)
    assert response.status_code == 302
    writes = [q["sql"] for q in queries if q["sql"].startswith(("INSERT", "UPDATE"))]
    assert len(writes) == 1
    assert "annotation_embeddingimport" in writes[0]
    assert not Item.objects.exists()


def test_a_columns_page_whose_file_is_gone_says_so(staff_client, media_root):
    url = post_file(staff_client, CSV, "people.csv")["Location"]
    for path in uploads_left(media_root):
        path.unlink()
    response = staff_client.get(url)
    assert response.status_code == 400
    assert "the uploaded file is gone; upload it again" in text(response)
