"""`python -m loadtest.attack --quick`: the reproductions of issue #39's attack (concurrent
confirms, races, non-finite search, overflows, parser bombs) against the production stack, ten
threads per race: every check holds, no 5xx."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_the_quick_attack_finds_no_500_and_every_outcome_right(run_module):
    result, output = run_module("attack", "--quick", timeout=600)
    failed = [c for c in result["checks"] if not c["ok"]]
    assert failed == [], output[-4000:]
    checks = {c["check"]: c for c in result["checks"]}
    assert len(checks) == 8
    assert checks["confirms"]["stored"] == 100  # five confirmations, one import
    assert checks["space deletes"]["statuses"] == {"302": 1, "404": 9}
    assert all(int(s) < 500 for c in checks.values() for s in c["statuses"])
