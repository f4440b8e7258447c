"""`python -m loadtest.audits --quick`: reviewers flood audits while an annotator answers.

Asserts what must hold whatever the machine's load (the full run in docs/security.md measures
the times): the limit on audits in flight answered 429 (never anything but 201 or 429), every
answer's refit started during the flood, and every audit accepted ran to ``done``.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_the_quick_audit_flood_is_limited_and_refits_still_start(run_module):
    result, output = run_module("audits", "--quick")
    assert result["problems"] == [], output
    posts = result["audit_posts"]
    assert set(posts) == {"201", "429"}, posts  # JSON keys
    assert result["flood"]["answers"] >= 1
    assert result["flood"]["no_refit_within_60_s"] == 0
    assert result["audits_by_status"].get("done", 0) >= 1
    assert set(result["audits_by_status"]) <= {"done", "queued", "running"}
