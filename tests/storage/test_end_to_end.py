"""One team's work from upload to audit with media in a bucket of a real S3-compatible store
(SeaweedFS) — and the same run with the local folder: a table of records uploaded and imported,
an embedding file uploaded and imported, feedback previewed and imported, a refit to a version,
published, its Sigma downloaded over the API, a model audited from an uploaded score file.

With the bucket, every file is in it and none under ``MEDIA_ROOT``; locally, the same files are
under ``MEDIA_ROOT``. The workers' bodies run in this process, as the other upload tests do."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Membership, PairJudgment
from annotation.setup.imports.jobs import import_run
from learning.audits.run import audit_run
from learning.models import MetricVersion, ModelAudit
from learning.refits.service import refit_study
from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.records import importing
from spaces.records import uploads as record_uploads
from spaces.vectors.uploads import embedding_import_run
from tests.annotation.factories import make_study

pytestmark = pytest.mark.django_db(transaction=False)
JOBS = ["clerk", "nurse", "engineer"]


def people(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame(
        {
            "id": [f"p{i:03d}" for i in range(n)],
            "age": rng.integers(20, 65, n),
            "hours": rng.integers(10, 60, n),
            "job": rng.choice(JOBS, n),
            "income": rng.choice(["<=50K", ">50K"], n),
        }
    )


def pair_answers(frame: pd.DataFrame, n: int = 240) -> str:
    """Answers by a rule: comparable when the ages are within 8 years (the job ignored)."""
    rng = np.random.default_rng(4)
    lines = ["key_a,key_b,label"]
    for _ in range(n):
        a, b = rng.choice(len(frame), 2, replace=False)
        near = abs(int(frame.age[a]) - int(frame.age[b])) <= 8
        lines.append(f"{frame.id[a]},{frame.id[b]},{'comparable' if near else 'incomparable'}")
    return "\n".join(lines) + "\n"


def upload_records(client, frame: pd.DataFrame, media, capture) -> EmbeddingSpace:
    data = {
        "file": SimpleUploadedFile("people.csv", frame.to_csv(index=False).encode()),
        "name": "people",
    }
    response = client.post(reverse("spaces:records-upload"), data)
    assert response.status_code == 302, response.content[:500]
    job = EmbeddingImport.objects.get(name="people")
    assert any(name.startswith("uploads/") for name in media.stored())  # kept for the worker
    answer = {
        "col_0": "excluded",
        "col_1": "numeric",
        "col_2": "numeric",
        "col_3": "categorical",
        "col_4": "excluded:hidden",
        "label_column": "income",
        "key_column": "id",
    }
    with capture(execute=True):
        assert client.post(response["Location"], answer).status_code == 302
    assert importing.record_import_run(import_id=job.pk) == "done"
    return EmbeddingSpace.objects.get(name="people")


def upload_words(client) -> EmbeddingSpace:
    rng = np.random.default_rng(5)
    text = "".join(
        f"w{i} " + " ".join(f"{v:.4f}" for v in rng.normal(size=4)) + "\n" for i in range(30)
    )
    data = {
        "file": SimpleUploadedFile("words.txt", text.encode()),
        "name": "words",
        "format": "auto",
    }
    response = client.post(reverse("spaces:upload"), data)
    assert response.status_code == 302, response.content[:500]
    job = EmbeddingImport.objects.get(name="words")
    assert embedding_import_run(import_id=job.pk) == "done"
    return EmbeddingSpace.objects.get(name="words")


def test_upload_to_audit_keeps_every_file_where_media_live(
    media, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setattr(record_uploads, "record_import_enqueue", lambda pk: None)
    staff = get_user_model().objects.create_user("boss", password="pw-123456", is_staff=True)
    client = APIClient()
    client.force_login(staff)
    frame = people()

    space = upload_records(client, frame, media, django_capture_on_commit_callbacks)
    words = upload_words(client)
    assert space.item_count == 60
    assert words.item_count == 30
    # A few rows (ranged reads from the bucket) equal the same rows of the whole matrix.
    rows = [59, 0, 7, 7, 31]
    assert np.array_equal(space.vectors(rows), np.asarray(space.load_matrix())[rows])

    study = make_study(space=space, name="People")
    Membership.objects.create(user=staff, study=study, role=Membership.Role.ADMIN)
    page = reverse("annotation:study-import", args=[study.pk])
    csv = SimpleUploadedFile("answers.csv", pair_answers(frame).encode())
    preview = client.post(page, {"file": csv, "kind": "auto", "fmt": "auto"})
    assert preview.status_code == 200
    assert any(name.startswith("feedback-previews/") for name in media.stored())
    token = client.session["feedback-import"]["token"]
    assert client.post(page, {"confirm": "1", "token": token}).status_code == 302
    pending = study.feedback_imports.get()
    assert import_run(import_id=pending.pk) == "done"
    assert PairJudgment.objects.filter(study=study).count() == 240

    refit_study(study_id=study.pk)
    version = MetricVersion.objects.filter(study=study, status="ready").order_by("-pk").first()
    assert version is not None, list(MetricVersion.objects.values("method", "status", "error"))
    published = client.post(
        reverse("api-version-publish", args=[version.pk]),
        {"reason": "the storage test publishes whatever it fits"},
        format="json",
    )
    assert published.status_code == 200, published.content[:500]
    sigma = client.get(reverse("api-published-sigma", args=[study.pk, version.method, "npy"]))
    assert sigma.status_code == 200
    body = b"".join(sigma.streaming_content) if sigma.streaming else sigma.content
    assert hashlib.sha256(body).hexdigest() == version.sigma_sha256
    assert np.load(io.BytesIO(body)).shape == (version.dimension, version.dimension)

    scores = pd.DataFrame({"key": frame.id, "score": (frame.age - 40) / 20})
    audit = client.post(
        reverse("api-audits", args=[study.pk]),
        {"predictions": SimpleUploadedFile("scores.csv", scores.to_csv(index=False).encode())},
        format="multipart",
    )
    assert audit.status_code == 201, audit.content[:500]
    assert audit_run(audit_id=audit.json()["id"]) == "done"
    assert ModelAudit.objects.get().status == "done"

    stored = media.stored()
    expected = [
        space.matrix.name,
        words.matrix.name,
        version.sigma.name,
        ModelAudit.objects.get().predictions.name,
    ]
    assert set(expected) <= set(stored), (expected, stored)
    # the metric's uncertainty: the version's bootstrap refits kept beside its Sigma
    assert ModelAudit.objects.get().uncertainty["status"] == "done"
    side = version.sigma.name.removesuffix(".npy")
    assert {side + ".bootstrap.npy", side + ".bootstrap.json"} <= set(stored), stored
    assert not [n for n in stored if n.startswith(("uploads/", "feedback-previews/"))]
    if media.kind == "s3":
        assert media.local_files() == []  # nothing under MEDIA_ROOT
    else:
        assert media.bucket_keys() == []
