"""Choosing the next pair: never answered twice, overlap first, gold rate, strategies."""

from __future__ import annotations

import re
import uuid
from collections import Counter

import numpy as np
import pytest

from annotation.labelling.sampling import next_pair
from annotation.labelling.services import judgment_create
from annotation.models import GoldPair, Study
from learning.models import MetricVersion
from tests.conftest import run_benchmark

from .factories import make_metric_version


def answer(study, user, a_id, b_id, label="comparable"):
    judgment_create(
        study=study,
        annotator=user,
        item_a_id=a_id,
        item_b_id=b_id,
        label=label,
        client_id=uuid.uuid4(),
        elapsed_ms=5,
    )


def canonical(pair):
    a, b = pair.left.pk, pair.right.pk
    return (min(a, b), max(a, b))


def restrict_pool(study, items):
    tag = study.pool_tags.create(name=f"pool-{len(items)}")
    for item in items:
        item.tags.add(tag)


def test_never_serves_a_pair_the_annotator_answered(study, annotator, items):
    restrict_pool(study, items[:4])  # 6 pairs
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(6):
        pair = next_pair(study=study, user=annotator, rng=rng)
        assert pair is not None
        key = canonical(pair)
        assert key not in seen
        seen.add(key)
        answer(study, annotator, *key)
    assert next_pair(study=study, user=annotator, rng=rng) is None
    assert len(seen) == 6


def test_pairs_held_by_the_client_are_excluded(study, annotator, items):
    restrict_pool(study, items[:3])  # 3 pairs
    held = [(items[0].pk, items[1].pk), (items[2].pk, items[1].pk)]
    for seed in range(10):
        pair = next_pair(study=study, user=annotator, exclude=held, rng=np.random.default_rng(seed))
        assert canonical(pair) == (items[0].pk, items[2].pk)


def test_pairs_answered_by_others_fewer_than_k_times_come_first(
    study, annotator, other_annotator, reviewer, items
):
    study.overlap = 3
    answer(study, other_annotator, items[7].pk, items[9].pk)
    answer(study, other_annotator, items[3].pk, items[4].pk)
    answer(study, reviewer, items[3].pk, items[4].pk)
    pair = next_pair(study=study, user=annotator, rng=np.random.default_rng(1))
    assert pair.reason == "overlap"
    assert canonical(pair) == (items[3].pk, items[4].pk)  # the fullest open pair first
    answer(study, annotator, items[3].pk, items[4].pk)  # now 3 answers: closed
    pair = next_pair(study=study, user=annotator, rng=np.random.default_rng(1))
    assert canonical(pair) == (items[7].pk, items[9].pk)
    answer(study, annotator, items[7].pk, items[9].pk)
    pair = next_pair(study=study, user=annotator, rng=np.random.default_rng(1))
    assert pair.reason == "random"


def test_overlap_one_means_no_repeats(study, annotator, other_annotator, items):
    study.overlap = 1
    answer(study, other_annotator, items[0].pk, items[1].pk)
    pair = next_pair(study=study, user=annotator, rng=np.random.default_rng(0))
    assert pair.reason == "random"


def test_gold_pairs_are_served_at_the_gold_rate(study, annotator, items):
    GoldPair.objects.create(study=study, item_a=items[0], item_b=items[1], label="comparable")
    study.gold_rate = 1.0
    pair = next_pair(study=study, user=annotator, rng=np.random.default_rng(0))
    assert pair.reason == "gold"
    assert canonical(pair) == (items[0].pk, items[1].pk)
    answer(study, annotator, items[0].pk, items[1].pk)
    assert next_pair(study=study, user=annotator, rng=np.random.default_rng(0)).reason == "random"
    study.gold_rate = 0.3
    reasons = Counter()
    GoldPair.objects.create(study=study, item_a=items[2], item_b=items[3], label="comparable")
    rng = np.random.default_rng(5)
    for _ in range(400):
        reasons[next_pair(study=study, user=annotator, rng=rng).reason] += 1
    assert 0.22 < reasons["gold"] / 400 < 0.38


