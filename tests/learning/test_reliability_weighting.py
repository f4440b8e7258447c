"""Answers weighted by annotator reliability in the refit: setting, diagnostics, pages."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

from annotation.models import GoldPair, Membership, PairJudgment
from learning.models import MetricVersion
from learning.refits import service, snapshots
from learning.versions import selectors

from .synthetic import judgments_create, simulate, space_create, study_create

FLIPS = [0.0, 0.0, 0.0, 0.05, 0.4]  # the last annotator is noisy


@pytest.fixture
def crowd_world(db, media_root):
    """400 pairs, each answered by 3 of 5 annotators (shared true label, flipped per rate);
    the first 40 pairs are gold pairs (answers marked ``is_gold``)."""
    space, items = space_create(media_root, n_items=80)
    study, users = study_create(space, annotators=len(FLIPS))
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.fit_face = False
    learning.save()
    row_a, row_b, truth = simulate(space.load_matrix(), 400, seed=3)
    rng = np.random.default_rng(4)
    rows = []
    for k, (a, b, t) in enumerate(zip(row_a, row_b, truth, strict=True)):
        first, second = sorted((items[int(a)], items[int(b)]), key=lambda item: item.pk)
        if k < 40:
            GoldPair.objects.create(
                study=study, item_a=first, item_b=second,
                label="comparable" if t else "incomparable",
            )  # fmt: skip
        for who in rng.choice(len(FLIPS), 3, replace=False):
            y = t ^ (rng.random() < FLIPS[who])
            rows.append(
                PairJudgment(
                    study=study, item_a=first, item_b=second, annotator=users[who],
                    label="comparable" if y else "incomparable", is_gold=k < 40,
                )
            )  # fmt: skip
    PairJudgment.objects.bulk_create(rows)
    return study, users


def explore_version(study) -> MetricVersion:
    return MetricVersion.objects.get(study=study, method="explore", status="ready")


def test_the_refit_estimates_each_annotators_flip_rate_by_default(crowd_world):
    study, users = crowd_world
    service.refit_study(study_id=study.pk)
    diag = explore_version(study).diagnostics
    assert diag["weighting"] == "reliability"
    rel = {row["annotator"]: row for row in diag["reliability"]}
    assert set(rel) == {u.pk for u in users}
    noisy = rel[users[-1].pk]
    assert noisy["interval"][0] <= 0.4 <= noisy["interval"][1]
    assert noisy["flip_rate"] == max(row["flip_rate"] for row in rel.values())
    for user in users[:3]:  # the reliable ones: intervals reach down to 0 and stay low
        assert rel[user.pk]["interval"][1] < 0.15
    assert sum(row["answers"] for row in rel.values()) == 1200


def test_gold_answers_are_read_with_their_known_label(crowd_world):
    study, _ = crowd_world
    snapshot = snapshots.judgment_snapshot(
        study_id=study.pk, watermark=10**9, excluded_annotators=[]
    )
    gold = {
        (a, b): label for a, b, label in GoldPair.objects.values_list("item_a", "item_b", "label")
    }
    for a, b, code in zip(snapshot.item_a, snapshot.item_b, snapshot.gold, strict=True):
        label = gold.get((a, b))
        assert code == (-1 if label is None else int(label == "comparable"))


def test_weighting_off_fits_plain_explore_and_says_so(crowd_world):
    study, _ = crowd_world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.weight_by_reliability = False
    learning.save()
    service.refit_study(study_id=study.pk)
    diag = explore_version(study).diagnostics
    assert diag["weighting"] == "none"
    assert "reliability" not in diag


def test_majority_policy_cannot_weight_answers_and_says_why(crowd_world):
    study, _ = crowd_world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.repeat_policy = "majority"
    learning.save()
    service.refit_study(study_id=study.pk)
    assert explore_version(study).diagnostics["weighting"].startswith("none (majority policy")


def test_version_page_and_dashboard_show_the_weighting_and_each_reliability(crowd_world, client):
    study, users = crowd_world
    service.refit_study(study_id=study.pk)
    version = explore_version(study)
    reviewer = users[0]
    Membership.objects.filter(study=study, user=reviewer).update(role="reviewer")
    client.force_login(reviewer)
    page = client.get(reverse("learning:version-detail", args=[version.pk])).content.decode()
    assert "by annotator reliability" in page
    dashboard = client.get(reverse("learning:study-dashboard", args=[study.pk])).content.decode()
    flip = {row["annotator"]: row for row in version.diagnostics["reliability"]}[users[-1].pk]
    assert f"{1 - flip['flip_rate']:.2f}" in dashboard
    assert "Reliability [95%]" in dashboard


def test_few_distinct_pairs_answered_twice_fit_unweighted_and_say_why(db, media_root):
    space, items = space_create(media_root, n_items=40, name="twice")
    study, users = study_create(space, name="twice study", annotators=2)
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.fit_face = False
    learning.save()
    row_a, row_b, truth = simulate(space.load_matrix(), 15, seed=5)
    truth[:2] = [0, 1]  # both labels present
    for user in users:  # 15 distinct pairs, 30 answers: enough for EXPLORE, not for the EM
        judgments_create(study, items, row_a, row_b, truth, annotator=user)
    service.refit_study(study_id=study.pk)
    diag = explore_version(study).diagnostics
    assert diag["weighting"] == "none (fewer than 20 distinct pairs)"
