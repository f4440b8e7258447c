"""Export API: Sigma round-trip in three formats, ETag/304, tokens, streamed judgments/groups."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.tokens import api_token_create, api_token_revoke
from annotation.models import ComparableGroup, Label, PairJudgment, Source
from annotation.review import services as review
from learning.versions.sigmas import sigma_of
from spaces.models import Item

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer_token(users) -> str:
    _, key = api_token_create(user=users["reviewer"], name="training job")
    return key


def bearer(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def published_url(study, method="face", fmt="npy") -> str:
    return reverse("api-published-sigma", args=[study.pk, method, fmt])


def test_published_sigma_npy_round_trip(study, versions, reviewer_token):
    published = versions[0]
    response = bearer(reviewer_token).get(published_url(study))
    assert response.status_code == 200
    body = b"".join(response) if response.streaming else response.content
    assert hashlib.sha256(body).hexdigest() == published.sigma_sha256
    assert response["ETag"] == f'"{published.sigma_sha256}"'
    assert response["X-Metric-Version"] == str(published.pk)
    downloaded = np.load(io.BytesIO(body), allow_pickle=False)
    stored = sigma_of(published)
    assert downloaded.shape == (published.dimension, published.dimension)
    np.testing.assert_array_equal(downloaded, stored)
    np.testing.assert_allclose(downloaded, downloaded.T)
    assert np.linalg.eigvalsh(downloaded).min() > -1e-10  # PSD


@pytest.mark.parametrize("fmt", ["npy", "json", "csv"])
def test_version_sigma_formats_equal_the_stored_matrix(versions, reviewer_token, fmt):
    version = versions[2]  # EXPLORE: a dense PSD matrix with no exactly representable entries
    response = bearer(reviewer_token).get(reverse("api-version-sigma", args=[version.pk, fmt]))
    assert response.status_code == 200
    if fmt == "npy":
        downloaded = np.load(io.BytesIO(response.content))
    elif fmt == "json":
        payload = json.loads(response.content)
        assert payload["sha256"] == version.sigma_sha256
        assert payload["dimension"] == version.dimension
        downloaded = np.array(payload["sigma"])
    else:
        downloaded = np.loadtxt(io.StringIO(response.content.decode()), delimiter=",")
    np.testing.assert_array_equal(downloaded, sigma_of(version))  # exact, not approximate


def test_etag_if_none_match_gives_304_until_the_published_version_changes(
    study, versions, reviewer_token
):
    client = bearer(reviewer_token)
    first = client.get(published_url(study))
    etag = first["ETag"]
    again = client.get(published_url(study), HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    weak_list = client.get(published_url(study), HTTP_IF_NONE_MATCH=f'"other", W/{etag}')
    assert weak_list.status_code == 304
    # Publishing another version changes the ETag, so the poller downloads again.
    old, new = versions[0], versions[1]
    old.is_published = False
    old.save(update_fields=["is_published"])
    new.is_published = True
    new.save(update_fields=["is_published"])
    changed = client.get(published_url(study), HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200
    assert changed["ETag"] == f'"{new.sigma_sha256}"'


def test_version_metadata_describes_the_fit(study, space, versions, reviewer_token):
    version = versions[1]
    response = bearer(reviewer_token).get(reverse("api-version", args=[version.pk]))
    assert response.status_code == 200
    data = response.json()
    assert data["method"] == "face"
    assert data["parameters"] == {"n_components": 1}
    assert data["dimension"] == 5
    assert data["embedding_space"] == {
        "name": space.name,
        "kind": "vectors",
        "sha256": space.sha256,
        "dimension": 5,
        "item_count": 60,
    }
    assert data["judgment_watermark"] == 20
    assert data["sigma_sha256"] == version.sigma_sha256
    assert data["status"] == "ready"
    assert data["is_published"] is False
    assert data["created_at"]
    assert data["links"]["sigma_npy"].endswith(f"/api/versions/{version.pk}/sigma.npy")
    published = bearer(reviewer_token).get(reverse("api-published", args=[study.pk, "face"]))
    assert published.json()["id"] == versions[0].pk


def test_missing_published_unknown_method_and_format_are_404(study, versions, reviewer_token):
    client = bearer(reviewer_token)
    assert client.get(published_url(study, method="explore")).status_code == 404
    assert client.get(published_url(study, method="pca")).status_code == 404
    assert client.get(published_url(study, fmt="pickle")).status_code == 404
    failed = versions[1]
    failed.status = "failed"
    failed.save(update_fields=["status"])
    assert client.get(reverse("api-version-sigma", args=[failed.pk, "npy"])).status_code == 404


def test_annotators_cannot_export_and_anonymous_must_authenticate(study, versions, users):
    _, annotator_key = api_token_create(user=users["annotator"], name="mine")
    assert bearer(annotator_key).get(published_url(study)).status_code == 403
    anonymous = APIClient().get(published_url(study))
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"].startswith("Bearer")
    assert bearer("fm_not-a-real-token").get(published_url(study)).status_code == 401


def test_revoked_token_stops_working(study, versions, users):
    token, key = api_token_create(user=users["reviewer"], name="temp")
    assert bearer(key).get(published_url(study)).status_code == 200
    api_token_revoke(user=users["reviewer"], token_id=token.pk)
    assert bearer(key).get(published_url(study)).status_code == 401


def test_token_page_creates_shows_once_and_revokes(client, users):
    client.force_login(users["reviewer"])
    created = client.post(reverse("accounts:tokens"), {"name": "notebook"})
    assert created.status_code == 302  # POST–redirect–GET
    assert created["Location"] == reverse("accounts:tokens")
    page = client.get(reverse("accounts:tokens"))
    key = page.context["new_key"]
    assert key.startswith("fm_")
    assert key in page.content.decode()
    stored = ApiToken.objects.get(user=users["reviewer"])
    assert stored.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in json.dumps(list(ApiToken.objects.values_list("name", "prefix", "key_hash")))
    listing = client.get(reverse("accounts:tokens")).content.decode()
    assert "notebook" in listing
    assert key not in listing  # shown once only
    response = client.post(reverse("accounts:token-revoke", args=[stored.pk]))
    assert response.status_code == 302
    stored.refresh_from_db()
    assert stored.revoked_at is not None
    assert client.post(reverse("accounts:tokens"), {"name": "  "}).status_code == 400


def test_a_reload_after_creating_makes_no_second_token(client, users):
    client.force_login(users["reviewer"])
    client.post(reverse("accounts:tokens"), {"name": "notebook"})
    first = client.get(reverse("accounts:tokens"))
    assert first.context["new_key"].startswith("fm_")
    again = client.get(reverse("accounts:tokens"))  # what a reload of the redirected page does
    assert "new_key" not in again.context
    assert ApiToken.objects.filter(user=users["reviewer"]).count() == 1


def test_only_people_who_may_export_see_and_create_tokens(client, users):
    client.force_login(users["annotator"])
    home = client.get(reverse("home")).content.decode()
    assert reverse("accounts:tokens") not in home
    page = client.get(reverse("accounts:tokens"))
    assert page.status_code == 200  # existing tokens can still be listed and revoked
    assert 'name="name"' not in page.content.decode()
    assert client.post(reverse("accounts:tokens"), {"name": "job"}).status_code == 403
    assert not ApiToken.objects.filter(user=users["annotator"]).exists()
    client.force_login(users["reviewer"])
    assert reverse("accounts:tokens") in client.get(reverse("home")).content.decode()


def test_a_user_cannot_revoke_someone_elses_token(client, users):
    token, _ = api_token_create(user=users["reviewer"], name="theirs")
    client.force_login(users["admin"])
    assert client.post(reverse("accounts:token-revoke", args=[token.pk])).status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


@pytest.fixture
def judgments(study, users):
    items = list(Item.objects.filter(space=study.space).order_by("row")[:6])
    rows = []
    for i, (a, b) in enumerate([(0, 1), (1, 2), (2, 3), (3, 4)]):
        for who in ["annotator", "reviewer"]:
            rows.append(
                PairJudgment(
                    study=study,
                    item_a=items[a],
                    item_b=items[b],
                    annotator=users[who],
                    label=Label.COMPARABLE if i % 2 else Label.INCOMPARABLE,
                    elapsed_ms=1500 + i,
                )
            )
    rows.append(
        PairJudgment(
            study=study,
            item_a=items[4],
            item_b=items[5],
            label=Label.COMPARABLE,
            source=Source.IMPORTED,
            provenance="seed file, line 7",
        )
    )
    PairJudgment.objects.bulk_create(rows)
    group = ComparableGroup.objects.create(
        study=study, name="g, with comma", created_by=users["annotator"]
    )
    group.members.set(items[:3])
    ComparableGroup.objects.create(study=study, name="empty", provenance="import")
    return rows


def streamed(response) -> str:
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def test_judgments_stream_as_csv_and_jsonl(client, study, users, judgments):
    client.force_login(users["reviewer"])
    text = streamed(client.get(reverse("api-export-judgments", args=[study.pk, "csv"])))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 9
    assert rows[0]["annotator"] == "ann"
    assert rows[0]["item_a_key"] == "w0"
    assert rows[0]["created_at"]
    assert rows[-1]["source"] == "imported"
    assert rows[-1]["provenance"] == "seed file, line 7"
    assert rows[-1]["annotator_id"] == ""
    lines = streamed(client.get(reverse("api-export-judgments", args=[study.pk, "jsonl"])))
    records = [json.loads(line) for line in lines.splitlines()]
    assert [r["id"] for r in records] == sorted(PairJudgment.objects.values_list("id", flat=True))
    assert records[0]["elapsed_ms"] == 1500
    assert records[0]["annotator_id"] == users["annotator"].pk


def test_groups_stream_as_csv_and_jsonl(client, study, users, judgments):
    client.force_login(users["admin"])
    records = [
        json.loads(line)
        for line in streamed(
            client.get(reverse("api-export-groups", args=[study.pk, "jsonl"]))
        ).splitlines()
    ]
    assert [r["name"] for r in records] == ["g, with comma", "empty"]
    assert [m["item_key"] for m in records[0]["members"]] == ["w0", "w1", "w2"]
    assert records[0]["created_by"] == "ann"
    assert records[1]["members"] == []
    rows = list(
        csv.DictReader(
            io.StringIO(streamed(client.get(reverse("api-export-groups", args=[study.pk, "csv"]))))
        )
    )
    assert [(r["name"], r["item_key"]) for r in rows] == [
        ("g, with comma", "w0"),
        ("g, with comma", "w1"),
        ("g, with comma", "w2"),
        ("empty", ""),
    ]


def test_judgment_export_queries_do_not_grow_with_rows(
    client, study, users, judgments, django_assert_max_num_queries
):
    client.force_login(users["reviewer"])
    with django_assert_max_num_queries(8):
        streamed(client.get(reverse("api-export-judgments", args=[study.pk, "jsonl"])))
    with django_assert_max_num_queries(10):
        streamed(client.get(reverse("api-export-groups", args=[study.pk, "jsonl"])))


def test_annotators_cannot_export_judgments(client, study, users, judgments):
    client.force_login(users["annotator"])
    assert client.get(reverse("api-export-judgments", args=[study.pk, "csv"])).status_code == 403
    assert client.get(reverse("api-export-groups", args=[study.pk, "csv"])).status_code == 403


def test_a_cached_token_stops_working_at_once_when_revoked_or_its_user_is_deactivated(
    db, media_root, settings, redis_url
):
    """The token's user is cached (accounts/tokens.py); revoking and deactivating forget it."""
    import uuid as _uuid

    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    settings.CACHES = {
        "default": {
            "BACKEND": "common.redis_cache.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": f"tok-{_uuid.uuid4().hex[:8]}",
        }
    }
    user = get_user_model().objects.create_user("tok", password="x-long-password-1")
    client = APIClient()
    for undo in ("revoke", "deactivate"):
        token, key = api_token_create(user=user, name=undo)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        assert client.get("/api/studies/").status_code == 200
        assert client.get("/api/studies/").status_code == 200  # from the cache now
        if undo == "revoke":
            api_token_revoke(user=user, token_id=token.pk)
        else:
            user.is_active = False
            user.save()
        assert client.get("/api/studies/").status_code == 401


