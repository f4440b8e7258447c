"""The REST API: studies and roles, next pair, idempotent judgments, undo, bad input (groups,
item search and suggestions: test_api_groups.py)."""

from __future__ import annotations

import json
import uuid

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Membership, PairJudgment, Study

from .factories import make_space, make_study, make_user
from .test_services import refit_hooks

Role = Membership.Role


def judgment_body(a, b, **extra):
    body = {
        "item_a": a.pk,
        "item_b": b.pk,
        "label": "comparable",
        "client_id": str(uuid.uuid4()),
        "elapsed_ms": 830,
    }
    body.update(extra)
    return body


def url(study, tail=""):
    return f"/api/studies/{study.pk}/{tail}"


# --- Studies and roles ------------------------------------------------------------------------


def test_studies_lists_only_the_users_studies_with_their_role(
    study, space, annotator, outsider, staff, client_for
):
    other = make_study(space=space, name="Other study")
    data = client_for(annotator).get("/api/studies/").json()
    assert [(s["id"], s["role"]) for s in data] == [(study.pk, "annotator")]
    assert client_for(outsider).get("/api/studies/").json() == []
    staff_ids = {s["id"]: s["role"] for s in client_for(staff).get("/api/studies/").json()}
    assert staff_ids == {study.pk: "admin", other.pk: "admin"}


def test_anonymous_requests_are_refused(study):
    response = APIClient().get("/api/studies/")
    assert response.status_code in (401, 403)


def test_outsiders_get_the_same_404_as_for_unknown_studies(study, outsider, items, client_for):
    client = client_for(outsider)
    assert client.get(url(study, "next-pair/")).status_code == 404
    response = client.post(
        url(study, "judgments/"), judgment_body(items[0], items[1]), format="json"
    )
    assert response.status_code == 404
    assert response.json() == {"detail": "No such study."}
    unknown = client.get("/api/studies/99999/next-pair/")
    assert unknown.status_code == 404
    assert unknown.json() == {"detail": "No such study."}
    assert PairJudgment.objects.count() == 0


# --- Next pair --------------------------------------------------------------------------------


def test_next_pair_serves_two_pool_items(study, annotator, client_for):
    data = client_for(annotator).get(url(study, "next-pair/")).json()
    assert data["done"] is False
    assert data["left"]["id"] != data["right"]["id"]
    assert {"id", "key", "display", "kind", "payload"} <= set(data["left"])


def test_next_pair_says_done_when_everything_is_answered(study, annotator, items, client_for):
    tag = study.pool_tags.create(name="two")
    items[0].tags.add(tag)
    items[1].tags.add(tag)
    client = client_for(annotator)
    client.post(url(study, "judgments/"), judgment_body(items[0], items[1]), format="json")
    assert client.get(url(study, "next-pair/")).json() == {
        "done": True,
        "complete": False,
        "left": None,
        "right": None,
        "order": None,
    }


def test_next_pair_rejects_a_malformed_exclude(study, annotator, client_for):
    response = client_for(annotator).get(url(study, "next-pair/"), {"exclude": "1-2,3"})
    assert response.status_code == 400
    response = client_for(annotator).get(url(study, "next-pair/"), {"exclude": "a-b"})
    assert response.status_code == 400


def test_post_with_next_answers_the_next_pair_never_the_stored_or_held_ones(
    study, annotator, items, client_for
):
    tag = study.pool_tags.create(name="three")
    for item in items[:3]:
        item.tags.add(tag)
    client = client_for(annotator)
    held = f"{items[1].pk}-{items[2].pk}"
    body = judgment_body(items[0], items[1])
    first = client.post(f"{url(study, 'judgments/')}?next=1&exclude={held}", body, format="json")
    assert first.status_code == 201
    offered = first.json()["next_pair"]
    assert offered["done"] is False
    assert {offered["left"]["id"], offered["right"]["id"]} == {items[0].pk, items[2].pk}
    assert {"id", "key", "display", "kind", "payload"} <= set(offered["left"])
    # The lost-response retry answers 200 with the same judgment and a next pair too.
    again = client.post(f"{url(study, 'judgments/')}?next=1&exclude={held}", body, format="json")
    assert again.status_code == 200
    assert {k: v for k, v in again.json().items() if k != "next_pair"} == {
        k: v for k, v in first.json().items() if k != "next_pair"
    }
    replayed = again.json()["next_pair"]
    assert replayed["done"] is False
    assert {replayed["left"]["id"], replayed["right"]["id"]} == {items[0].pk, items[2].pk}
    # Without next=1 the answer is unchanged; once everything is answered, done.
    plain = client.post(url(study, "judgments/"), judgment_body(items[0], items[2]), format="json")
    assert "next_pair" not in plain.json()
    last = client.post(
        f"{url(study, 'judgments/')}?next=1", judgment_body(items[1], items[2]), format="json"
    )
    assert last.json()["next_pair"] == {
        "done": True,
        "complete": False,
        "left": None,
        "right": None,
        "order": None,
    }


