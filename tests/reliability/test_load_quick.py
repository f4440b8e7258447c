"""`python -m loadtest.load --quick`: 5 annotators for 5 s against the real stack.

Asserts the correctness invariants, not the timing targets (the full run in
docs/reliability.md measures those).
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_the_quick_load_run_stores_every_acknowledged_answer_once(run_module):
    result, output = run_module("load", "--quick")
    judgments, summary = result["judgments"], result["summary"]
    assert result["problems"] == [], output
    assert judgments["unique_acknowledged"] > 20  # the run really answered
    assert judgments["stored"] == judgments["unique_acknowledged"]
    assert judgments["lost"] == judgments["doubles"] == 0
    assert summary["lost_responses_simulated"] > 0  # retries with the same client_id happened
    retries = summary["endpoints"]["POST judgment (retry)"]["statuses"]
    # JSON keys: every replay answered 200 — after 429s when the answer limit (audit/limits.py)
    # caught a burst (requests bunch up on a loaded machine); never 201, which the client lists
    # in its problems, and never a refusal.
    assert "200" in retries
    assert set(retries) <= {"200", "429"}
    statuses = [int(s) for e in summary["endpoints"].values() for s in e["statuses"]]
    assert max(statuses) < 500
    assert result["versions"]["duplicates_same_data"] == 0
    assert result["final_version_after_s"] is not None  # a version covers the last answer
    # The in-process profile ran on the same stack: queries per answer, whatever the load.
    profile = result["profile"]
    # The answer's own statements (the refit marker's are the refit hook's: one read while a
    # refit is queued, a few writes whenever the worker has just finished one).
    own = profile["statements_per_answer"] - profile["refit_hook_statements_per_answer"]
    assert own <= 3, profile["queries_per_answer_by_kind"]
    assert set(profile["cpu_ms_by_component"]) >= {"next pair", "PostgreSQL (its backend process)"}
