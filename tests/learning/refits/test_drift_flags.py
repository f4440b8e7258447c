"""The drift flag through the refit service where the fit has learned the annotators' rule (a
synthetic space with a known Sigma0): 100 more answers under the same rule raise no flag, 100
under another rule do, and the stored check says why (learning/versions/drift.py)."""

from __future__ import annotations

import numpy as np

from learning.refits import service
from learning.versions import storage

from ..synthetic import SIGMA0, judgments_create, simulate
from .helpers import versions

SIGMA1 = np.diag([0.0, 0.0, 0.0, 0.0, 2.0, 3.0])  # the changed rule: other directions matter


def _answer(world, n, *, sigma, seed, annotator):
    """``n`` distinct pairs answered by one annotator (each batch by another: a person answers
    a pair once)."""
    space, items, study, users = world
    a, b, y = simulate(space.load_matrix(), n, sigma0=sigma, seed=seed)
    judgments_create(study, items, a, b, y, annotator=users[annotator])


def test_the_same_rule_raises_no_flag_and_a_changed_rule_does(world):
    _, _, study, _ = world
    _answer(world, 300, sigma=SIGMA0, seed=1, annotator=0)
    service.refit_study(study_id=study.pk)
    first = versions(study, method="explore")[-1]
    storage.version_publish(
        version_id=first.pk, user=None, reason="a test: published whatever its verdict"
    )

    _answer(world, 100, sigma=SIGMA0, seed=2, annotator=1)  # the same rule
    service.refit_study(study_id=study.pk)
    same = versions(study, method="explore")[-1].diagnostics["drift"]
    check = same["published"]["check"]
    assert 80 <= check["answers"] <= 100  # to pairs the published version never saw
    assert check["sample"] == "all"  # the random strategy: every answer is a uniform draw
    assert check["z"] is not None
    assert check["level"] > 0
    assert same["flagged"] is False, check["note"]

    _answer(world, 100, sigma=SIGMA1, seed=3, annotator=2)  # the annotators' rule changed
    service.refit_study(study_id=study.pk)
    changed = versions(study, method="explore")[-1].diagnostics["drift"]
    # the published version's comparison flags (the previous one's is shown, never flagged)
    assert changed["published"]["flagged"], changed["published"]["check"]["note"]
    assert changed["flagged"] is True
    assert changed["previous"]["flagged"] is False
    assert changed["previous"]["check"]["z"] < -3, changed["previous"]["check"]["note"]
    note = changed["published"]["check"]["note"]
    assert "new answers since" in note
    assert "promised" in note
    assert "false-alarm rate" in note
    # FACE has no model of the answers: shown, never flagged.
    face = versions(study, method="face")[-1].diagnostics["drift"]["previous"]
    assert face["flagged"] is False
    assert "FACE" in face["check"]["note"]


def test_between_window_checks_the_published_comparison_is_shown_and_spends_nothing(world):
    """The budget is spent only where the window check is due (answers passing a multiple of
    ``WINDOW_EVERY``): a published check at every version would leave it slivers of 20 answers."""
    _, _, study, _ = world
    _answer(world, 300, sigma=SIGMA0, seed=1, annotator=0)
    service.refit_study(study_id=study.pk)
    first = versions(study, method="explore")[-1]
    storage.version_publish(version_id=first.pk, user=None, reason="a test")

    _answer(world, 40, sigma=SIGMA1, seed=3, annotator=1)  # 340 answers: no multiple passed
    service.refit_study(study_id=study.pk)
    between = versions(study, method="explore")[-1].diagnostics["drift"]
    check = between["published"]["check"]
    assert check["z"] is not None
    assert check["level"] is None
    assert "shown, not flagged" in check["note"]
    assert between["flagged"] is False
    assert "spent_at" not in between

    _answer(world, 60, sigma=SIGMA1, seed=4, annotator=2)  # 400: the checks are due
    service.refit_study(study_id=study.pk)
    due = versions(study, method="explore")[-1].diagnostics["drift"]
    assert due["published"]["check"]["level"] > 0
    assert due["spent_at"] == 400
