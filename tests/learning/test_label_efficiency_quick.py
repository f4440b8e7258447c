"""benchmarks/label_efficiency.py --quick: the whole simulated study runs (no timing claims)."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from tests.conftest import ROOT, run_benchmark

HEADLINE = re.compile(
    r"^label efficiency: (\w+) needs (\d+\.\d)x fewer labels than random \((\d+) vs (\d+)\)$"
)


@pytest.mark.slow
def test_the_label_efficiency_benchmark_runs_in_its_quick_form():
    result = run_benchmark("label_efficiency.py", "--quick")
    out = result.stdout
    assert "| random |" in out
    assert "| targeted |" in out
    # how far each strategy steered: its own picks, from its first informative version on
    assert "| picked by the strategy | first current version (labels) |" in out
    assert "Noise robustness" in out
    # The mean-curve reading: random's later checkpoints, each with the labels targeted needs.
    assert "Read on the mean curves" in out
    rows = re.findall(r"^\| (\d+) \((\d+)\) \| -?\d\.\d{4} \| (\d+|not reached) \|", out, re.M)
    assert rows
    assert all(int(first) <= int(n) for n, first, _ in rows)  # random's own first reach
    assert "| 30% |" in out
    last = out.strip().splitlines()[-1]
    match = HEADLINE.match(last)
    if match:  # the tiny quick budget is noisy: a strategy may not reach the target in it
        assert result.returncode == 0, result.stderr[-3000:]
        _, ratio, n, m = match.groups()
        assert float(ratio) == pytest.approx(int(m) / int(n), abs=0.051)  # printed to 0.1
    else:
        assert result.returncode == 1, result.stderr[-3000:]
        assert re.match(r"^label efficiency: (random did not|only random) reach", last), last


def test_bad_arguments_give_one_line_and_exit_2():
    result = run_benchmark("label_efficiency.py", "--strategies", "random,psychic", timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: unknown strategy ['psychic']")


def test_the_adult_item_source_embeds_records_with_the_demo_feature_map():
    """``--items adult``: records embedded by the record space's φ, and a PSD truth fitted on
    the paper's pairs (4 comparable to 1 incomparable) that tells the pool's random pairs apart."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from label_efficiency_parts.crowd import p_of, quad, random_pairs
    from label_efficiency_parts.sources import SOURCES

    source = SOURCES["adult"](n_names=30)
    assert len(source.keys) == len(set(source.keys)) == 60
    assert source.vectors.shape == (60, 43)
    assert np.all(np.linalg.eigvalsh(source.sigma0) > -1e-9)
    i, j = random_pairs(60, 500, np.random.default_rng(0))
    p0 = p_of(quad(source.vectors[i] - source.vectors[j], source.sigma0))
    assert np.all((p0 > 0) & (p0 < 1))
    assert np.std(p0) > 0.05
