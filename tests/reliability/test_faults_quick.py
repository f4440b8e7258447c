"""`python -m loadtest.faults --quick`: one of each fault during a ~15 s load run."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_the_quick_fault_run_loses_nothing_and_recovers(run_module):
    result, output = run_module("faults", "--quick")
    assert result["problems"] == [], output
    assert [f["fault"] for f in result["faults"]] == [
        "kill-worker",
        "restart-redis",
        "terminate-db",
    ]
    killed = result["faults"][0]["killed_during"]
    assert killed in {"fit", "refit (lease held)"}, killed  # the worker died mid-refit
    judgments = result["judgments"]
    assert judgments["unique_acknowledged"] > 20
    assert judgments["stored"] == judgments["unique_acknowledged"]
    assert judgments["lost"] == judgments["doubles"] == judgments["given_up"] == 0
    assert result["versions"]["duplicates_same_data"] == 0
    assert result["fitting_left"] == 0
    orphaned = result["faults"][0]["fitting_rows_orphaned"]
    assert result["versions"]["interrupted_retired"] >= orphaned  # each killed fit retired
    assert result["final_version_after_s"] is not None
    # Audits queued (their messages in Redis) when Redis restarted: the sweep sent them again.
    restart = next(f for f in result["faults"] if f["fault"] == "restart-redis")
    assert restart["audits_posted"] == [201] * 4
    assert restart["audit_messages_in_redis"] >= 1
    assert result["audits"] == {"done": 4}
