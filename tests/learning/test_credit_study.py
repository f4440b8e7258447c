"""Issue 25, done when: a record study built from a real table (UCI German credit: 1,000
records, 61 features of φ), simulated annotators who follow a fixed rule (credit amount and
duration matter, sex does not) with 10 % of answers flipped, 20 answers at a time through the
refit service up to 200. Every version the app offers as the study's current metric scores on
20,000 fresh pairs from the same rule at least as well as the constant prediction (the observed
comparable rate) within 0.01; the current version at 200 answers beats it clearly; the latest
EXPLORE version's held-out gain interval holds its gain on the fresh pairs. Versions that are
not informative are stored and say why."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.credit import (
    CATEGORICAL,
    NUMERIC,
    CreditDataMissing,
    CreditRule,
    german_frame,
    random_pairs,
)
from learning.core._explore_start import best_scale
from learning.core.explore import pair_loglik
from learning.models import MetricVersion
from learning.refits import service
from learning.versions import selectors
from learning.versions.sigmas import sigma_of, study_metric
from spaces.models import Item
from spaces.records.create import record_space_create

from ..conftest import require
from .synthetic import judgments_create, study_create

FRESH = 20_000
TOLERANCE = 0.01


def _frame():
    try:
        return german_frame()
    except CreditDataMissing as error:
        require(False, str(error))


def _constant_loglik(rate: float, y: np.ndarray) -> float:
    return float(np.mean(y * np.log(rate) + (1 - y) * np.log1p(-rate)))


def _version_loglik(version, z, y, train_z, train_y) -> float:
    """Mean log-likelihood of the fresh pairs under the version's metric. EXPLORE's Sigma is a
    probability model as it stands; FACE's has no scale, so it gets the one the study's answers
    prefer (as EXPLORE's prior scale is chosen)."""
    sigma = np.asarray(sigma_of(version))
    d = np.einsum("ij,jk,ik->i", z, sigma, z)
    if version.method == MetricVersion.Method.FACE:
        q = np.einsum("ij,jk,ik->i", train_z, sigma, train_z)
        c, _ = best_scale(q, train_y, 1e6 / q.mean(), np.ones(q.size))
        d = c * d
    return float(np.mean(pair_loglik(np.maximum(d, 0.0), y)))


@pytest.fixture
def credit_study(db, media_root):
    frame = _frame()
    space = record_space_create(
        name="german-credit",
        frame=frame,
        numeric=NUMERIC,
        categorical=CATEGORICAL,
        label_column="credit",
        key_column="key",
    )
    items = list(Item.objects.filter(space=space).order_by("row"))
    study, users = study_create(space, name="credit study", annotators=2)
    return frame, space, items, study, users


@pytest.mark.slow
@pytest.mark.parametrize("deterministic", [False, True], ids=["noisy", "deterministic"])
def test_every_current_version_is_never_worse_than_the_constant(credit_study, deterministic):
    frame, space, items, study, users = credit_study
    rule = CreditRule.of(frame, flip=0.1, deterministic=deterministic)
    matrix = space.load_matrix()
    assert matrix.shape == (1000, 61)
    rng = np.random.default_rng(25)
    fresh_a, fresh_b = random_pairs(FRESH, np.random.default_rng(2025))
    fresh_y = rule.answers(fresh_a, fresh_b, np.random.default_rng(2026)).astype(np.float64)
    fresh_z = matrix[fresh_a] - matrix[fresh_b]
    seen_a, seen_b, seen_y = [], [], []
    report = []
    for step in range(10):
        a, b = random_pairs(20, rng)
        y = rule.answers(a, b, rng)
        judgments_create(study, items, a, b, y, annotator=users[step % 2])
        seen_a, seen_b, seen_y = [*seen_a, *a], [*seen_b, *b], [*seen_y, *y]
        service.refit_study(study_id=study.pk)
        current = selectors.version_current(study_id=study.pk)
        hook = study_metric(study_id=study.pk)
        assert (hook and hook.version_id) == (current and current.pk)
        train_y = np.asarray(seen_y, dtype=np.float64)
        constant = _constant_loglik(float(np.clip(train_y.mean(), 1e-6, 1 - 1e-6)), fresh_y)
        latest = selectors.version_latest_ready(study_id=study.pk, method="explore")
        line = (20 * (step + 1), constant, latest and latest.informative, current)
        train_z = matrix[seen_a] - matrix[seen_b]
        if current is not None:
            score = _version_loglik(current, fresh_z, fresh_y, train_z, train_y)
            report.append((*line, score))
            assert score >= constant - TOLERANCE, report
        else:
            report.append((*line, None))
    # the current version at 200 answers, if any, clearly beats the constant; 200 answers on
    # 1,000 people are too few for a first verdict on new people (issue 35): "cannot tell yet"
    if report[-1][-1] is not None:
        assert report[-1][-1] > report[-1][1] + 0.02, report
    else:
        assert latest.verdict == "cannot tell yet", latest.diagnostics["validity"]
        assert "more answers" in latest.diagnostics["validity"]["needs"]
    # the latest EXPLORE version's held-out gain over the constant is honest: its interval
    # holds what 20,000 fresh pairs find (before issue 25's fold priors, a FACE prior fitted on
    # the held-out pairs themselves made it promise several times more); current when it is
    # informative
    gain = _version_loglik(latest, fresh_z, fresh_y, train_z, train_y) - report[-1][1]
    low, high = latest.diagnostics["heldout_baselines"]["constant"]["gain_ci"]
    assert low <= gain <= high, (low, gain, high)
    assert gain > 0.0, report
    if latest.informative:
        assert current == latest, report
    # a version that is not informative says why, with its figures
    for version in MetricVersion.objects.filter(study=study, method="explore", informative=False):
        assert version.diagnostics["informative"]["missing"]
        assert "new items" in version.diagnostics["informative"]["summary"]
