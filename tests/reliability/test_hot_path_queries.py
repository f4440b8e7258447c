"""The annotation hot path (what 50 annotators hammer in the load test) in a bounded number of
queries: answering, replaying an answer, and asking for the next pair."""

from __future__ import annotations

import uuid

from django.urls import reverse
from rest_framework.test import APIClient

from learning.tokens import api_token_create
from spaces.models import Item
from tests.annotation.factories import make_space, make_study, make_user


def test_answer_replay_and_next_pair_stay_within_their_query_budgets(
    db, settings, media_root, django_assert_max_num_queries
):
    settings.JUDGMENT_RATE = 0  # the limit's one statement is counted below, on its own
    study = make_study(space=make_space())
    user = make_user("ann", study=study, role="annotator")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user, name='t')[1]}")
    items = list(Item.objects.filter(space=study.space).order_by("id").values_list("id", flat=True))
    url = reverse("api-judgments", args=[study.pk])

    def answer(b: int, client_id: str):
        return client.post(
            url,
            {"item_a": items[0], "item_b": b, "label": "comparable", "client_id": client_id},
            format="json",
        )

    assert answer(items[1], str(uuid.uuid4())).status_code == 201  # the refit marker is set
    client_id = str(uuid.uuid4())
    # token, study, membership, replay lookup, pool tags, items, gold, insert (+ the insert's
    # transaction statements); the response's items come from the pool lookup. (The refit
    # marker's one read runs on commit, which a test transaction never reaches:
    # test_refit_hook.py.)
    with django_assert_max_num_queries(10) as new:
        response = answer(items[2], client_id)
    assert response.status_code == 201
    assert response.json()["item_b"]["id"] == items[2]
    assert not [
        q
        for q in new.captured_queries
        if 'FROM "annotation_item" WHERE' in q["sql"] and '"annotation_item"."id" =' in q["sql"]
    ]  # no per-item fetch
    # token, study, membership, the joined replay lookup (+ the transaction statements)
    with django_assert_max_num_queries(6):
        replay = answer(items[2], client_id)
    assert replay.status_code == 200
    assert replay.json()["id"] == response.json()["id"]
    with django_assert_max_num_queries(12):
        assert client.get(reverse("api-next-pair", args=[study.pk])).status_code == 200
    # An answer that brings the next pair (?next=1) costs less than the two requests it
    # replaces (10 + 9 here): the token, study, membership and pool tags are read once; the
    # uploaded candidate pairs cost one query.
    with django_assert_max_num_queries(15):
        response = client.post(
            f"{url}?next=1",
            {
                "item_a": items[0],
                "item_b": items[3],
                "label": "comparable",
                "client_id": str(uuid.uuid4()),
            },
            format="json",
        )
    assert response.status_code == 201
    assert response.json()["next_pair"]["done"] is False


def test_the_judgment_limit_costs_one_statement_per_post(
    db, settings, media_root, django_assert_max_num_queries
):
    """The rate limit takes its token with one atomic upsert (audit.limits), nothing else."""
    study = make_study(space=make_space())
    user = make_user("ann", study=study, role="annotator")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user, name='t')[1]}")
    items = list(Item.objects.filter(space=study.space).order_by("id").values_list("id", flat=True))
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
