"""benchmarks/drift.py --quick: the drift table's loop runs through the app's pick functions,
fit and drift check (one stationary study per strategy, one window check each), both tests."""

from __future__ import annotations

from annotation.labelling.strategies import CONTROL_PICKS
from tests.conftest import run_benchmark


def test_the_drift_benchmark_runs_in_a_short_form():
    result = run_benchmark("drift.py", "--quick")
    assert result.returncode == 0, result.stderr[-3000:]
    cells, _, checks = result.stdout.partition("\n\n")  # the table per cell, then pooled
    rows = [line.split(" | ") for line in cells.splitlines() if line.startswith("| ")]
    rows = rows[1:]  # past the header
    strategies = ["active", "information", "random", "stratified", "targeted"]
    assert [row[:5] for row in rows] == [
        ["| model", strategy, "1", "—" if strategy == "random" else str(CONTROL_PICKS), test]
        for strategy in strategies
        for test in ("flag", "all answers")
    ]
    for row in rows:
        assert row[5].startswith(("0/1", "1/1"))  # the stationary study
        assert row[6] != "—"  # its window check at 500 answers was made: a z
    pooled = [line.split(" | ") for line in checks.splitlines() if line.startswith("| ")][1:]
    assert [row[0] for row in pooled] == ["| flag", "| all answers"]
    for row in pooled:
        assert row[1].startswith(("0/5", "1/5", "2/5"))  # the five stationary studies
        assert int(row[2]) == 5  # one window check each
        assert float(row[6].rstrip(" |")) > 0  # the sum of their levels


def test_a_saved_run_replayed_at_its_own_rate_gives_its_outcomes_and_a_higher_rate_flags_more():
    """``--rate``: each saved study replayed at the rate it ran at (0.05) keeps its saved
    flags and outcome; at four times the rate every check it flagged still flags, and more."""
    import importlib.util
    import json

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("drift_bench", ROOT / "benchmarks/drift.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    saved = ROOT / "benchmarks/runs/drift-picks75-changed-2026-11-29.jsonl"
    studies = [json.loads(line) for line in saved.read_text().splitlines()]
    more = 0
    for study in studies:
        same, higher = bench.at_rate(study, bench.RATE), bench.at_rate(study, 4 * bench.RATE)
        assert same["flag"] == study["flag"]
        assert same["checks"] == study["checks"]
        for before, after in zip(study["checks"], higher["checks"], strict=True):
            if before["flag"]:
                assert after["flag"][0] >= before["flag"][0]
                more += after["flag"][0] > before["flag"][0]
    assert more > 0
