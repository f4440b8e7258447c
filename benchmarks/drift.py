"""Do drift flags keep their error rate under the app's own sampling? (issue 35)

    python benchmarks/drift.py                 # 20 + 10 studies per cell (not run to the end yet)
    python benchmarks/drift.py --quick         # 1 stationary study per strategy, 20 versions
    python benchmarks/drift.py --studies 40 --processes 2

A study: a pool of ``ITEMS`` items in d = 6 (``0.5·N(0, 1)``), annotators who answer with
EXPLORE's response model under Σ₀ = diag(3, 2, 0, 0, 0, 0), each answer flipped with
probability 10 % (a pair's true label drawn once, every answer flipped on its own); a metric
version every 20 answers, 50 versions. Pairs are chosen by the app's own pick functions
(``annotation/labelling/strategies.py``: the control share, ``targeted_pick``,
``uncertainty_pick``; 256 uniform candidates not yet answered, the latest version's Σ as the
current metric, random until the first version); each chosen pair is answered by 1 or 2
annotators. Each version is the app's EXPLORE fit (``learning/refits/fitting.py: fit_explore``,
reliability weighting on, as by default; identity prior: no FACE here) with its drift promise,
and is judged as the worker judges it (``learning/versions/drift.py``: ``window_due``, the same later
answers, ``judge``, ``settle``, ``version_level``) against the version 300 answers back (no
version is published here, and the comparison with the previous version never flags). The database reads of ``drift_check`` are replayed on arrays.

``stationary``: the rule never changes; a study counts once if any of its versions is flagged.
``changed``: after answer 500 the annotators answer under Σ₁ = diag(0, 0, 0, 0, 2, 3); the
table gives the share of studies flagged within 300 answers of it (and flags before it, which
are false alarms).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from multiprocessing import get_context  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ITEMS, DIM, STEP, VERSIONS, CHANGE_AT, WITHIN = 400, 6, 20, 50, 500, 300
SIGMA0 = np.diag([3.0, 2.0, 0.0, 0.0, 0.0, 0.0])
SIGMA1 = np.diag([0.0, 0.0, 0.0, 0.0, 2.0, 3.0])
FLIPS, ANNOTATORS, CANDIDATES, RATE = 0.10, 4, 256, 0.05
STRATEGIES = ("random", "active", "targeted")  # active: the sampler's "uncertainty"


def _setup() -> None:
    import django

    django.setup()


class Study:
    """One simulated study: its answers so far (arrays) and its versions."""

    def __init__(self, strategy: str, per_pair: int, changed: bool, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.strategy, self.per_pair, self.changed = strategy, per_pair, changed
        self.x = 0.5 * self.rng.standard_normal((ITEMS, DIM))
        self.a, self.b, self.y, self.who = [], [], [], []
        self.answered: set[tuple[int, int]] = set()
        self.versions: list[dict] = []  # sigma, promise, total
        self.spent_at = 0  # answers when the study's false-alarm budget was last spent
        self.failed = 0  # fits that failed (no version, as a failed refit in the app)

    def sigma_now(self) -> np.ndarray:
        return SIGMA1 if self.changed and len(self.y) >= CHANGE_AT else SIGMA0

    def _candidates(self) -> np.ndarray:
        i = self.rng.integers(ITEMS, size=CANDIDATES)
        j = self.rng.integers(ITEMS - 1, size=CANDIDATES)
        j = j + (j >= i)
        pairs = np.unique(np.stack([np.minimum(i, j), np.maximum(i, j)], axis=1), axis=0)
        keep = [tuple(p) not in self.answered for p in pairs.tolist()]
        return pairs[np.array(keep, dtype=bool)]

    def pick(self) -> tuple[int, int]:
        """The app's strategy step (``sampling.py: _strategy_pair``) on arrays."""
        from annotation.labelling import strategies as picks

        cand = self._candidates()
        if self.strategy == "random" or not self.versions:
            return tuple(int(v) for v in cand[int(self.rng.integers(len(cand)))])
        control, own = picks.control_pick(picks.pair_control(cand[:, 0], cand[:, 1]), self.rng)
        if control is not None:
            return tuple(int(v) for v in cand[control])
        cand = cand[own]
        z = self.x[cand[:, 0]] - self.x[cand[:, 1]]
        q = np.einsum("ij,ij->i", z @ self.versions[-1]["sigma"], z)
        if self.strategy == "targeted":
            index, _ = picks.targeted_pick(q, self.rng)
        else:
            index = picks.uncertainty_pick(2.0 * expit(-q), self.rng)
        return tuple(int(v) for v in cand[index])

    def answer_batch(self) -> None:
        """``STEP`` answers: ``STEP / per_pair`` pairs, each answered by ``per_pair`` people."""
        for _ in range(STEP // self.per_pair):
            a, b = self.pick()
            self.answered.add((a, b))
            z = self.x[a] - self.x[b]
            truth = self.rng.random() < 2.0 * expit(-(z @ self.sigma_now() @ z))
            first = int(self.rng.integers(ANNOTATORS))
            for k in range(self.per_pair):
                flip = self.rng.random() < FLIPS
                self.a.append(a)
                self.b.append(b)
                self.y.append(float(truth != flip))
                self.who.append((first + k) % ANNOTATORS)

    def refit(self) -> dict:
        """A version: the app's fit on every answer so far, then its drift checks."""
        from learning.refits.fitting import fit_explore
        from learning.refits.pairs import PairData, pair_hash_unit

        a, b = np.array(self.a), np.array(self.b)
        unit = pair_hash_unit(a, b)
        pair = np.unique(a * ITEMS + b, return_inverse=True)[1].ravel()
        data = PairData(
            row_a=a,
            row_b=b,
            y=np.array(self.y),
            held_out=unit < 0.2,
            hash=unit,
            annotator=np.array(self.who),
            pair=pair,
            gold=np.full(a.size, np.nan),
        )
        try:
            outcome = fit_explore(
                data, lambda rows: self.x[rows], max_eigenvalue=None, weight_by_reliability=True
            )
        except (ValueError, np.linalg.LinAlgError):  # the app stores a failed version
            self.failed += 1
            return []
        version = {
            "sigma": outcome.sigma,
            "promise": outcome.diagnostics.get("drift_promise"),
            "total": a.size,
        }
        checks = self.checks(version)
        self.versions.append(version)
        return checks

    def _later(self, older: dict, total: int, sample: str):
        """``drift_check``'s read on arrays: answers after ``older`` up to ``total``, to pairs
        it never saw, control pairs only for ``sample`` "control"."""
        from annotation.labelling.strategies import pair_control

        a, b = np.array(self.a[older["total"] : total]), np.array(self.b[older["total"] : total])
        y = np.array(self.y[older["total"] : total])
        seen = set(zip(self.a[: older["total"]], self.b[: older["total"]], strict=True))
        keep = np.array([(i, j) not in seen for i, j in zip(a, b, strict=True)], dtype=bool)
        if sample == "control":
            keep &= pair_control(a, b)
        a, b, y = a[keep], b[keep], y[keep]
        clusters = np.unique(a * ITEMS + b, return_inverse=True)[1].ravel()
        return self.x[a] - self.x[b], y, clusters

    def checks(self, new: dict) -> list[dict]:
        """The worker's flagging checks of a new version (``drift_records``): the window check
        when due (no version is published here; the previous one's is shown, never flagged)."""
        from learning.versions.drift import (
            CHECK_MIN_ANSWERS,
            CHECK_MIN_VERSION_ANSWERS,
            WINDOW,
            judge,
            settle,
            version_level,
            window_due,
        )

        if not self.versions or not window_due(new["total"], self.versions[-1]["total"]):
            return []
        older = next(
            (v for v in reversed(self.versions) if v["total"] <= new["total"] - WINDOW), None
        )
        sample = "all" if self.strategy == "random" else "control"
        promise = None if older is None else older["promise"]
        if older is None or older["total"] < CHECK_MIN_VERSION_ANSWERS or not promise:
            return []
        if not promise[sample]:
            return []
        z, y, clusters = self._later(older, new["total"], sample)
        if y.size < CHECK_MIN_ANSWERS:
            return []
        level = version_level(RATE, new["total"], self.spent_at)
        self.spent_at = new["total"]
        check = settle(judge(older["sigma"], promise, z, y, clusters, sample, 0), level)
        return [{"flagged": check.flagged, "z": check.z, "answers": new["total"]}]


def run_study(args: tuple) -> dict:
    """One study of a cell: whether and when it was flagged."""
    strategy, per_pair, changed, seed, versions = args
    _setup()
    study = Study(strategy, per_pair, changed, seed)
    flags, judged, zs = [], 0, []
    for _ in range(versions):
        study.answer_batch()
        for check in study.refit():
            judged += 1
            zs.append(check["z"])
            if check["flagged"]:
                flags.append(check["answers"])
    before = [n for n in flags if not changed or n <= CHANGE_AT]
    after = [n - CHANGE_AT for n in flags if changed and n > CHANGE_AT]
    return {
        "cell": (strategy, per_pair, "changed" if changed else "stationary"),
        "false": bool(before),
        "detected": bool(after) and min(after) <= WITHIN,
        "delay": min(after) if after else None,
        "judged": judged,
        "failed": study.failed,
        "z_sd": float(np.std(zs)) if len(zs) > 1 else float("nan"),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="1 stationary study per strategy, 1 answer per pair"
    )
    parser.add_argument("--studies", type=int, default=20, help="stationary studies per cell")
    parser.add_argument("--changed-studies", type=int, default=10, help="changed ones per cell")
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args(argv)
    versions = 20 if args.quick else VERSIONS  # 400 answers: one window check
    stationary, changed = (1, 0) if args.quick else (args.studies, args.changed_studies)
    jobs = [
        (s, per_pair, flag, 1000 * per_pair + seed + (500 if flag else 0), versions)
        for s in args.strategies.split(",")
        for per_pair in ((1,) if args.quick else (1, 2))
        for flag, count in ((False, stationary), (True, changed))
        for seed in range(count)
    ]
    started = time.perf_counter()
    results = []
    with get_context("spawn").Pool(max(1, args.processes)) as pool:
        for result in pool.imap_unordered(run_study, jobs):
            results.append(result)
            print("study:", result, flush=True)  # kept if the run is cut short
    cells: dict = {}
    for result in results:
        cells.setdefault(result["cell"], []).append(result)
    print(f"{versions} versions of {STEP} answers; study-level rate {RATE}; change after "
          f"answer {CHANGE_AT}; flagged within {WITHIN} answers of it")  # fmt: skip
    print("| strategy | answers per pair | world | studies | flagged (false) | detected ≤ 300 "
          "| median delay | judged checks per study | sd of z |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for (strategy, per_pair, world), rows in sorted(cells.items()):
        n = len(rows)
        false = sum(r["false"] for r in rows)
        detected = sum(r["detected"] for r in rows) if world == "changed" else None
        delays = [r["delay"] for r in rows if r["delay"] is not None]
        print(
            f"| {strategy} | {per_pair} | {world} | {n} | {false}/{n} | "
            f"{'—' if detected is None else f'{detected}/{n}'} | "
            f"{np.median(delays) if delays else '—'} | "
            f"{np.mean([r['judged'] for r in rows]):.0f} | "
            f"{np.nanmean([r['z_sd'] for r in rows]):.2f} |"
        )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
