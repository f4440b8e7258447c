"""The per-annotator pair queue (annotation/labelling/pair_queue.py) and the sampler's bulk form
(sampling.next_pairs): the same pairs the sampler would choose one by one, none twice, and a
queue that is chosen again when what it was chosen from changes."""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import numpy as np
import pytest
from django.core.cache import cache
from django.urls import reverse

from annotation.labelling import pair_queue, strategies
from annotation.labelling.sampling import next_pairs
from annotation.labelling.services import judgment_create
from annotation.labelling.skips import pair_skip
from annotation.models import GoldPair, Study, canonical_pair

from .test_sampling import answer, canonical, restrict_pool


@pytest.fixture(autouse=True)
def _queue_of_eight(settings):
    settings.PAIR_QUEUE_SIZE = 8


def take(study, user, exclude=()):
    entry = pair_queue.pair_take(study=study, user=user, exclude=exclude)
    return None if entry is None else entry.pair


def test_next_pairs_gives_distinct_unanswered_unheld_pairs(study, annotator, items):
    restrict_pool(study, items[:6])  # 15 pairs
    answer(study, annotator, items[0].pk, items[1].pk)
    held = [(items[3].pk, items[2].pk)]
    pairs = next_pairs(study=study, user=annotator, k=20, exclude=held)
    found = [canonical(p) for p in pairs]
    assert len(found) == 13  # 15 - the answered one - the held one
    assert len(set(found)) == 13
    assert (items[0].pk, items[1].pk) not in found
    assert (items[2].pk, items[3].pk) not in found
    assert all(p.left.key and p.right.key for p in pairs)  # real items, read at once


def test_every_pair_is_served_once_until_the_pool_runs_out(study, annotator, items):
    restrict_pool(study, items[:6])  # 15 pairs, two refills of 8
    served = []
    while (pair := take(study, annotator)) is not None:
        served.append(pair)
        answer(study, annotator, *pair)
    assert len(served) == 15
    assert len(set(served)) == 15


def test_concurrent_takes_never_get_the_same_entry(settings, study, annotator, items, redis_url):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": f"pq-{uuid.uuid4().hex[:8]}",
        }
    }
    settings.PAIR_QUEUE_SIZE = 17
    study.overlap = 1
    study.save()
    first = take(study, annotator)  # the refill, in this thread; 16 entries wait
    got: list = []
    lock = threading.Lock()

    def worker():
        for _ in range(2):
            pair = take(study, annotator)
            with lock:
                got.append(pair)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 16
    assert len({first, *got}) == 17


def test_gold_share_is_the_samplers(study, annotator, items):
    study.gold_rate = 0.3
    study.overlap = 1
    study.save()
    for i in range(0, 40, 2):  # 20 gold pairs
        GoldPair.objects.create(study=study, item_a=items[i], item_b=items[i + 1], label="unsure")
    reasons: Counter = Counter()
    rng = np.random.default_rng(3)
    for _ in range(50):  # 400 pairs, chosen in refills of 8 (nothing answered: gold repeats)
        for pair in next_pairs(study=study, user=annotator, k=8, rng=rng):
            reasons[pair.reason] += 1
    assert 0.22 < reasons["gold"] / 400 < 0.38


def test_overlap_pairs_come_first_and_a_full_one_is_not_served(
    study, annotator, other_annotator, reviewer, items
):
    study.overlap = 2
    study.save()
    answer(study, other_annotator, items[3].pk, items[4].pk)
    answer(study, other_annotator, items[7].pk, items[9].pk)
    first = take(study, annotator)
    assert first in {(items[3].pk, items[4].pk), (items[7].pk, items[9].pk)}
    queued = cache.get(pair_queue._key(study.pk, annotator.pk))["entries"]
    assert [e.reason for e in queued[:2]] == ["overlap", "overlap"]
    other = queued[1].pair
    answer(study, reviewer, *other)  # the second answer: the pair is full now
    answer(study, annotator, *first)
    assert take(study, annotator) != other  # checked when taken: not over-filled
    counts = Counter(
        (j.item_a_id, j.item_b_id) for j in study.judgments.filter(item_a_id__in=[other[0]])
    )
    assert counts[other] == 2


def test_a_change_of_settings_or_pool_chooses_the_queue_again(study, annotator, items):
    study.overlap = 1
    study.save()
    take(study, annotator)
    restrict_pool(Study.objects.get(pk=study.pk), items[:3])  # 3 pairs: a new stamp
    study = Study.objects.get(pk=study.pk)  # as the API reads it (annotation.facts)
    pairs = {take(study, annotator) for _ in range(3)}
    inside = {canonical_pair(a.pk, b.pk) for a in items[:3] for b in items[:3] if a != b}
    assert pairs <= inside
    assert len(pairs) == 3


