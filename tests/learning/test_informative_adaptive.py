"""Validity for new people under an adaptive strategy (learning/refits/newitems.py: ``scoring``,
annotation/labelling/strategies.py: ``control_only``): the strategy's own picks are pairs where
the current metric is unsure, so the verdict and its re-check read only the answers to control
pairs — uniform draws whatever the strategy — against those pairs' own comparable rate."""

from __future__ import annotations

import numpy as np

from annotation.labelling.strategies import TARGET_P, control_only, hash_control, pair_control
from annotation.models import Study
from learning.models import MetricVersion
from learning.refits import service
from learning.refits.newitems import RATE_MIN, scoring
from learning.refits.pairs import PairData, pair_hash_unit
from learning.versions import selectors
from learning.versions.new_items import INFORMATIVE, NOT_INFORMATIVE, item_split

from .synthetic import SIGMA0, judged_study, judgments_create, simulate


def test_every_strategy_but_random_reads_control_pairs_only():
    assert not control_only(Study.Strategy.RANDOM)
    for strategy in Study.Strategy.values:
        assert control_only(strategy) == (strategy != "random")


def test_scoring_keeps_held_out_control_answers_against_the_control_rate():
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 300, size=(2, 4000))
    a, b = np.minimum(a, b)[a != b], np.maximum(a, b)[a != b]
    unit = pair_hash_unit(a, b)
    y = (rng.random(a.size) < np.where(hash_control(unit), 0.2, 0.7)).astype(float)
    pairs = PairData(row_a=a, row_b=b, y=y, held_out=unit < 0.2, hash=unit)
    split = item_split(a, b)
    control = hash_control(unit)
    for only in (False, True):
        got, scored, rates = scoring(pairs, only)
        assert np.array_equal(got.held, split.held)
        base = control if only else np.ones(a.size, dtype=bool)
        assert np.array_equal(scored, (split.held >= 0) & base)
        for k in range(split.k):
            keep = split.train(k) & base
            assert keep.sum() >= RATE_MIN
            assert np.isclose(rates[k], y[keep].mean())
    assert scoring(pairs, True)[2].max() < 0.3 < scoring(pairs, False)[2].min()


def test_too_few_control_answers_fall_back_to_every_training_answer():
    a, b = np.arange(0, 60, 2), np.arange(1, 61, 2)
    unit = np.full(a.size, 734_003.75 / (1 << 20))  # no control pair at all
    assert not hash_control(unit).any()
    y = np.tile([0.0, 1.0, 1.0], 10)
    pairs = PairData(row_a=a, row_b=b, y=y, held_out=np.zeros(a.size, bool), hash=unit)
    split, scored, rates = scoring(pairs, True)
    assert not scored.any()
    for k in range(split.k):
        assert np.isclose(rates[k], y[split.train(k)].mean())


def test_the_verdict_under_an_adaptive_strategy_reads_control_answers_only(db, media_root):
    """Half the answers on uniform control pairs, half on the pairs ``targeted`` picks itself
    (P(comparable) nearest its target, where a metric is unsure), all following the rule: under
    ``targeted`` the version is judged on the control pairs and is informative; the same answers
    under ``random`` are all scored, and the picked pairs pull the gain down. One study, fitted
    under each strategy in turn: the same items, hence the same control pairs and held-out items.
    Two studies of their own (800 answers of each kind) differed in both: over 30 offsets of the
    item ids the gap was +0.064 ± 0.045, at most +0.02 in 6. One study with 1,500 of each, the
    strategy's picks the nearest to its target of 24,000 pairs: +0.079 ± 0.018, least +0.044."""
    study, items, users, matrix = judged_study(
        media_root, name="adaptive", n_items=200, answers=0, seed=5
    )
    a, b, y = simulate(matrix, 24000, sigma0=SIGMA0, seed=6)
    z = matrix[a] - matrix[b]
    p = 2.0 / (1.0 + np.exp(np.einsum("ij,jk,ik->i", z, SIGMA0, z)))
    ids = np.array([item.pk for item in items])
    control = pair_control(np.minimum(ids[a], ids[b]), np.maximum(ids[a], ids[b]))
    own = np.flatnonzero(~control)[np.argsort(np.abs(p[~control] - TARGET_P))[:1500]]
    keep = np.sort(np.concatenate([np.flatnonzero(control)[:1500], own]))
    judgments_create(study, items, a[keep], b[keep], y[keep], annotator=users[0])
    figures = {}
    for strategy in (Study.Strategy.TARGETED, Study.Strategy.RANDOM):
        MetricVersion.objects.filter(study=study).delete()  # the same answers fitted afresh
        study.strategy = strategy
        study.save(update_fields=["strategy"])
        service.refit_study(study_id=study.pk)
        version = MetricVersion.objects.get(study=study, method="explore")
        figures[strategy] = version.diagnostics["validity"] | {"verdict_field": version.verdict}
    adaptive, uniform = figures[Study.Strategy.TARGETED], figures[Study.Strategy.RANDOM]
    assert adaptive["sample"] == "control"
    assert uniform["sample"] == "all"
    assert "control pairs of" in adaptive["summary"]
    assert "control" not in uniform["summary"]
    assert 0.35 < adaptive["pairs"] / uniform["pairs"] < 0.65
    assert adaptive["verdict"] == INFORMATIVE == adaptive["verdict_field"]
    assert adaptive["gain"] > uniform["gain"] + 0.02


def test_under_an_adaptive_strategy_only_control_answers_can_cost_the_current_version_its_place(
    db, media_root
):
    """The strategy's own picks are chosen where the metric is unsure: the re-check reads the
    control pairs' answers only (uniform draws). Reversed answers on the strategy's pairs cost no
    version its place; reversed answers on control pairs take it from each version they follow,
    counted without the strategy's pairs."""
    study, items, users, matrix = judged_study(
        media_root, name="recheck-adaptive", n_items=200, answers=1300, seed=5
    )
    study.strategy = Study.Strategy.TARGETED
    study.save(update_fields=["strategy"])
    service.refit_study(study_id=study.pk)
    first = MetricVersion.objects.get(study=study, method="explore")
    assert selectors.version_current(study_id=study.pk) == first
    a, b, y = simulate(matrix, 3000, sigma0=SIGMA0, seed=77)
    ids = np.array([item.pk for item in items])
    control = pair_control(np.minimum(ids[a], ids[b]), np.maximum(ids[a], ids[b]))
    own = np.flatnonzero(~control)[:300]
    judgments_create(study, items, a[own], b[own], 1 - y[own], annotator=users[1])
    service.refit_study(study_id=study.pk)
    second = MetricVersion.objects.filter(study=study, method="explore").latest("id")
    assert {first.verdict, second.verdict} == {INFORMATIVE}  # the strategy's pairs: no loss
    assert selectors.version_current(study_id=study.pk) == second
    picked = np.flatnonzero(control)[:600]
    judgments_create(study, items, a[picked], b[picked], 1 - y[picked], annotator=users[1])
    service.refit_study(study_id=study.pk)
    for version in (second, first):
        version.refresh_from_db()
        recheck = version.diagnostics["validity"]["recheck"]
        assert recheck["pairs"] == 600  # the first's 300 later answers on own pairs not read
        assert recheck["gain"] < 0
        assert version.verdict == NOT_INFORMATIVE
    assert selectors.version_current(study_id=study.pk) not in (first, second)