def test_left_and_right_are_shuffled_per_presentation(study, annotator, items):
    restrict_pool(study, items[:2])
    rng = np.random.default_rng(0)
    lefts = Counter(next_pair(study=study, user=annotator, rng=rng).left.pk for _ in range(40))
    assert set(lefts) == {items[0].pk, items[1].pk}


def all_pairs_p(study, items, sigma):
    matrix = study.space.load_matrix(mmap=False).astype(np.float64)
    out = {}
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            z = matrix[a.row] - matrix[b.row]
            out[(a.pk, b.pk)] = 2 / (1 + np.exp(z @ sigma @ z))
    return out


def test_uncertainty_picks_the_pair_closest_to_one_half(study, annotator, items, no_control):
    study.strategy = Study.Strategy.UNCERTAINTY
    pool = items[:8]  # 28 pairs: 256 candidates cover them all
    restrict_pool(study, pool)
    sigma = np.diag(np.linspace(0.05, 0.6, study.space.dimension))
    make_metric_version(study=study, method=MetricVersion.Method.EXPLORE, sigma=sigma)
    make_metric_version(
        study=study, method=MetricVersion.Method.FACE, sigma=np.eye(study.space.dimension) * 50
    )  # must be ignored
    expected = all_pairs_p(study, pool, sigma)
    for seed in range(3):
        pair = next_pair(study=study, user=annotator, rng=np.random.default_rng(seed))
        assert pair.reason == "uncertainty"
        best = min(expected, key=lambda p: abs(expected[p] - 0.5))
        assert canonical(pair) == best
        assert pair.p_comparable == pytest.approx(expected[best])
        answer(study, annotator, *best)
        del expected[best]


def test_uncertainty_falls_back_to_random_without_an_explore_version(study, annotator):
    study.strategy = Study.Strategy.UNCERTAINTY
    failed = make_metric_version(
        study=study, method=MetricVersion.Method.EXPLORE, sigma=np.eye(study.space.dimension)
    )
    failed.status = MetricVersion.Status.FAILED
    failed.save()
    assert next_pair(study=study, user=annotator).reason == "random"


def test_stratified_over_samples_close_pairs(study, annotator, items, no_control):
    study.strategy = Study.Strategy.STRATIFIED
    pool = items  # 46 items, 1035 pairs
    matrix = study.space.load_matrix(mmap=False).astype(np.float64)
    rows = np.array([i.row for i in pool])
    d = np.linalg.norm(matrix[rows][:, None] - matrix[rows][None], axis=2)
    distances = d[np.triu_indices(len(pool), 1)]
    close = np.quantile(distances, 0.1)
    rng = np.random.default_rng(3)
    picks = [next_pair(study=study, user=annotator, rng=rng) for _ in range(300)]
    assert {p.reason for p in picks} == {"stratified"}
    share_close = np.mean([p.distance <= close for p in picks])
    assert share_close > 0.2  # random pairs would give about 0.1


def test_next_pair_reads_a_bounded_number_of_queries(
    study, annotator, other_annotator, items, django_assert_max_num_queries
):
    study.strategy = Study.Strategy.UNCERTAINTY
    make_metric_version(
        study=study, method=MetricVersion.Method.EXPLORE, sigma=np.eye(study.space.dimension)
    )
    for b in items[1:20]:
        answer(study, annotator, items[0].pk, b.pk)
    next_pair(study=study, user=annotator)  # warm the pool cache
    with django_assert_max_num_queries(7):  # (one of them: whether the drift flag watches)
        assert next_pair(study=study, user=annotator) is not None