def test_judgment_exports_carry_the_reasons_in_every_format(client, study, users, judgments):
    first = PairJudgment.objects.order_by("id").first()
    first.reasons = ["age", "=cmd"]  # a name that would start a formula
    first.save(update_fields=["reasons"])
    client.force_login(users["reviewer"])

    def url(fmt: str) -> str:
        return reverse("api-export-judgments", args=[study.pk, fmt])

    rows = list(csv.DictReader(io.StringIO(streamed(client.get(url("csv"))))))
    assert rows[0]["reasons"] == "age; =cmd"  # one cell; starts with "a": no formula
    assert rows[1]["reasons"] == ""
    records = [json.loads(line) for line in streamed(client.get(url("jsonl"))).splitlines()]
    assert records[0]["reasons"] == ["age", "=cmd"]
    assert records[1]["reasons"] == []
    response = client.get(url("parquet"))
    table = pq.read_table(io.BytesIO(b"".join(response.streaming_content)))
    assert table.column("reasons").to_pylist()[:2] == [["age", "=cmd"], []]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_the_judgments_export_holds_the_adjudications_with_their_reviewer(
    client, study, users, judgments, fmt
):
    """A round trip used to lose the reviewers' decisions: they follow the answers, each with
    the reviewer who decided as its annotator and source ``adjudication``."""
    first = judgments[0]
    decision = review.adjudicate(
        study=study,
        user=users["reviewer"],
        item_a_id=first.item_a_id,
        item_b_id=first.item_b_id,
        label="comparable",
    )
    client.force_login(users["reviewer"])
    response = client.get(reverse("api-export-judgments", args=[study.pk, fmt]))
    body = b"".join(response.streaming_content)
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(body.decode())))
    elif fmt == "jsonl":
        rows = [json.loads(line) for line in body.decode().splitlines()]
    else:
        rows = pq.read_table(io.BytesIO(body)).to_pylist()
    assert len(rows) == 10  # 9 answers, then the decision
    last = rows[-1]
    assert last["source"] == "adjudication"
    assert last["label"] == "comparable"
    assert last["annotator"] == users["reviewer"].username
    assert str(last["annotator_id"]) == str(users["reviewer"].pk)
    assert last["provenance"] == f"adjudication #{decision.pk}"
    assert (last["item_a_key"], last["item_b_key"]) == ("w0", "w1")
    assert last["id"] in (None, "")
