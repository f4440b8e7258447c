"""benchmarks/counterfactual.py --quick runs end to end and prints its tables (no timing claims)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def test_quick_counterfactual_benchmark_prints_its_tables():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "counterfactual.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "## adult: 2,000 records, 4,000 twins (sex, race)" in out.stdout
    assert "| logreg-without-sex | sex | 2,000 | 0.0 % (" in out.stdout
    assert "| logreg-with-sex | 2,000 + 4,000 |" in out.stdout