@pytest.mark.slow
def test_the_next_pair_benchmark_runs_in_a_short_form():
    """The benchmark itself works (figures are printed, not asserted: see docs/annotation.md),
    at a fifth of ``--quick``'s judgments and a third of its repeats: every path it times runs
    the same (``--quick`` took 105 s of the suite on 2 busy cores; this ~25 s)."""
    result = run_benchmark(
        "next_pair.py",
        "--judgments",
        "4000",
        "--items",
        "1000",
        "--annotators",
        "20",
        "--repeats",
        "20",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "judgments stored" in out
    for line in [
        "overlap k=2 (overlap)",
        "strategy random (random)",
        "your last 10 answers",
        "review: 100 from the middle",
        "item prefix search",
    ]:
        assert line in out
    assert out.count("p95") == 12
    # half of a non-random strategy's picks are control pairs (strategies.py)
    for strategy in ("stratified", "uncertainty"):
        assert re.search(rf"strategy {strategy} \((control/)?{strategy}\)", out), out


def test_older_open_pairs_are_found_beyond_the_newest_window(
    study, annotator, other_annotator, reviewer, items, monkeypatch
):
    import annotation.labelling.sampling as sampling

    monkeypatch.setattr(sampling, "SCAN_ROWS", 4)
    sampling.first_id_cache_clear()
    answer(study, other_annotator, items[40].pk, items[41].pk)  # old and still open (1 < 2)
    for b in items[1:9]:  # then 8 pairs that two others closed: 16 newer rows
        answer(study, other_annotator, items[0].pk, b.pk)
        answer(study, reviewer, items[0].pk, b.pk)
    reasons = Counter()
    for seed in range(30):
        pair = next_pair(study=study, user=annotator, rng=np.random.default_rng(seed))
        reasons[pair.reason] += 1
        if pair.reason == "overlap":
            assert canonical(pair) == (items[40].pk, items[41].pk)
    assert reasons["overlap"] > 0


@pytest.mark.parametrize("strategy", [Study.Strategy.TARGETED, Study.Strategy.INFORMATION])
def test_active_strategies_fall_back_to_random_without_an_explore_version(
    study, annotator, strategy
):
    study.strategy = strategy
    assert next_pair(study=study, user=annotator).reason == "random"


def small_pool_with_explore(study, items, strategy) -> dict:
    """8 pool items (28 pairs: 256 candidates cover them all), an EXPLORE version, and every
    pair's P(comparable) under it."""
    study.strategy = strategy
    pool = items[:8]
    restrict_pool(study, pool)
    sigma = np.diag(np.linspace(0.05, 0.6, study.space.dimension))
    make_metric_version(study=study, method=MetricVersion.Method.EXPLORE, sigma=sigma)
    return all_pairs_p(study, pool, sigma)


def test_targeted_offers_pairs_near_the_target_probability(study, annotator, items, no_control):
    from annotation.labelling.strategies import TARGET_P

    expected = small_pool_with_explore(study, items, Study.Strategy.TARGETED)
    nearest = min(expected, key=lambda pair: abs(expected[pair] - TARGET_P))
    picks = [
        next_pair(study=study, user=annotator, rng=np.random.default_rng(s)) for s in range(20)
    ]
    assert {pick.reason for pick in picks} == {"targeted"}
    for pick in picks:
        assert pick.p_comparable == pytest.approx(expected[canonical(pick)])
    # One pick in twenty explores (uniform); the others are the pair nearest the target.
    assert sum(canonical(pick) == nearest for pick in picks) >= 17


def test_information_offers_a_scored_unanswered_pair(study, annotator, items, no_control):
    expected = small_pool_with_explore(study, items, Study.Strategy.INFORMATION)
    seen = set()
    for seed in range(5):
        pick = next_pair(study=study, user=annotator, rng=np.random.default_rng(seed))
        assert pick.reason == "information"
        assert pick.p_comparable == pytest.approx(expected[canonical(pick)])
        assert canonical(pick) not in seen
        seen.add(canonical(pick))
        answer(study, annotator, *canonical(pick))


@pytest.fixture
def no_control(monkeypatch):
    """The strategy's own picks alone: no control pairs (strategies.py: ``CONTROL_SHARE``)."""
    from annotation.labelling import strategies

    monkeypatch.setattr(strategies, "CONTROL_SHARE", 0.0)


def test_most_of_a_targeted_studys_pairs_are_uniform_control_pairs(study, annotator, items):
    from annotation.labelling.strategies import CONTROL_PICKS, CONTROL_SHARE, pair_control

    study.strategy = Study.Strategy.TARGETED
    sigma = np.diag(np.linspace(0.05, 0.6, study.space.dimension))
    make_metric_version(study=study, method=MetricVersion.Method.EXPLORE, sigma=sigma)
    rng = np.random.default_rng(7)
    picks = [next_pair(study=study, user=annotator, rng=rng) for _ in range(200)]
    control = np.array([pair_control(*np.array([canonical(p)]).T)[0] for p in picks])
    reasons = np.array([p.reason for p in picks])
    assert set(reasons) <= {"control", "targeted"}
    # control pairs are offered only as control draws, and every control draw is one
    assert np.array_equal(control, reasons == "control")
    assert abs(np.mean(reasons == "control") - CONTROL_PICKS) < 0.1
    # a random study offers control pairs as it offers any: uniformly
    study.strategy = Study.Strategy.RANDOM
    picks = [next_pair(study=study, user=annotator, rng=rng) for _ in range(200)]
    assert {p.reason for p in picks} == {"random"}
    share = np.mean([pair_control(*np.array([canonical(p)]).T)[0] for p in picks])
    assert abs(share - CONTROL_SHARE) < 0.1


def _checked(study, sigma, z, sample="control", level=0.001, at=400):
    """A version on ``at`` answers whose stored flagging check (learning/versions/drift.py)
    found ``z``; ``z`` None: a version between checks."""
    check = {"z": z, "sample": sample, "level": level}
    drift = {"window": {"check": check}, "published": None, "spent_at": at}
    return make_metric_version(
        study=study,
        method=MetricVersion.Method.EXPLORE,
        sigma=sigma,
        judgment_watermark=at,  # (one version per watermark)
        diagnostics={"drift": drift if z is not None else {"window": None}},
    )


def test_while_the_drift_flag_watches_every_targeted_pick_is_a_control_pair(
    study, annotator, items
):
    from annotation.labelling.strategies import CONTROL_PICKS, pair_control
    from learning.versions.drift import WATCH_Z, watching

    study.strategy = Study.Strategy.TARGETED
    sigma = np.diag(np.linspace(0.05, 0.6, study.space.dimension))
    _checked(study, sigma, z=-WATCH_Z - 0.2)  # short of its promise: look again
    assert watching(study_id=study.pk)
    rng = np.random.default_rng(8)
    picks = [next_pair(study=study, user=annotator, rng=rng) for _ in range(60)]
    assert {p.reason for p in picks} == {"control"}
    assert all(pair_control(*np.array([canonical(p)]).T)[0] for p in picks)
    # a newer version between checks (nothing spent) keeps the watch; a newer check ends it
    _checked(study, sigma, z=None, at=420)
    assert watching(study_id=study.pk)
    _checked(study, sigma, z=-WATCH_Z + 0.2, at=500)
    assert not watching(study_id=study.pk)
    picks = [next_pair(study=study, user=annotator, rng=rng) for _ in range(200)]
    assert abs(np.mean([p.reason == "control" for p in picks]) - CONTROL_PICKS) < 0.1
    # a random study's check (every answer) or one only shown (no level) sets no watch
    _checked(study, sigma, z=-2.0, sample="all", at=600)
    assert not watching(study_id=study.pk)
    _checked(study, sigma, z=-2.0, level=None, at=700)
    assert not watching(study_id=study.pk)
