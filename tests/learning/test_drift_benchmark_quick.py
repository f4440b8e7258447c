"""benchmarks/drift.py --quick: the drift table's loop runs through the app's pick functions,
fit and drift check (one stationary study per strategy, one window check each)."""

from __future__ import annotations

from tests.conftest import run_benchmark


def test_the_drift_benchmark_runs_in_a_short_form():
    result = run_benchmark("drift.py", "--quick")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[:3] for row in rows] == [
        ["| active", "1", "stationary"],
        ["| random", "1", "stationary"],
        ["| targeted", "1", "stationary"],
    ]
    for row in rows:
        judged = int(row.split(" | ")[7])
        assert judged == 1  # the window check at 400 answers was made
