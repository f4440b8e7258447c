"""Validity for new people (learning/versions/new_items.py, learning/evaluation/informative.py,
learning/refits/newitems.py): the three verdicts on hand-made figures; end to end, a study whose
answers follow a rule on the features is judged informative and current while coin flips are
not; a derived Sigma is judged by its derivation on the same held-out items, and never
informative by default; the current version loses its place when the answers after it say it
predicts worse than the constant."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from scipy.stats import t as student_t

from learning.models import MetricVersion
from learning.refits import service
from learning.versions import selectors, storage
from learning.versions.new_items import (
    BOOTSTRAP_T_MAX_PAIRS,
    CANNOT_TELL,
    INFORMATIVE,
    LAPSE,
    MIN_ITEMS,
    MIN_PAIRS,
    NOT_INFORMATIVE,
    Figures,
    distance_loglik,
    dyadic_se,
    effective_df,
    gain_interval,
    item_split,
    new_items_verdict,
    scored_loglik,
)
from learning.versions.sigmas import sigma_of, study_metric

from .synthetic import SIGMA0, judged_study, judgments_create, simulate

CONTRACT = {
    "verdict",
    "basis",
    "gain",
    "gain_interval",
    "auc",
    "items",
    "pairs",
    "needs",
    "summary",
    "judged_at_watermark",
}


def test_the_three_verdicts_on_hand_made_figures():
    enough = {"items": MIN_ITEMS, "pairs": MIN_PAIRS}
    good = new_items_verdict(Figures(0.05, [0.01, 0.09], 0.7, **enough), answers=500)
    assert good["verdict"] == INFORMATIVE
    assert good["needs"] == ""
    assert good["basis"] == "new items"
    assert "+0.050" in good["summary"]
    bad = new_items_verdict(Figures(-0.02, [-0.06, 0.02], 0.5, **enough), answers=500)
    assert bad["verdict"] == NOT_INFORMATIVE
    assert bad["needs"]
    # gain 0.01 ± 0.02 on 100 pairs: 4× the scored pairs, one answer in 5 scored: 1,500 more
    unsure = new_items_verdict(Figures(0.01, [-0.01, 0.03], 0.6, **enough), answers=500)
    assert unsure["verdict"] == CANNOT_TELL
    assert "about 1500 more answers" in unsure["needs"]
    # under an adaptive strategy only control answers are scored: 10 answers for each one
    fewer = new_items_verdict(Figures(0.01, [-0.01, 0.03], 0.6, **enough), answers=1000)
    assert "about 3000 more answers" in fewer["needs"]
    # too few items or answers: cannot tell, whatever the figures say
    small = new_items_verdict(Figures(0.3, [0.2, 0.4], 0.9, items=25, pairs=30), answers=150)
    assert small["verdict"] == CANNOT_TELL
    assert f"{MIN_ITEMS - 25} more items" in small["needs"]
    assert f"about {(MIN_PAIRS - 30) * 5} more answers" in small["needs"]
    nothing = new_items_verdict(Figures(None, None, None, 0, 0), answers=0)
    assert nothing["verdict"] == CANNOT_TELL


def test_item_folds_hold_out_items_and_drop_pairs_across_the_split():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 200, 5000), rng.integers(0, 200, 5000)
    split = item_split(a, b)
    for k in range(split.k):
        held_items = set(a[split.held == k]) | set(b[split.held == k])
        train = split.train(k)
        assert not held_items & (set(a[train]) | set(b[train]))  # no answer about them
        across = (split.fold_a == k) != (split.fold_b == k)
        assert not np.any(train & across)
        assert not np.any((split.held == k) & across)
    assert 0.15 < np.mean(split.held >= 0) < 0.25  # about 1/5 of the pairs scored


def _shared_item_variance(gain, ia, ib):
    """Σ over ordered answer pairs (p, q) that share at least one item of e_p·e_q, by loops."""
    e = gain - gain.mean()
    total = 0.0
    for p in range(gain.size):
        for q in range(gain.size):
            if {ia[p], ib[p]} & {ia[q], ib[q]}:
                total += e[p] * e[q]
    return total


def test_dyadic_se_matches_a_hand_computed_case():
    # items 0..3; the pair {1, 2} answered twice (one cluster); the pair {2, 3} shares item 2
    gain = np.array([1.0, 2.0, 3.0, 4.0, 6.0])
    ia, ib = np.array([0, 0, 1, 2, 2]), np.array([1, 2, 2, 3, 1])
    # by hand: e = gain - 3.2 = (-2.2, -1.2, -0.2, 0.8, 2.8); every answer but (0,1)/(2,3)
    # shares an item with every other, so the sum is (Σe)² - 2·e0·e3 = 0 + 2·1.76 = 3.52
    by_hand = 3.52
    assert np.isclose(_shared_item_variance(gain, ia, ib), by_hand)
    m, n = 4, 5
    assert np.isclose(dyadic_se(gain, ia, ib), np.sqrt(by_hand * m / (m - 1)) / n)


def test_dyadic_se_of_answers_without_shared_items_is_the_plain_standard_error():
    rng = np.random.default_rng(3)
    gain = rng.normal(size=40)
    ia, ib = np.arange(0, 80, 2), np.arange(1, 80, 2)  # 40 disjoint pairs of 80 items
    plain = np.sqrt(np.sum((gain - gain.mean()) ** 2)) / gain.size
    assert np.isclose(dyadic_se(gain, ia, ib), plain * np.sqrt(80 / 79))
    # the same gains as 20 pairs answered twice each: each repeat is one cluster
    ia2, ib2 = np.repeat(np.arange(0, 40, 2), 2), np.repeat(np.arange(1, 40, 2), 2)
    assert np.isclose(
        dyadic_se(gain, ia2, ib2),
        np.sqrt(_shared_item_variance(gain, ia2, ib2) * 40 / 39) / 40,
    )


def test_gain_interval_is_skewed_like_the_gains_and_normal_past_its_pair_limit():
    rng = np.random.default_rng(5)
    ia, ib = np.arange(0, 400, 2), np.arange(1, 400, 2)  # 200 pairs of distinct items
    se = lambda g: dyadic_se(g, ia, ib)  # noqa: E731
    gain = 0.2 - rng.lognormal(sigma=1.2, size=200)  # a long lower tail, as rare far pairs give
    low, high = gain_interval(gain, ia, ib)
    mean = gain.mean()
    assert mean - low > 1.1 * (high - mean) > 0  # reaches further toward the tail
    floor = student_t.ppf(0.975, effective_df(gain, np.arange(200))) * se(gain)
    assert high - mean >= floor - 1e-12  # the short side no nearer than the t floor
    assert gain_interval(gain, ia, ib) == [low, high]  # seeded: the same figures every time
    symmetric = rng.normal(size=200)
    low, high = gain_interval(symmetric, ia, ib)
    assert np.isclose(symmetric.mean() - low, high - symmetric.mean(), rtol=0.15)
    n = BOOTSTRAP_T_MAX_PAIRS + 1
    big = rng.normal(size=n)
    low, high = gain_interval(big, np.arange(n), np.arange(n, 2 * n))
    df = effective_df(big, np.arange(n))
    assert 0.8 * n < df < 1.2 * n  # normal gains: about one degree of freedom per pair
    half = student_t.ppf(0.975, df) * dyadic_se(big, np.arange(n), np.arange(n, 2 * n))
    assert np.allclose([low, high], [big.mean() - half, big.mean() + half])
    assert gain_interval(np.ones(3), np.zeros(3, int), np.ones(3, int)) is None  # 2 items: no error


def test_a_few_costly_pairs_widen_the_interval_to_student_t_with_few_degrees_of_freedom():
    """Four of 200 pairs carry most of the error: the error is itself noisy (Satterthwaite's
    2D/(κ − 1), by hand here), and neither end of the interval is nearer the mean than t with
    those degrees of freedom — resamples of the same four pairs would not show it."""
    ia, ib = np.arange(0, 400, 2), np.arange(1, 400, 2)
    gain = np.full(200, 0.1)
    gain[:4] = -4.0
    u = gain - gain.mean()
    kurtosis = np.mean(u**4) / np.mean(u**2) ** 2
    df = effective_df(gain, np.arange(200))
    assert df == pytest.approx(2 * 200 / (kurtosis - 1))
    assert 7 < df < 9  # against 200 pairs
    low, high = gain_interval(gain, ia, ib)
    floor = student_t.ppf(0.975, df) * dyadic_se(gain, ia, ib)
    assert gain.mean() - low >= floor - 1e-12
    assert high - gain.mean() >= floor - 1e-12
    assert high - gain.mean() > 1.05 * 1.959964 * dyadic_se(gain, ia, ib)  # wider than normal


def test_scored_loglik_is_bounded_and_the_constant_scores_like_the_fit():
    y = np.array([1.0, 0.0, 1.0, 0.5])
    assert np.all(scored_loglik(np.array([0.0, 1.0, 0.0, 1.0]), y) >= np.log(LAPSE) - 1e-12)
    # d = 0 predicts comparable for sure; at the lapse that is 1 - LAPSE
    assert np.isclose(distance_loglik(np.zeros(1), np.ones(1))[0], np.log1p(-LAPSE))
    # a distance and the constant that predict the same P score the same
    d = np.array([0.3, 2.0])
    p = 2.0 / (1.0 + np.exp(d))
    assert np.allclose(distance_loglik(d, y[:2]), scored_loglik(p, y[:2]))


def test_a_rule_on_the_features_is_informative_for_new_people(db, media_root):
    study, *_ = judged_study(media_root, name="rule", n_items=200, answers=900, seed=5)
    service.refit_study(study_id=study.pk)
    (version,) = MetricVersion.objects.filter(study=study, method="explore")
    validity = version.diagnostics["validity"]
    assert set(validity) >= CONTRACT
    assert validity["verdict"] == INFORMATIVE == version.verdict
    assert version.informative
    assert validity["gain_interval"][0] > 0
    assert validity["items"] >= MIN_ITEMS
    assert validity["judged_at_watermark"] == version.judgment_watermark
    assert "heldout_loglik" in version.diagnostics  # the pair-level figures beside
    assert selectors.version_current(study_id=study.pk) == version
    assert version.is_published or MetricVersion.objects.get(pk=version.pk).is_published


def test_coin_flips_are_never_current_nor_published(db, media_root, client):
    def coins(rng, n):
        return rng.integers(0, 2, size=n)

    study, *_ = judged_study(
        media_root, name="coins", n_items=120, answers=400, seed=3, labels=coins
    )
    service.refit_study(study_id=study.pk)
    (version,) = MetricVersion.objects.filter(study=study, method="explore")
    assert version.status == "ready", version.error
    assert version.verdict in (NOT_INFORMATIVE, CANNOT_TELL)
    assert not version.informative
    assert version.diagnostics["validity"]["needs"]
    assert not version.is_published
    assert any("not yet informative" in f for f in version.diagnostics["auto_publish"]["failed"])
    assert selectors.version_current(study_id=study.pk) is None
    assert study_metric(study_id=study.pk) is None
    client.force_login(get_user_model().objects.create_user("staff-inf", is_staff=True))
    page = client.get(reverse("learning:study-dashboard", args=[study.pk])).content.decode()
    assert 'data-testid="not-informative"' in page
    assert "new items" in page


def test_a_derived_sigma_is_judged_by_its_derivation_and_never_informative_by_default(
    db, media_root
):
    study, *_ = judged_study(media_root, name="derive", n_items=200, answers=900, seed=5)
    service.refit_study(study_id=study.pk)
    fitted = MetricVersion.objects.get(study=study, method="explore")
    assert fitted.verdict == INFORMATIVE
    plain = storage.metric_version_create(
        study=study, method="explore", sigma=sigma_of(fitted), label="copy", parent=fitted
    )
    assert plain.verdict == CANNOT_TELL
    assert not plain.informative
    same = storage.metric_version_create(
        study=study,
        method="explore",
        sigma=sigma_of(fitted),
        label="same",
        parent=fitted,
        derive=lambda s: s,
    )
    assert same.verdict == INFORMATIVE
    assert np.isclose(same.diagnostics["validity"]["gain"], fitted.diagnostics["validity"]["gain"])
    # the two relevant directions projected out: what is left predicts nothing on new people
    keep = np.diag([0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    out = storage.metric_version_create(
        study=study,
        method="explore",
        sigma=keep @ sigma_of(fitted) @ keep,
        label="out",
        parent=fitted,
        derive=lambda s: keep @ s @ keep,
    )
    assert out.verdict != INFORMATIVE
    assert not out.informative
    assert out.diagnostics["validity"]["gain"] < fitted.diagnostics["validity"]["gain"]
    assert MetricVersion(study=study).informative is False  # the field's default


def test_the_current_version_loses_its_place_when_later_answers_contradict_it(db, media_root):
    study, items, users, matrix = judged_study(
        media_root, name="recheck", n_items=200, answers=900, seed=5
    )
    service.refit_study(study_id=study.pk)
    first = MetricVersion.objects.get(study=study, method="explore")
    assert selectors.version_current(study_id=study.pk) == first
    # the annotators turn the rule around: distant pairs comparable, close ones not
    a, b, y = simulate(matrix, 300, sigma0=SIGMA0, seed=77)
    judgments_create(study, items, a, b, 1 - y, annotator=users[1])
    service.refit_study(study_id=study.pk)
    first.refresh_from_db()
    recheck = first.diagnostics["validity"]["recheck"]
    assert recheck["pairs"] == 300
    assert recheck["gain"] < 0
    assert first.verdict == NOT_INFORMATIVE
    assert not first.informative
    assert "lost its place" in first.diagnostics["validity"]["summary"]
    current = selectors.version_current(study_id=study.pk)
    assert current is None or current.pk != first.pk


def test_face_versions_are_judged_too(db, media_root):
    study, *_ = judged_study(media_root, name="face", n_items=200, answers=900, seed=5)
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.fit_face = True
    learning.face_pairs_as_groups = True
    learning.face_components = 2
    learning.save()
    service.refit_study(study_id=study.pk)
    face = MetricVersion.objects.get(study=study, method="face")
    validity = face.diagnostics["validity"]
    assert set(validity) >= CONTRACT
    assert validity["pairs"] > 0
    assert face.verdict == validity["verdict"]
    assert face.informative == (face.verdict == INFORMATIVE)
