"""The set-up pages: a new study and its form errors, the uploads (unknown keys, the gold
preview), who reads the set-up, archived studies listed apart; the Parquet exports."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import GoldPair, PairJudgment, Study
from annotation.setup import studies

from .test_setup import counts


def test_new_study_page_creates_a_study_and_shows_form_errors(space, staff, client_for):
    client = client_for(staff)
    bad = client.post(
        reverse("annotation:study-new"),
        {
            "name": "",
            "mode": "pairs",
            "space": space.pk,
            "pool": "all",
            "strategy": "random",
            "overlap": 0,
            "gold_rate": 2,
            "target_per_annotator": 5,
        },
    )
    assert bad.status_code == 400
    text = bad.content.decode()
    assert "This field is required" in text
    assert "between 0 and 1" in text
    assert Study.objects.count() == 0
    good = client.post(
        reverse("annotation:study-new"),
        {
            "name": "Team study",
            "mode": "pairs",
            "space": space.pk,
            "pool": "all",
            "strategy": "random",
            "overlap": 2,
            "gold_rate": 0.2,
            "target_per_annotator": 5,
            "instructions": "**bold**",
            "is_active": "on",
            "stop_at_target": "on",
        },
    )
    study = Study.objects.get(name="Team study")
    assert good.status_code == 302
    assert study.stop_at_target
    preview = client.post(
        reverse("annotation:markdown-preview"), {"text": "**b**<script>x</script>"}
    )
    assert preview.json()["html"] == "<p><strong>b</strong></p>"


def test_upload_pages_show_unknown_keys_and_write_nothing(study, study_admin, client_for):
    client = client_for(study_admin)
    before = counts()
    upload = SimpleUploadedFile("keys.csv", b"key\nw001\nmissing-one\n", content_type="text/csv")
    response = client.post(reverse("annotation:study-items", args=[study.pk]), {"file": upload})
    assert response.status_code == 400
    assert "1 unknown key(s)" in response.content.decode()
    assert "missing-one" in response.content.decode()
    binary = SimpleUploadedFile("keys.csv", b"\xff\xfe\x00bad", content_type="text/csv")
    response = client.post(reverse("annotation:study-items", args=[study.pk]), {"file": binary})
    assert response.status_code == 400
    assert "not UTF-8" in response.content.decode()
    assert counts() == before
    response = client.post(
        reverse("annotation:study-gold", args=[study.pk]), {"text": "w001,w002,comparable"}
    )
    assert response.status_code == 200
    assert "Preview: 1 pairs" in response.content.decode()
    assert counts() == before  # a preview writes nothing
    response = client.post(
        reverse("annotation:study-gold", args=[study.pk]),
        {"text": "w001,w002,comparable", "confirm": "1"},
    )
    assert response.status_code == 302
    assert GoldPair.objects.count() == 1


def test_reviewers_read_the_set_up_and_annotators_see_none(
    study, reviewer, annotator, outsider, client_for
):
    url = reverse("annotation:study-members", args=[study.pk])
    assert client_for(reviewer).get(url).status_code == 200
    assert client_for(reviewer).post(url, {"action": "add"}).status_code == 403
    assert client_for(annotator).get(url).status_code == 403
    assert client_for(outsider).get(url).status_code == 404


def test_parquet_exports_hold_the_same_rows_as_csv(study, reviewer, annotator, client_for, items):
    PairJudgment.objects.create(
        study=study, item_a=items[0], item_b=items[1], label="comparable", annotator=annotator
    )
    client = client_for(reviewer)
    response = client.get(reverse("api-export-judgments", args=[study.pk, "parquet"]))
    assert response.status_code == 200
    table = pq.read_table(io.BytesIO(b"".join(response.streaming_content)))
    assert table.num_rows == 1
    assert table.column("item_a_key").to_pylist() == ["w000"]
    groups = client.get(reverse("api-export-groups", args=[study.pk, "parquet"]))
    assert pq.read_table(io.BytesIO(b"".join(groups.streaming_content))).num_rows == 0


def test_archived_studies_are_listed_apart_for_their_admins(
    study, study_admin, annotator, client_for
):
    studies.study_archive(user=study_admin, study=study, archive=True)
    admin_list = client_for(study_admin).get(reverse("annotation:study-list")).content.decode()
    assert 'id="archived-studies"' in admin_list
    assert reverse("annotation:study-settings", args=[study.pk]) in admin_list
    annotator_list = client_for(annotator).get(reverse("annotation:study-list")).content.decode()
    assert study.name not in annotator_list


def test_the_gold_preview_keeps_the_files_key_order(study, study_admin, client_for):
    """Pairs are stored canonically (smaller item id first); the preview swapped the keys of
    a row written the other way round. It shows what the file said."""
    client = client_for(study_admin)
    response = client.post(
        reverse("annotation:study-gold", args=[study.pk]),
        {"text": "w007,w002,comparable\nw003,w009,incomparable"},
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "<td>2</td><td>w003</td><td>w009</td>" in page
    assert "<td>1</td><td>w007</td><td>w002</td>" in page