def test_post_with_next_and_a_malformed_exclude_is_400_and_stores_nothing(
    study, annotator, items, client_for
):
    response = client_for(annotator).post(
        f"{url(study, 'judgments/')}?next=1&exclude=1-2,3",
        judgment_body(items[0], items[1]),
        format="json",
    )
    assert response.status_code == 400
    assert PairJudgment.objects.count() == 0


# --- Judgments --------------------------------------------------------------------------------


def test_post_is_idempotent_201_then_200_with_the_same_body(
    study, annotator, items, client_for, django_capture_on_commit_callbacks
):
    client = client_for(annotator)
    body = judgment_body(items[4], items[2])
    with django_capture_on_commit_callbacks() as callbacks:
        first = client.post(url(study, "judgments/"), body, format="json")
    assert first.status_code == 201
    assert len(refit_hooks(callbacks)) == 1
    again = client.post(url(study, "judgments/"), body, format="json")
    assert again.status_code == 200
    assert again.json() == first.json()
    stored = PairJudgment.objects.get()
    assert (stored.item_a_id, stored.item_b_id) == (items[2].pk, items[4].pk)
    assert stored.elapsed_ms == 830
    assert first.json()["client_id"] == body["client_id"]


def test_reusing_a_client_id_for_another_answer_is_409(
    study, annotator, other_annotator, items, client_for
):
    body = judgment_body(items[0], items[1])
    client_for(annotator).post(url(study, "judgments/"), body, format="json")
    response = client_for(other_annotator).post(url(study, "judgments/"), body, format="json")
    assert response.status_code == 409
    assert "client_id" in response.json()["detail"]
    response = client_for(annotator).post(
        url(study, "judgments/"), {**body, "item_b": items[2].pk}, format="json"
    )
    assert response.status_code == 409
    assert PairJudgment.objects.count() == 1


@pytest.mark.parametrize(
    ("change", "status", "field"),
    [
        ({"item_b": 10**9}, 400, "does not exist"),
        ({"same": True}, 400, "different"),
        ({"label": "maybe"}, 400, "label"),
        ({"label": ""}, 400, "label"),
        ({"client_id": "123"}, 400, "client_id"),
        ({"elapsed_ms": -1}, 400, "elapsed_ms"),
        ({"item_a": "x"}, 400, "item_a"),
        ({"drop": "item_a"}, 400, "item_a"),
        ({"drop": "item_b"}, 400, "item_b"),
        ({"drop": "label"}, 400, "label"),
        ({"drop": "client_id"}, 400, "client_id"),
        ({"foreign": True}, 400, "pool"),
    ],
)
def test_bad_judgments_answer_4xx_with_a_message_and_store_nothing(
    study, annotator, items, client_for, change, status, field
):
    body = judgment_body(items[0], items[1])
    if change.pop("same", False):
        body["item_b"] = items[0].pk
    if change.pop("foreign", False):
        body["item_b"] = make_space(name="elsewhere", seed=4).items.first().pk
    dropped = change.pop("drop", None)
    if dropped:
        del body[dropped]
    body.update(change)
    response = client_for(annotator).post(url(study, "judgments/"), body, format="json")
    assert response.status_code == status
    assert field in json.dumps(response.json())
    assert PairJudgment.objects.count() == 0


def test_malformed_json_and_oversized_bodies_are_refused(study, annotator, items, client_for):
    client = client_for(annotator)
    response = client.post(url(study, "judgments/"), "{not json", content_type="application/json")
    assert response.status_code == 400
    body = judgment_body(items[0], items[1], padding="x" * 20_000)
    response = client.post(url(study, "judgments/"), body, format="json")
    assert response.status_code == 413
    assert "too large" in response.json()["detail"]
    assert PairJudgment.objects.count() == 0


def test_closed_study_refuses_answers(study, annotator, items, client_for):
    Study.objects.filter(pk=study.pk).update(is_active=False)
    response = client_for(annotator).post(
        url(study, "judgments/"), judgment_body(items[0], items[1]), format="json"
    )
    assert response.status_code == 400
    assert "closed" in response.json()["detail"]


def test_token_auth_posts_without_csrf(study, annotator, items):
    token = Token.objects.create(user=annotator)
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.post(
        url(study, "judgments/"), judgment_body(items[0], items[1]), format="json"
    )
    assert response.status_code == 201


