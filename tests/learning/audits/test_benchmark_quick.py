"""benchmarks/audit.py --quick runs end to end and prints its tables (no timing claims)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def test_quick_audit_benchmark_prints_its_tables():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "audit.py"), "--quick", "--threads", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| logreg-with-sex | 2,000 |" in out.stdout
    assert "| logreg-without-sex | 2,000 |" in out.stdout
    assert "| 3,000 | 2,000 |" in out.stdout
    assert "| 20,000 | 2,000 |" in out.stdout
    assert "figures and the worst-first list at 20,000 items" in out.stdout
