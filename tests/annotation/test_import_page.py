"""The study's import page: a file of judgments or groups previewed (counts, first rows, the
first error with its line), stored by the worker on confirmation through the command's parser,
nothing written before or on error (annotation/setup/import_views.py,
annotation/setup/imports/jobs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.models import ComparableGroup, FeedbackImport, PairJudgment, Source
from annotation.setup.import_views import PREVIEW_DIR
from annotation.setup.imports.jobs import import_run


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(study) -> str:
    return reverse("annotation:study-import", args=[study.pk])


def upload(name: str, content: str | bytes, **fields) -> dict:
    data = content.encode() if isinstance(content, str) else content
    return {"file": SimpleUploadedFile(name, data), "kind": "auto", "fmt": "auto", **fields}


def stashed(settings) -> list[Path]:
    folder = Path(settings.MEDIA_ROOT) / PREVIEW_DIR
    return sorted(folder.glob("*.upload")) if folder.exists() else []


def worker_runs() -> list[str]:
    """What the worker does with the queued imports (the task's body, in this process)."""
    queued = FeedbackImport.objects.filter(status=FeedbackImport.Status.PENDING).order_by("pk")
    return [import_run(import_id=pk) for pk in queued.values_list("pk", flat=True)]


PAIRS = "key_a,key_b,label\nw001,w000,comparable\nw002,w003,0\nw004,w005,unsure\nw001,w000,no\n"


def test_pairs_are_previewed_then_stored_on_confirmation(study, study_admin, settings):
    client = client_of(study_admin)
    response = client.post(url(study), upload("pilot.csv", PAIRS, provenance="pilot 2024"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "4 pair judgments" in html
    assert "1 comparable, 2 incomparable, 1 unsure" in html
    assert "w004" in html  # the first rows, with their lines
    assert not PairJudgment.objects.exists()  # a preview writes nothing
    assert len(stashed(settings)) == 1
    token = client.session["feedback-import"]["token"]

    done = client.post(url(study), {"confirm": "1", "token": token})
    assert done.status_code == 302  # answered at once: the worker stores it
    stored = PairJudgment.objects.filter(study=study)
    assert not stored.exists()
    assert "is queued" in client.get(done.url).content.decode()
    assert worker_runs() == ["done"]
    assert stored.count() == 4
    assert set(stored.values_list("source", "provenance")) == {(Source.IMPORTED, "pilot 2024")}
    assert sorted(stored.values_list("label", flat=True)) == [
        "comparable",
        "incomparable",
        "incomparable",
        "unsure",
    ]
    assert stashed(settings) == []
    assert "4 pair judgments; a refit is queued" in client.get(done.url).content.decode()
    again = client.post(url(study), {"confirm": "1", "token": token})  # no second import
    assert again.status_code == 400  # (the session forgot the preview)
    assert worker_runs() == []
    assert stored.count() == 4


def test_groups_from_json_lines(study, study_admin):
    client = client_of(study_admin)
    lines = "".join(
        json.dumps(r) + "\n"
        for r in [
            {"name": "E names", "keys": ["Emily", "Emma"]},
            {"keys": ["w001", "w002", "w003"]},
        ]
    )
    html = client.post(url(study), upload("seed.jsonl", lines)).content.decode()
    assert "2 groups" in html
    assert "5 members" in html
    token = client.session["feedback-import"]["token"]
    client.post(url(study), {"confirm": "1", "token": token})
    assert worker_runs() == ["done"]
    names = sorted(ComparableGroup.objects.filter(study=study).values_list("name", flat=True))
    assert names == ["E names", "imported group 2"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "bad.csv",
            "key_a,key_b,label\nw001,w000,comparable\nw001,nobody,comparable\n",
            "Line 3: unknown key 'nobody'",
        ),
        ("bad.csv", "key_a,key_b,label\nw001,w000,maybe\n", "Line 2: unknown label 'maybe'"),
        ("bad.csv", b"key_a,key_b,label\nw001,w\xff,comparable\n", "Line 2: not valid UTF-8"),
        ("empty.csv", "key_a,key_b,label\n\n", "it is empty"),
        ("notes.txt", "key_a,key_b,label\n", "cannot tell the format of notes.txt"),
        (
            "bad.jsonl",
            '{"keys": ["w001"]}\n',
            "Line 1: group 'imported group 1' has fewer than two",
        ),
    ],
)
def test_a_bad_file_names_its_line_and_stores_nothing(
    study, study_admin, settings, name, content, message
):
    response = client_of(study_admin).post(url(study), upload(name, content))
    assert response.status_code == 400
    html = response.content.decode().replace("&#x27;", "'")
    assert message in html
    assert "Nothing was stored" in html
    assert not PairJudgment.objects.exists()
    assert not ComparableGroup.objects.exists()
    assert stashed(settings) == []


def test_a_file_that_went_bad_since_its_preview_stores_nothing(study, study_admin):
    client = client_of(study_admin)
    content = "group,key\nnames,Emily\nnames,Emma\nwords,w001\nwords,w002\n"
    client.post(url(study), upload("groups.csv", content))
    ComparableGroup.objects.create(study=study, name="words")  # taken meanwhile
    token = client.session["feedback-import"]["token"]
    assert client.post(url(study), {"confirm": "1", "token": token}).status_code == 302
    assert worker_runs() == ["failed"]  # read and checked again by the worker
    page = client.get(url(study)).content.decode().replace("&#x27;", "'")
    assert "line 4: the study already has a group named 'words'; nothing was stored" in page
    assert list(ComparableGroup.objects.values_list("name", flat=True)) == ["words"]


def test_only_the_study_admins_import(study, reviewer, annotator, study_admin):
    assert client_of(reviewer).get(url(study)).status_code == 200  # reviewers read set-up pages
    assert client_of(reviewer).post(url(study), upload("p.csv", PAIRS)).status_code == 403
    assert client_of(annotator).get(url(study)).status_code == 403
    forged = client_of(study_admin).post(url(study), {"confirm": "1", "token": "../../etc"})
    assert forged.status_code == 400
    assert not PairJudgment.objects.exists()
