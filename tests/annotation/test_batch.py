"""POST /api/studies/{id}/judgments/batch/: many answers, each settled on its own, idempotent on
its client_id, counted one by one by the rate limit."""

from __future__ import annotations

import uuid

from django.urls import reverse

from annotation.models import PairJudgment


def _answer(items, i, j, label="comparable", client_id=None) -> dict:
    return {
        "item_a": items[i].pk,
        "item_b": items[j].pk,
        "label": label,
        "client_id": client_id or str(uuid.uuid4()),
    }


def _post(client, study, answers, query=""):
    url = reverse("api-judgments-batch", args=[study.pk]) + query
    return client.post(url, {"answers": answers}, format="json")


def test_a_batch_stores_each_answer_once_and_a_resend_changes_nothing(
    study, annotator, client_for, items
):
    client = client_for(annotator)
    answers = [_answer(items, 0, j) for j in range(1, 21)]
    response = _post(client, study, answers)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created"] * 20
    assert [r["client_id"] for r in results] == [a["client_id"] for a in answers]  # in order
    assert PairJudgment.objects.filter(annotator=annotator).count() == 20
    again = _post(client, study, answers).json()["results"]  # a lost response, sent again
    assert [r["status"] for r in again] == ["duplicate"] * 20
    assert [r["judgment"]["id"] for r in again] == [r["judgment"]["id"] for r in results]
    assert PairJudgment.objects.filter(annotator=annotator).count() == 20
    stored = PairJudgment.objects.get(client_id=answers[4]["client_id"])
    assert (stored.item_a_id, stored.item_b_id, stored.label) == (
        items[0].pk,
        items[5].pk,
        "comparable",
    )


def test_mixed_good_and_bad_answers_are_settled_one_by_one(study, annotator, client_for, items):
    client = client_for(annotator)
    earlier = _answer(items, 0, 1)
    assert _post(client, study, [earlier]).json()["results"][0]["status"] == "created"
    twice = str(uuid.uuid4())
    answers = [
        _answer(items, 2, 3),  # good
        "not an answer",  # malformed item
        _answer(items, 2, 4, label="maybe"),  # bad label
        {**_answer(items, 2, 5), "client_id": "42"},  # bad client_id
        {**_answer(items, 2, 6), "item_b": 999_999_999},  # no such item
        earlier,  # a retry of a stored answer
        {**earlier, "label": "unsure"},  # its client_id reused for another answer
        _answer(items, 1, 0),  # a pair answered before under another client_id
        _answer(items, 2, 7, client_id=twice),  # good
        _answer(items, 2, 7, client_id=twice),  # the same answer twice in one batch
        _answer(items, 8, 8),  # the same item twice
    ]
    response = _post(client, study, answers)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status"] for r in results] == [
        "created",
        "error",
        "error",
        "error",
        "error",
        "duplicate",
        "error",
        "error",
        "created",
        "duplicate",
        "error",
    ]
    details = [r["detail"] for r in results]
    assert "must be an object" in details[1]
    assert "label" in details[2]
    assert "client_id" in details[3]
    assert "not in this study's pool" in details[4]
    assert "already used for a different answer" in details[6]
    assert "already answered this pair" in details[7]
    assert "two different items" in details[10]
    assert results[5]["judgment"]["label"] == "comparable"
    assert results[8]["judgment"]["id"] == results[9]["judgment"]["id"]
    assert PairJudgment.objects.filter(annotator=annotator).count() == 3  # earlier + 2 new


def test_the_limit_counts_answers_not_requests(settings, study, annotator, client_for, items):
    settings.JUDGMENT_RATE, settings.JUDGMENT_BURST = 1, 3
    client = client_for(annotator)
    answers = [_answer(items, 0, j) for j in range(1, 6)]
    response = _post(client, study, answers)
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created"] * 3 + ["throttled"] * 2
    assert 0 < results[3]["retry_after"] <= 1.0
    assert PairJudgment.objects.filter(annotator=annotator).count() == 3
    refused = _post(client, study, answers[3:])  # no token left: the request is refused
    assert refused.status_code == 429
    assert PairJudgment.objects.filter(annotator=annotator).count() == 3


def test_a_batch_can_bring_the_next_pair_and_never_offers_its_answers(
    study, annotator, client_for, items
):
    study.overlap = 1
    study.save()
    client = client_for(annotator)
    response = _post(client, study, [_answer(items, 0, j) for j in range(1, 4)], "?next=1")
    nxt = response.json()["next_pair"]
    assert nxt["done"] is False
    pair = {nxt["left"]["id"], nxt["right"]["id"]}
    assert pair not in [{items[0].pk, items[j].pk} for j in range(1, 4)]


def test_a_closed_study_refuses_new_answers_but_answers_retries(
    study, annotator, client_for, items
):
    client = client_for(annotator)
    stored = _answer(items, 0, 1)
    _post(client, study, [stored])
    study.is_active = False
    study.save()
    results = _post(client, study, [stored, _answer(items, 0, 2)]).json()["results"]
    assert [r["status"] for r in results] == ["duplicate", "error"]
    assert "closed" in results[1]["detail"]


def test_the_batch_is_in_the_openapi_schema(client):
    schema = client.get(reverse("schema"), {"format": "json"}).json()
    post = schema["paths"]["/api/studies/{study_id}/judgments/batch/"]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.endswith("/JudgmentBatch")
    assert "throttled" in str(schema["components"]["schemas"]["BatchResult"])


def test_next_n_brings_n_distinct_pairs_for_batching_clients(study, annotator, client_for, items):
    study.overlap = 1
    study.save()
    client = client_for(annotator)
    answers = [_answer(items, 0, j) for j in range(1, 4)]
    data = _post(client, study, answers, "?next=5").json()
    pairs = [frozenset((p["left"]["id"], p["right"]["id"])) for p in data["next_pairs"]]
    assert len(pairs) == 5
    assert len(set(pairs)) == 5
    assert not set(pairs) & {frozenset((items[0].pk, items[j].pk)) for j in range(1, 4)}
    assert data["next_pair"] == data["next_pairs"][0]
    too_many = _post(client, study, [_answer(items, 1, 2)], "?next=51")
    assert too_many.status_code == 400
    assert "next" in too_many.json()


def test_the_fast_representations_equal_the_serializers(study, annotator, items):
    from annotation.labelling.serializers import JudgmentSerializer, judgment_data
    from annotation.labelling.services import judgment_create
    from annotation.serializers import ItemSerializer, item_data

    items[0].payload = {"text": "ünïcode", "n": [1, 2]}
    items[0].save()
    judgment, _ = judgment_create(
        study=study,
        annotator=annotator,
        item_a_id=items[0].pk,
        item_b_id=items[1].pk,
        label="unsure",
        client_id=uuid.uuid4(),
        elapsed_ms=1234,
    )
    stored = PairJudgment.objects.select_related("item_a", "item_b", "annotator").get()
    for row in (judgment, stored):
        assert judgment_data(row) == JudgmentSerializer(row).data
    assert item_data(items[0]) == ItemSerializer(items[0]).data
