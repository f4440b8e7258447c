"""benchmarks/record_import.py --quick: the whole path runs (upload, columns, the worker's body in
its own process); no timing claims."""

from __future__ import annotations

import json

from tests.conftest import run_benchmark


def test_the_record_import_benchmark_runs_in_its_quick_form():
    result = run_benchmark("record_import.py", "--quick", "--formats", "csv,parquet")
    assert result.returncode == 0, result.stderr[-3000:]
    figures = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [f["format"] for f in figures] == ["csv", "parquet"]
    for f in figures:
        assert f["items"] == f["rows"] == 20_000
        assert f["columns_post_s"] > 0
        assert f["peak_rss_mb"] >= f["baseline_rss_mb"] > 0