def test_session_auth_needs_the_csrf_header(study, annotator, items):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(annotator)
    response = client.post(
        url(study, "judgments/"), judgment_body(items[0], items[1]), format="json"
    )
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_undo_by_id_or_client_id_only_for_ones_own(
    study, annotator, other_annotator, items, client_for, django_capture_on_commit_callbacks
):
    mine = client_for(annotator)
    theirs = client_for(other_annotator)
    a = mine.post(url(study, "judgments/"), judgment_body(items[0], items[1]), format="json")
    b = mine.post(url(study, "judgments/"), judgment_body(items[0], items[2]), format="json")
    c = theirs.post(url(study, "judgments/"), judgment_body(items[0], items[1]), format="json")
    assert mine.delete(url(study, f"judgments/{c.json()['id']}/")).status_code == 403
    with django_capture_on_commit_callbacks() as callbacks:
        assert mine.delete(url(study, f"judgments/{a.json()['id']}/")).status_code == 204
    assert len(refit_hooks(callbacks)) == 1
    assert mine.delete(url(study, f"judgments/{b.json()['client_id']}/")).status_code == 204
    assert mine.delete(url(study, f"judgments/{b.json()['client_id']}/")).status_code == 404
    assert mine.delete(url(study, "judgments/not-an-id/")).status_code == 400
    assert list(PairJudgment.objects.values_list("pk", flat=True)) == [c.json()["id"]]


def test_annotators_list_only_their_answers_reviewers_all(
    study, annotator, other_annotator, reviewer, items, client_for
):
    for i in range(1, 4):
        client_for(annotator).post(
            url(study, "judgments/"), judgment_body(items[0], items[i]), format="json"
        )
    client_for(other_annotator).post(
        url(study, "judgments/"), judgment_body(items[0], items[1]), format="json"
    )
    own = client_for(annotator).get(url(study, "judgments/")).json()["results"]
    assert {j["annotator"] for j in own} == {"ann"}
    assert len(own) == 3
    assert own[0]["id"] > own[-1]["id"]  # newest first
    everything = client_for(reviewer).get(url(study, "judgments/"), {"limit": 50}).json()
    assert len(everything["results"]) == 4
    mine_only = client_for(reviewer).get(url(study, "judgments/"), {"mine": 1}).json()
    assert mine_only["results"] == []
    limited = client_for(annotator).get(url(study, "judgments/"), {"mine": 1, "limit": 2})
    assert len(limited.json()["results"]) == 2
    assert client_for(annotator).get(url(study, "judgments/"), {"limit": 0}).status_code == 400


def test_openapi_schema_describes_the_api(db, staff, client_for):
    response = client_for(staff).get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    paths = json.loads(response.content)["paths"]
    assert "/api/studies/{study_id}/judgments/" in paths
    assert "/api/items/" in paths


def test_reviewer_of_one_study_is_an_outsider_elsewhere(space, reviewer, items, client_for):
    elsewhere = make_study(space=space, name="Elsewhere")
    make_user("someone", study=elsewhere, role=Role.ANNOTATOR)
    assert client_for(reviewer).get(url(elsewhere, "judgments/")).status_code == 404


def test_a_closed_study_serves_no_pairs(study, annotator, client_for):
    Study.objects.filter(pk=study.pk).update(is_active=False)
    data = client_for(annotator).get(url(study, "next-pair/")).json()
    assert data["done"] is True


def test_listing_judgments_and_groups_reads_a_constant_number_of_queries(
    study, annotator, reviewer, items, client_for, django_assert_max_num_queries
):
    client = client_for(annotator)
    for b in items[1:21]:
        client.post(url(study, "judgments/"), judgment_body(items[0], b), format="json")
    for i in range(5):
        client.post(
            url(study, "groups/"), {"name": f"g{i}", "members": [items[i].pk]}, format="json"
        )
    reviewer_client = client_for(reviewer)
    with django_assert_max_num_queries(6):
        assert (
            len(reviewer_client.get(url(study, "judgments/"), {"limit": 20}).json()["results"])
            == 20
        )
    with django_assert_max_num_queries(6):
        assert len(reviewer_client.get(url(study, "groups/")).json()) == 5
    with django_assert_max_num_queries(6):
        reviewer_client.get("/api/studies/")


@pytest.mark.parametrize("raw", ["1,x", "１２", "²", "99999999999999999999999"])
def test_malformed_id_lists_are_400(study, annotator, client_for, raw):
    client = client_for(annotator)
    assert client.get(url(study, "suggestions/"), {"members": raw}).status_code == 400
    response = client.get(url(study, "next-pair/"), {"exclude": raw + "-3"})
    assert response.status_code == 400


@pytest.mark.parametrize("ref", ["²", "99999999999999999999999", "１"])
def test_odd_undo_references_are_4xx(study, annotator, client_for, ref):
    response = client_for(annotator).delete(url(study, f"judgments/{ref}/"))
    assert response.status_code in (400, 404)
