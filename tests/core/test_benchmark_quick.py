"""The benchmark command runs (quick sizes); no timing assertions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench(script: str, *args: str, timeout: int = 300, env=None) -> subprocess.CompletedProcess:
    """``python benchmarks/<script> <args>`` from the repository root; it must exit 0."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out


def test_quick_benchmark_exits_zero_and_prints_its_table():
    out = bench("core.py", "--quick")
    assert "| benchmark | size | wall (s) | CPU (s) |" in out.stdout
    assert out.stdout.count("\n| ") >= 5  # header and four rows


def test_quick_coverage_benchmark_prints_nominal_against_measured():
    out = bench("coverage.py", "--quick", "--unbounded")
    assert "| interval | case | truth | replicates | nominal | measured ± MC s.e." in out.stdout
    assert out.stdout.count("| WEAT d, studentized bootstrap |") == 7
    assert out.stdout.count("| held-out loglik |") == 2
    assert out.stdout.count("| new-items gain | ") == 2  # word and record spaces
    assert out.stdout.count("| new-items gain, unbounded loss | ") == 2  # --unbounded


def test_quick_strategies_coverage_benchmark_scores_control_pairs_under_adaptive_strategies():
    out = bench("coverage_strategies.py", "--quick")
    lines = [line.strip(" |") for line in out.stdout.splitlines() if line.startswith("| model |")]
    rows = [line.split(" | ") for line in lines]
    assert sorted(row[1] for row in rows) == sorted(
        ["active", "information", "random", "stratified", "targeted"]
    )
    for row in rows:
        app, every = (int(n) for n in row[4].split(" / "))
        if row[1] == "random":  # every answer is a uniform draw: both score the same
            assert app == every
            assert row[5:7] == row[7:9]
        else:  # the control half of the held-out answers
            assert 0.25 * every < app < 0.75 * every
    assert "* app, adaptive studies: " in out.stdout


def test_quick_growth_benchmark_prints_both_tables():
    out = bench(
        "growth.py",
        "--quick",
        env={k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "MEDIA_ROOT"}},
    )
    assert "| judgments | stage | wall (s) | peak RSS above start (MB) |" in out.stdout
    assert out.stdout.count("| 600 |") == 10  # the build, seven stages, two after a burst
    assert "| pairs | pass | wall (s) | peak RSS above start (MB) | peak allocations (MB) |" in (
        out.stdout
    )
    assert "| process peak RSS (MB) |" in out.stdout
    assert out.stdout.count("| 5,000 | chunked pass") == 2
    assert out.stdout.count("| 5,000 | whole-array pass") == 1
    assert "| pairs | fit | wall (s) | CPU (s) | peak RSS above start (MB) |" in out.stdout
    assert out.stdout.count("| 5,000 | EXPLORE fit, ") == 2  # pairs from indices, array


def test_quick_informative_null_benchmark_prints_its_table():
    out = bench("informative_null.py", "--quick")
    assert "| case | answers | d | draws | gain ± MC s.e. |" in out.stdout
    assert out.stdout.count("| coin flips, records") == 4  # and p = 0.75 on records
    assert "| coin flips, test's Gaussian space | 60 | 30 | 3 |" in out.stdout


def test_quick_validity_benchmark_prints_its_tables():
    out = bench("validity.py", "--quick")
    assert "| case | answers | draws | judged informative (95 % CI) |" in out.stdout
    assert out.stdout.count("| trait not in φ, ") == 1
    assert out.stdout.count("| rule on φ, 400 items |") == 1
    assert "| table | d | seeds | answers |" in out.stdout


def test_quick_explore_refit_benchmark_prints_kept_rebuilt_and_cold():
    out = bench("explore_refit.py", "--quick")
    assert "| answers | fit | wall (s) | CPU (s) |" in out.stdout
    assert "| warm refit, kept differences (kept + 50 new) |" in out.stdout
    assert out.stdout.count("| 600 |") == 4  # first fit, kept, rebuilt, cold


def test_quick_adult_validity_benchmark_prints_a_verdict_and_what_new_people_get():
    out = bench("validity_adult.py", "--answers", "1000")
    row = next(line for line in out.stdout.splitlines() if line.startswith("| 1,000 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] in {"informative", "not informative", "cannot tell yet"}
    assert cells[3] == "191 / 377"  # the held-out pairs of held-out people at 1,000 answers
    fresh = r"[+-]\d\.\d{3} \([+-]\d\.\d{3} to [+-]\d\.\d{3}\), AUC 0\.\d{3}"
    assert re.fullmatch(fresh, cells[4])
