"""The annotation hot path (what 50 annotators hammer in the load test) in a bounded number of
queries, with the production cache (Redis): answering, replaying an answer, the next pair from
the annotator's queue, and a batch of answers.

Counted: every statement sent to the database, including the refit hook's read after the
commit; not counted: the SAVEPOINT/RELEASE pair a test transaction turns the answer's own
transaction into (in production that is BEGIN/COMMIT, which psycopg sends without a query).
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from spaces.models import Item
from tests.annotation.factories import make_space, make_study, make_user


@pytest.fixture
def redis_cache(settings, redis_url):
    settings.CACHES = {
        "default": {
            "BACKEND": "common.redis_cache.RedisCache",  # as in production
            "LOCATION": redis_url,
            "KEY_PREFIX": f"hot-{uuid.uuid4().hex[:8]}",
        }
    }


@pytest.fixture
def counted(django_assert_max_num_queries, django_capture_on_commit_callbacks):
    @contextmanager
    def within(limit: int):
        with (
            django_assert_max_num_queries(1000) as captured,
            django_capture_on_commit_callbacks(execute=True),
        ):
            yield captured
        statements = [
            q["sql"]
            for q in captured.captured_queries
            if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
        ]
        captured.statements = statements
        assert len(statements) <= limit, "\n".join(statements)

    return within


def _setup(overlap: int = 1):
    study = make_study(space=make_space(), overlap=overlap)
    user = make_user("ann", study=study, role="annotator")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user, name='t')[1]}")
    items = list(Item.objects.filter(space=study.space).order_by("id").values_list("id", flat=True))
    return study, client, items


def test_a_new_answer_with_its_next_pair_costs_two_statements(
    db, settings, media_root, redis_cache, counted
):
    settings.JUDGMENT_RATE, settings.PAIR_QUEUE_SIZE = 50, 16  # the limit stays on: in Redis
    study, client, items = _setup()
    url = reverse("api-judgments", args=[study.pk])

    def answer(pair, client_id: str, query: str = "?next=1"):
        body = {"item_a": pair[0], "item_b": pair[1], "label": "comparable"}
        return client.post(url + query, {**body, "client_id": client_id}, format="json")

    # Warm-up: the token's last-use stamp, the refit marker, the study's facts, the queue.
    with counted(1000):
        first = answer((items[0], items[1]), str(uuid.uuid4()))
    assert first.status_code == 201
    pair = (first.json()["next_pair"]["left"]["id"], first.json()["next_pair"]["right"]["id"])
    for _ in range(5):
        client_id = str(uuid.uuid4())
        # The insert and the refit marker's read (after the commit); the token's user, the
        # study, the role, the gold pairs, the limit, the pair's items (its queue served it)
        # and the next pair: the cache. (An overlap pair taken from the queue adds its re-check:
        # overlap 1 here.) The budget of the issue was 4.
        with counted(2) as new:
            response = answer(pair, client_id)
        assert response.status_code == 201, response.json()
        assert not [s for s in new.statements if "annotation_pairskip" in s]  # no sampler
        assert not [s for s in new.statements if "audit_ratelimit" in s]  # the limit: Redis
        nxt = response.json()["next_pair"]
        assert nxt["done"] is False
        pair = (nxt["left"]["id"], nxt["right"]["id"])

    # A replay (rare: a lost response): the insert the constraint refuses and its rollback, the
    # joined lookup of the stored row.
    with counted(3):
        replay = answer(
            (response.json()["item_a"]["id"], response.json()["item_b"]["id"]), client_id, query=""
        )
    assert replay.status_code == 200
    assert replay.json()["id"] == response.json()["id"]


def test_a_queue_refill_costs_a_handful_of_statements_for_all_its_pairs(
    db, settings, media_root, redis_cache, counted
):
    settings.PAIR_QUEUE_SIZE = 16
    study, client, items = _setup(overlap=2)
    with counted(1000):  # warm-up: the token's last-use stamp, the study's facts and the role
        body = {"item_a": items[0], "item_b": items[1], "label": "unsure"}
        url = reverse("api-judgments", args=[study.pk])
        client.post(url, {**body, "client_id": str(uuid.uuid4())}, format="json")
    # skips, overlap window, candidate pairs, answered pairs, the items: once for all 16 pairs
    # (the token's user is cached; the pool's arrays are cached per process)
    with counted(6) as refill:
        response = client.get(reverse("api-next-pair", args=[study.pk]))
    assert response.status_code == 200
    assert response.json()["done"] is False
    with counted(0) as taken:  # the pair comes from the queue
        assert client.get(reverse("api-next-pair", args=[study.pk])).json()["done"] is False
    assert len(taken.statements) < len(refill.statements)


def test_a_batch_costs_the_same_few_statements_whatever_its_size(
    db, settings, media_root, redis_cache, counted
):
    settings.JUDGMENT_RATE = 50
    study, client, items = _setup()
    url = reverse("api-judgments-batch", args=[study.pk])

    def batch(pairs):
        answers = [
            {"item_a": a, "item_b": b, "label": "unsure", "client_id": str(uuid.uuid4())}
            for a, b in pairs
        ]
        return client.post(url, {"answers": answers}, format="json")

    with counted(1000):
        assert batch([(items[0], items[1])]).status_code == 200  # warm-up
    # the replay lookup, the items in the pool, one INSERT, the read-back, the hook.
    with counted(5):
        response = batch([(items[0], items[j]) for j in range(2, 32)])
    assert [r["status"] for r in response.json()["results"]] == ["created"] * 30


def test_the_database_limit_costs_one_statement_per_post_when_the_cache_is_not_redis(
    db, settings, media_root, django_assert_max_num_queries
):
    """Without Redis the bucket is one atomic upsert (audit.limits), nothing else."""
    study, client, items = _setup()
    url = reverse("api-judgments", args=[study.pk])
    counts = {}
    # The first POST warms up (the token's last-use stamp, the refit marker).
    for rate, b in [(0, items[1]), (0, items[2]), (5, items[3])]:
        settings.JUDGMENT_RATE = rate
        body = {"item_a": items[0], "item_b": b, "label": "comparable"}
        with django_assert_max_num_queries(100) as captured:
            response = client.post(url, {**body, "client_id": str(uuid.uuid4())}, format="json")
        assert response.status_code == 201
        counts[rate] = captured.captured_queries
    assert len(counts[5]) == len(counts[0]) + 1
    assert [q["sql"] for q in counts[5] if "audit_ratelimit" in q["sql"]]
