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


def test_quick_audit_upload_benchmark_refuses_the_repeated_key_and_runs_the_new_records():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "audit_upload.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert 'web, new records (Parquet): {"file": "new.parquet' in out.stdout
    assert '"status": 201, "answer": {"id": 1, "status": "queued"}' in out.stdout
    assert '"status": 400, "answer": "A key appears more than once' in out.stdout
    assert '"outcome": "done", "error": "", "items": 5000' in out.stdout
