"""The audit API's contract for a CI job: POST → 201 {"id", "status"}, GET → status and figures,
violations.csv worst first; the same with a token and with a session; the schema documents it."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from learning.audits import run, services
from learning.models import ModelAudit

from .conftest import csv_upload, twin_scores

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    _, key = api_token_create(user=user, name="ci job")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def session_client(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr(services, "audit_enqueue", lambda audit_id: None)


@pytest.mark.parametrize("auth", [token_client, session_client], ids=["token", "session"])
def test_a_ci_job_posts_scores_polls_and_downloads_the_violations(twins, auth):
    client = auth(twins["users"]["reviewer"])
    study = twins["study"].pk
    url = reverse("api-audits", args=[study])
    body = {
        "predictions": csv_upload(twin_scores(twins["frame"], sex=True)),
        "k": "3",
        "name": "with sex",
    }
    response = client.post(url, body, format="multipart")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["status"] == "queued"
    audit_id = created["id"]
    detail = reverse("api-audit", args=[study, audit_id])
    queued = client.get(detail).json()
    assert queued["status"] == "queued"
    assert queued["violation_rate"] is None
    assert "violations_csv" not in queued["links"]
    early = client.get(reverse("api-audit-violations", args=[study, audit_id]))
    assert early.status_code == 409
    assert "queued" in early.json()["detail"]

    run.audit_run(audit_id=audit_id)  # the worker
    done = client.get(detail).json()
    assert done["status"] == "done"
    assert done["progress"] == 1.0
    assert 0.2 < done["violation_rate"] <= 1
    low, high = done["violation_rate_interval"]
    assert low <= done["violation_rate"] <= high
    assert done["decision_flip"] is not None
    assert done["summary"]["euclidean"]["violation_rate"]["estimate"] is not None
    assert done["version"]["id"] == twins["version"].pk

    response = client.get(done["links"]["violations_csv"])
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert list(rows[0])[:6] == ["rank", "key_a", "key_b", "distance", "score_a", "score_b"]
    assert len(rows) == done["violations"]
    ranks = [int(r["rank"]) for r in rows]
    assert ranks == sorted(ranks)  # worst first
    assert rows[0]["differing_fields"] == "sex"
    filtered = client.get(done["links"]["violations_csv"] + "?differs=job")
    assert b"".join(filtered.streaming_content).decode().count("\n") < len(rows) + 1
    by_gap = client.get(done["links"]["violations_csv"] + "?order=gap")
    gaps = [
        float(r["gap"])
        for r in csv.DictReader(io.StringIO(b"".join(by_gap.streaming_content).decode()))
    ]
    assert gaps == sorted(gaps, reverse=True)

    listed = client.get(url).json()
    assert [a["id"] for a in listed] == [audit_id]


def test_annotators_outsiders_and_anonymous_are_refused(twins):
    study = twins["study"].pk
    url = reverse("api-audits", args=[study])
    body = lambda: {"predictions": csv_upload(twin_scores(twins["frame"], sex=True))}  # noqa: E731
    annotator = token_client(twins["users"]["annotator"]).post(url, body(), format="multipart")
    assert annotator.status_code == 403
    assert "Only reviewers and admins" in annotator.json()["detail"]
    outsider = token_client(twins["users"]["outsider"]).post(url, body(), format="multipart")
    assert outsider.status_code == 404
    assert APIClient().post(url, body(), format="multipart").status_code == 401
    assert not ModelAudit.objects.exists()


def test_bad_files_are_400_with_the_reason_and_write_nothing(twins):
    client = token_client(twins["users"]["admin"])
    url = reverse("api-audits", args=[twins["study"].pk])
    response = client.post(
        url, {"predictions": csv_upload("key,score\nzzz,1\nyyy,2\n")}, format="multipart"
    )
    assert response.status_code == 400
    assert "2 unknown key(s)" in response.json()["detail"]
    assert "'zzz', 'yyy'" in response.json()["detail"]
    missing = client.post(url, {"k": "3"}, format="multipart")
    assert missing.status_code == 400
    assert "Upload the model's scores as predictions" in missing.json()["detail"]
    json_body = client.post(url, {"k": 3}, format="json")
    assert json_body.status_code == 415
    assert not ModelAudit.objects.exists()


def test_the_schema_documents_the_audit_api(admin_client):
    schema = admin_client.get("/api/schema/").content.decode()
    for path in (
        "/api/studies/{study_id}/audits/",
        "/api/studies/{study_id}/audits/{audit_id}/",
        "/api/studies/{study_id}/audits/{audit_id}/violations.csv",
    ):
        assert path in schema
    assert "multipart/form-data" in schema
    assert "predictions" in schema
    assert "violation_rate_interval" in schema
