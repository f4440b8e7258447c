"""Memory when the app reads a large embedding matrix from S3-compatible storage (docs/storage.md).

Starts a real SeaweedFS (``weed`` from requirements-dev.txt, tests/s3_store.py), stores one
``.npy`` of float32 (200 MB by default; ``--quick``: 20 MB) in a bucket, streamed from a file
written block by block, then reads it the app's ways, each in a fresh process configured only by
the environment (``FAIRMETRIC_STORAGE=s3`` …) so that its peak memory is its own:

* ``rows`` — 200 random rows (``common/matrices.py: matrix_rows``: ranged GETs);
* ``block`` — 5,000 neighbouring rows (one ranged GET);
* ``scan`` — the whole matrix, column means 10,000 rows at a time, through ``matrix_load`` (a
  local copy streamed to disk once, memory-mapped);
* ``naive`` — for comparison, what reading it through the storage's file object whole would
  cost (``default_storage.open(name).read()`` then ``np.load``).

Prints, per way: seconds, the process's peak resident memory above its start (VmHWM − VmRSS
after Django's set-up: it counts the pages of a memory-mapped file the read touched), the peak
of its anonymous memory above its start (RssAnon sampled every 5 ms: what it allocated, mapped
files left out) and the peak of Python's and numpy's allocations (tracemalloc), in MB.
No figure is asserted; ``tests/storage/test_benchmark_quick.py`` runs ``--quick``.

    python benchmarks/storage_matrix.py [--quick] [--mb 200] [--dimension 256]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NAME = "spaces/benchmark.npy"
WAYS = ("rows", "block", "scan", "naive")


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


class _AnonPeak:
    """The highest anonymous resident memory (RssAnon: not the pages of mapped files) seen by a
    thread that samples it every 5 ms."""

    def __init__(self):
        import threading

        self.peak, self.running = _status_mb("RssAnon"), True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while self.running:
            self.peak = max(self.peak, _status_mb("RssAnon"))
            time.sleep(0.005)

    def stop(self) -> float:
        self.running = False
        self.thread.join()
        return max(self.peak, _status_mb("RssAnon"))


def _write_matrix(path: Path, rows: int, dimension: int) -> str:
    """A float32 .npy of random rows, written in blocks; returns its sha256."""
    import numpy as np

    header = np.lib.format.header_data_from_array_1_0(np.empty((0, dimension), "<f4"))
    header["shape"] = (rows, dimension)
    digest = hashlib.sha256()
    rng = np.random.default_rng(0)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        f.flush()
        digest.update(path.read_bytes())
        for start in range(0, rows, 10_000):
            block = rng.standard_normal((min(10_000, rows - start), dimension), dtype=np.float32)
            data = block.astype("<f4").tobytes()
            f.write(data)
            digest.update(data)
    return digest.hexdigest()


def _child(way: str, sha256: str, rows: int) -> dict:
    """One way of reading, in this (fresh) process; its figures."""
    import tracemalloc

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    django.setup()
    import numpy as np
    from django.core.files.storage import default_storage

    from common.matrices import matrix_load, matrix_rows

    matrix_rows(NAME, sha256, [0])  # the client and the header: set-up, not the read
    start_rss, start_anon = _status_mb("VmRSS"), _status_mb("RssAnon")
    anon = _AnonPeak()
    tracemalloc.start()
    began = time.perf_counter()
    rng = np.random.default_rng(1)
    if way == "rows":
        picked = rng.choice(rows, 200, replace=False)
        out = matrix_rows(NAME, sha256, picked)
        check = float(out.sum())
    elif way == "block":
        out = matrix_rows(NAME, sha256, np.arange(rows // 2, rows // 2 + 5000))
        check = float(out.sum())
    elif way == "scan":
        matrix = matrix_load(NAME, sha256)
        total = np.zeros(matrix.shape[1])
        for first in range(0, matrix.shape[0], 10_000):
            total += matrix[first : first + 10_000].sum(axis=0, dtype=np.float64)
        check = float((total / matrix.shape[0]).sum())
    else:
        import io

        with default_storage.open(NAME, "rb") as f:
            matrix = np.load(io.BytesIO(f.read()))
        check = float(matrix[:, 0].sum())
    seconds = time.perf_counter() - began
    _, peak = tracemalloc.get_traced_memory()
    return {
        "way": way,
        "seconds": round(seconds, 2),
        "rss_peak_mb": round(_status_mb("VmHWM") - start_rss, 1),
        "anon_peak_mb": round(anon.stop() - start_anon, 1),
        "heap_peak_mb": round(peak / 2**20, 1),
        "check": check,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 20 MB matrix")
    parser.add_argument("--mb", type=int, default=200, help="the matrix's size in MB")
    parser.add_argument("--dimension", type=int, default=256)
    parser.add_argument(
        "--child", nargs=3, metavar=("WAY", "SHA256", "ROWS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        way, sha256, rows = args.child
        print(json.dumps(_child(way, sha256, int(rows))))
        return
    from tests.s3_store import SeaweedS3, s3_environment

    megabytes = 20 if args.quick else args.mb
    rows = megabytes * 2**20 // (4 * args.dimension)
    with tempfile.TemporaryDirectory(prefix="fm-storage-bench-") as scratch:
        scratch = Path(scratch)
        server = SeaweedS3(scratch / "seaweedfs").start()
        try:
            bucket = server.bucket()
            local = scratch / "matrix.npy"
            sha256 = _write_matrix(local, rows, args.dimension)
            server.client().upload_file(str(local), bucket, NAME)
            local.unlink()
            env = {
                **os.environ,
                **s3_environment(server, bucket),
                "VAR_DIR": str(scratch / "var"),
                "MEDIA_ROOT": str(scratch / "media"),
            }
            print(f"matrix: {rows:,} × {args.dimension} float32 = {megabytes} MB in SeaweedFS")
            print(f"{'way':<7}{'seconds':>9}{'peak RSS MB':>13}{'anon MB':>9}{'heap MB':>9}")
            for way in WAYS:
                done = subprocess.run(
                    [sys.executable, __file__, "--child", way, sha256, str(rows)],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=900,
                    check=True,
                )
                row = json.loads(done.stdout.strip().splitlines()[-1])
                print(
                    f"{row['way']:<7}{row['seconds']:>9.2f}{row['rss_peak_mb']:>13.1f}"
                    f"{row['anon_peak_mb']:>9.1f}{row['heap_peak_mb']:>9.1f}"
                )
            assert not (scratch / "media").exists(), "a file was written under MEDIA_ROOT"
        finally:
            server.stop()


if __name__ == "__main__":
    main()
