"""Drift flags that mean something (issue 25): on a record study from a real table (German
credit, one-hot and standardised columns), annotators who keep one rule with 10 % flips,
answers added 20 at a time through the refit service up to 200, a version published at 100 —
no version is flagged; when the annotators' rule changes halfway, a version should be (not yet:
see the mark; where the fit has learned the rule, tests/learning/refits/test_drift_flags.py)."""

from __future__ import annotations

import pytest

from learning.versions import storage

from .drift_world import CreditStudy, rule_changed, rule_money

pytestmark = pytest.mark.slow


def _run(credit: CreditStudy, rule_after_100) -> list[dict]:
    """20 answers at a time to 200, the version at 100 published; each EXPLORE version's drift."""
    rule = rule_money(credit.frame)
    for answered in range(20, 201, 20):
        credit.answer(rule)
        assert credit.refit().outcome == "fitted"
        if answered == 100:
            storage.version_publish(version_id=credit.explore_versions()[-1].pk, user=None)
            rule = rule_after_100(credit.frame)
    return [v.diagnostics.get("drift") or {} for v in credit.explore_versions()]


def _flags(drifts: list[dict]) -> list[str]:
    found = []
    for number, drift in enumerate(drifts):
        for name in ("previous", "published"):
            part = drift.get(name)
            if part:
                print(number, name, part["check"]["note"])
            if part and part["flagged"]:
                found.append(f"version {number} vs {name}: {part['check']['note']}")
    return found


def test_annotators_who_keep_their_rule_raise_no_drift_flag(db, media_root):
    credit = CreditStudy(media_root)
    drifts = _run(credit, rule_money)
    assert len(drifts) == 10
    judged = [p for d in drifts for p in d.values() if isinstance(p, dict) and p["check"]["z"]]
    assert len(judged) >= 10  # the test ran, not only "too few answers"
    assert _flags(drifts) == []


@pytest.mark.xfail(
    strict=True,
    reason="Not yet: EXPLORE learns little of this one-hot table from <= 200 answers (before "
    "issue 25's penalty path: -0.656 on 20,000 fresh pairs at 100 answers against guessing's "
    "-0.690; with it, versions shrink toward their prior and beat the constant by about 0.04 at "
    "200), so after the change there is too little learned rule for the answers to contradict. "
    "Still failing with that estimator merged: remove this marker once it passes.",
)
def test_a_change_of_the_annotators_rule_halfway_raises_a_flag(db, media_root):
    credit = CreditStudy(media_root, name="german credit changed")
    drifts = _run(credit, rule_changed)
    assert _flags(drifts[:5]) == []  # before the change
    assert _flags(drifts[5:]), "no version flagged after the rule changed"
