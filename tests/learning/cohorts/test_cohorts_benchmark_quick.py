"""benchmarks/cohorts.py --quick: one draw of each case through the app (refit, cohort fits,
report), every case compared."""

from __future__ import annotations

from tests.conftest import run_benchmark


def test_the_cohorts_benchmark_runs_in_a_short_form():
    result = run_benchmark("cohorts.py", "--quick")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| differ", "1/1"],
        ["| same", "1/1"],
        ["| 80/20", "1/1"],
    ]