def test_a_skip_forgets_the_queue(study, annotator, items):
    study.overlap = 1
    study.save()
    pair = take(study, annotator)
    assert cache.get(pair_queue._key(study.pk, annotator.pk)) is not None
    pair_skip(study=study, user=annotator, item_a_id=pair[0], item_b_id=pair[1])
    assert cache.get(pair_queue._key(study.pk, annotator.pk)) is None
    assert all(take(study, annotator) != pair for _ in range(10))


def test_an_answer_to_a_waiting_pair_forgets_the_queue(study, annotator, client_for, items):
    study.overlap = 1
    study.save()
    take(study, annotator)
    waiting = cache.get(pair_queue._key(study.pk, annotator.pk))["entries"][3].pair
    body = {"item_a": waiting[0], "item_b": waiting[1], "label": "unsure"}
    response = client_for(annotator).post(
        reverse("api-judgments", args=[study.pk]),
        {**body, "client_id": str(uuid.uuid4())},
        format="json",
    )
    assert response.status_code == 201
    assert cache.get(pair_queue._key(study.pk, annotator.pk)) is None
    assert all(take(study, annotator) != waiting for _ in range(10))


def test_the_queue_serves_without_a_cache(settings, study, annotator, items):
    working = settings.CACHES
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens there
        }
    }
    try:
        pair = take(study, annotator)
        assert pair is not None
        judgment_create(
            study=study,
            annotator=annotator,
            item_a_id=pair[0],
            item_b_id=pair[1],
            label="unsure",
            client_id=uuid.uuid4(),
        )
        assert take(study, annotator) != pair
    finally:
        settings.CACHES = working


def test_a_change_of_the_studys_settings_chooses_the_queue_again(study, annotator, items):
    from annotation.facts import study_facts

    study.overlap = 1
    study.save()
    take(study, annotator)
    before = cache.get(pair_queue._key(study.pk, annotator.pk))["generation"]
    take(study, annotator)  # the same queue while nothing changes
    assert cache.get(pair_queue._key(study.pk, annotator.pk))["generation"] == before
    stored = Study.objects.get(pk=study.pk)
    stored.gold_rate = 0.5  # a setting the sampler reads
    stored.save()
    fresh = study_facts(study.pk).study  # as the API reads it
    assert fresh.gold_rate == 0.5
    take(fresh, annotator)
    assert cache.get(pair_queue._key(study.pk, annotator.pk))["generation"] != before


def test_a_new_metric_version_chooses_an_active_strategys_queue_again(
    study, annotator, items, monkeypatch
):
    """Picks made for an old fit (or before any fit: random) are not served once a newer
    EXPLORE version is ready; a random study's queue stays (its picks read no metric)."""
    from learning.models import MetricVersion

    from .factories import make_metric_version

    study.strategy = Study.Strategy.TARGETED
    study.overlap = 1
    study.save()
    restrict_pool(study, items[:8])  # 28 pairs
    study = Study.objects.get(pk=study.pk)
    take(study, annotator)
    before = cache.get(pair_queue._key(study.pk, annotator.pk))
    assert before["metric"] is None
    assert {e.reason for e in before["entries"]} == {"random"}  # no fit yet
    take(study, annotator)
    assert cache.get(pair_queue._key(study.pk, annotator.pk))["generation"] == before["generation"]

    sigma = np.diag(np.linspace(0.05, 0.6, study.space.dimension))
    version = make_metric_version(study=study, method=MetricVersion.Method.EXPLORE, sigma=sigma)
    monkeypatch.setattr(strategies, "CONTROL_SHARE", 0.0)  # the strategy's own picks only
    entry = pair_queue.pair_take(study=study, user=annotator)
    after = cache.get(pair_queue._key(study.pk, annotator.pk))
    assert after["generation"] != before["generation"]
    assert after["metric"] == version.pk
    assert entry.reason == "targeted"
    newer = make_metric_version(
        study=study, method=MetricVersion.Method.EXPLORE, sigma=2 * sigma, judgment_watermark=1
    )
    take(study, annotator)
    assert cache.get(pair_queue._key(study.pk, annotator.pk))["metric"] == newer.pk

    stored = Study.objects.get(pk=study.pk)
    stored.strategy = Study.Strategy.RANDOM
    stored.save()
    study = Study.objects.get(pk=study.pk)
    take(study, annotator)
    kept = cache.get(pair_queue._key(study.pk, annotator.pk))
    assert kept["metric"] is None
    make_metric_version(
        study=study, method=MetricVersion.Method.EXPLORE, sigma=3 * sigma, judgment_watermark=2
    )
    take(study, annotator)
    assert cache.get(pair_queue._key(study.pk, annotator.pk))["generation"] == kept["generation"]
