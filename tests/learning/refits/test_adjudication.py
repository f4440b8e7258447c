"""An adjudicated label is what the fit reads in place of its pair's answers, and a decision is
new data for the refit (annotation/review/fit.py, read by learning/refits/snapshots.py)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from django.urls import reverse
from django.utils import timezone

from annotation.models import Adjudication, LabelCode, PairJudgment
from annotation.review import services as review
from learning.dashboards import figures
from learning.refits import service, snapshots
from learning.refits.pairs import pair_data
from learning.versions import selectors

from .helpers import add_simulated, admin_of, versions


def _rows_of(snapshot, a: int, b: int) -> np.ndarray:
    return np.flatnonzero((snapshot.item_a == a) & (snapshot.item_b == b))


def test_the_adjudicated_label_replaces_the_answers_in_the_fit(world):
    _, items, study, users = world
    add_simulated(world, 300)
    first, second = sorted((items[0], items[1]), key=lambda item: item.pk)
    for user, label in zip(users, ["comparable", "incomparable", "incomparable"], strict=True):
        PairJudgment.objects.create(
            study=study, annotator=user, item_a=first, item_b=second, label=label
        )
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    before = {v.method: v.pk for v in versions(study, status="ready")}
    marks = snapshots.study_data_marks(study_id=study.pk)
    raw = snapshots.judgment_snapshot(
        study_id=study.pk, watermark=marks.judgment_watermark, excluded_annotators=[]
    )
    assert len(_rows_of(raw, first.pk, second.pk)) == 3

    decision = review.adjudicate(
        study=study,
        user=admin_of(study),
        item_a_id=first.pk,
        item_b_id=second.pk,
        label="comparable",
    )
    marks = snapshots.study_data_marks(study_id=study.pk)
    assert marks.adjudications == f"1:{decision.pk}"
    snapshot = snapshots.judgment_snapshot(
        study_id=study.pk, watermark=marks.judgment_watermark, excluded_annotators=[]
    )
    rows = _rows_of(snapshot, first.pk, second.pk)
    assert len(rows) == 1  # the three answers gave way to the decision
    assert snapshot.label[rows[0]] == LabelCode.COMPARABLE
    assert snapshot.ids[rows[0]] == -decision.pk
    assert snapshot.annotator[rows[0]] == -1
    assert len(snapshot) == len(raw) - 2  # every other answer is still there
    pairs = pair_data(snapshot, policy="all", validation_share=0.0)
    at = np.flatnonzero(
        (pairs.row_a == first.row) & (pairs.row_b == second.row)
        | (pairs.row_a == second.row) & (pairs.row_b == first.row)
    )
    assert pairs.y[at].tolist() == [1.0]  # the training data holds the decision, once

    report = service.refit_study(study_id=study.pk)  # the watermark did not move; the data did
    assert report.outcome == "fitted"
    explore = versions(study, status="ready", method="explore")[-1]
    assert explore.pk != before["explore"]
    assert explore.parameters["adjudications"] == marks.adjudications
    assert service.refit_study(study_id=study.pk).outcome == "nothing new"


def test_the_dashboard_counts_resolved_disagreements_and_a_decision_refreshes_it(world):
    _, items, study, users = world
    pairs = [sorted((items[i], items[i + 1]), key=lambda item: item.pk) for i in (0, 2, 4)]
    for (first, second), labels in zip(
        pairs, [("comparable", "incomparable")] * 2 + [("unsure",) * 2], strict=True
    ):
        for user, label in zip(users, labels, strict=False):
            PairJudgment.objects.create(
                study=study, annotator=user, item_a=first, item_b=second, label=label
            )
    board = figures.study_dashboard(study)
    assert (board.disagreements_resolved, board.disagreements) == (0, 2)  # unsure-unsure agrees
    before = figures.data_watermark(study)
    first, second = pairs[0]
    review.adjudicate(
        study=study,
        user=admin_of(study),
        item_a_id=first.pk,
        item_b_id=second.pk,
        label="incomparable",
    )
    assert figures.data_watermark(study) != before  # the cached figures are no longer current
    board = figures.study_dashboard(study)
    assert (board.disagreements_resolved, board.disagreements) == (1, 2)


def test_a_burst_of_decisions_waits_for_the_churn_rule_or_the_quiet_moment(world):
    """A reviewer deciding disagreements one after another is a burst: each decision used to
    change the fit's fingerprint and start a version of its own (22 FACE + 22 EXPLORE versions
    in ten minutes). Now the decisions count like answers under the churn rule, and the study
    is quiet only when no decision came for the debounce window either."""
    _, items, study, users = world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.version_min_new_answers, learning.version_min_minutes = 5, 60
    learning.debounce_seconds = 30
    learning.save()
    add_simulated(world, 300)
    pairs = [sorted((items[i], items[i + 1]), key=lambda item: item.pk) for i in range(0, 12, 2)]
    for first, second in pairs:
        for user, label in zip(users, ["comparable", "incomparable"], strict=False):
            PairJudgment.objects.create(
                study=study, annotator=user, item_a=first, item_b=second, label=label
            )
    PairJudgment.objects.filter(study=study).update(
        created_at=timezone.now() - timedelta(minutes=5)
    )  # the answers are old: quiet
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    fitted = len(versions(study))
    reviewer = admin_of(study)

    def decide(first, second):
        review.adjudicate(
            study=study,
            user=reviewer,
            item_a_id=first.pk,
            item_b_id=second.pk,
            label="comparable",
        )

    for first, second in pairs[:3]:
        decide(first, second)
        report = service.refit_study(study_id=study.pk)
        assert report.outcome == "waiting", report
        assert len(versions(study)) == fitted
    assert any("3 new answers" in reason for reason in report.waiting)
    assert 25 < report.retry_in <= 30  # until no decision came for 30 s
    for first, second in pairs[3:5]:
        decide(first, second)  # 5 decisions: the churn rule's threshold
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    fitted = len(versions(study))
    decide(*pairs[5])
    assert service.refit_study(study_id=study.pk).outcome == "waiting"
    Adjudication.objects.filter(study=study).update(
        created_at=timezone.now() - timedelta(seconds=31)
    )  # the reviewer stopped: quiet, the last decision gets its version
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    assert len(versions(study)) > fitted
    assert service.refit_study(study_id=study.pk).outcome == "nothing new"


def test_the_version_page_counts_people_and_decisions_apart_from_imports(world, client):
    """A version page said "flip rates of 3 annotators" where its data had 2 (the answers
    without an annotator — imports, adjudications — have a flip rate of their own), and it
    counted the adjudicated labels as "imported"."""
    _, items, study, users = world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.weight_by_reliability = True
    learning.save()
    add_simulated(world, 150, annotator=users[0])
    add_simulated(world, 150, seed=2, annotator=users[1])
    add_simulated(world, 40, seed=3)  # imported: no annotator
    first, second = sorted((items[0], items[1]), key=lambda item: item.pk)
    for user, label in zip(users[:2], ["comparable", "incomparable"], strict=True):
        PairJudgment.objects.create(
            study=study, annotator=user, item_a=first, item_b=second, label=label
        )
    reviewer = admin_of(study)
    review.adjudicate(
        study=study, user=reviewer, item_a_id=first.pk, item_b_id=second.pk, label="comparable"
    )
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    explore = versions(study, status="ready", method="explore")[-1]
    assert explore.counts["annotators"] == 2
    assert explore.counts["adjudicated"] == 1
    assert explore.counts["imported"] == 40
    client.force_login(reviewer)
    page = client.get(reverse("learning:version-detail", args=[explore.pk])).content.decode()
    assert "flip rates of 2 annotators (and one for the answers without an annotator" in page
