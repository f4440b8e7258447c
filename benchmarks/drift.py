"""Do drift flags keep their error rate under the app's own sampling? (issue 35)

    python benchmarks/drift.py --processes 2 --save runs.jsonl   # 20 + 10 studies per cell
    python benchmarks/drift.py --quick         # 1 stationary study per strategy, 25 versions
    python benchmarks/drift.py --table a.jsonl b.jsonl           # the table of saved runs
    python benchmarks/drift.py --table a.jsonl --rate 0.1        # ... as if at another rate

A study: ``ITEMS`` items in d = 6, a version every 20 answers, 50 versions. Worlds
(``--worlds``): ``model`` — features ``0.5·N(0, 1)``, EXPLORE's response model under
Σ₀ = diag(3, 2, 0, 0, 0, 0), each answer flipped with probability 10 % (a pair's true label
drawn once); ``rule`` — two ``0.5·N(0, 1)`` columns and a 4-category column one-hot,
deterministic annotators (comparable exactly when zᵀΣz < ln 3), about whom EXPLORE's model is
wrong. Pairs are chosen by the app's pick functions (``annotation/labelling/strategies.py``:
the control picks — all picks while the drift flag watches (``--no-watch``: never) —
``targeted_pick``, ``uncertainty_pick`` (``active``), ``information_pick``, ``sampling.py``'s
strata for ``stratified``; 256 uniform unanswered candidates, the latest version's Σ, random
until the first; the app steers by the newest informative one); each pair answered by 1 or 2
annotators. Each version is the app's EXPLORE fit (``fitting.py: fit_explore``, reliability
weighting on, identity prior) with its drift promise, judged as the worker judges it (its
``window_due``, later answers, ``judge``, ``settle``, ``version_level``, minimum) against the
version 300 answers back (nothing published); ``drift_check``'s reads replayed on arrays.

Two tests per check, at the same level: ``flag``, the app's (later answers to control pairs,
every answer under ``random``: their gain over the constant against the promise); ``all
answers``, every later answer's surprise (``learning.core.drift.answer_surprises``) against the
held-out answers' (docs/refits.md). ``stationary``: the rule never changes; a study counts once
if any check flags. ``changed``: after answer 500 the rule is Σ₁ = diag(0, 0, 0, 0, 2, 3)
(``rule``: the category instead of the normal columns): studies flagged within 300 answers of
it and not before (a false alarm). ``--rate`` replays saved studies at another rate."""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from multiprocessing import get_context  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402
from scipy.stats import beta, norm  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ITEMS, DIM, STEP, VERSIONS, CHANGE_AT, WITHIN = 400, 6, 20, 50, 500, 300
SIGMA0 = np.diag([3.0, 2.0, 0.0, 0.0, 0.0, 0.0])
SIGMA1 = np.diag([0.0, 0.0, 0.0, 0.0, 2.0, 3.0])
FLIPS, ANNOTATORS, CANDIDATES, RATE = 0.10, 4, 256, 0.05
STRATEGIES = ("random", "active", "targeted", "information", "stratified")
WORLDS = ("model", "rule")  # (module docstring); active: the sampler's "uncertainty"
TESTS = (("flag", "gain", "strategy"), ("all answers", "surprise", "all"))


def _setup(control_picks: float | None = None) -> float:
    """Django, and this process's share of control picks (default the app's), returned."""
    import django

    django.setup()
    from annotation.labelling import strategies

    if control_picks is not None:
        strategies.CONTROL_PICKS = control_picks
    return strategies.CONTROL_PICKS


def world_items(world: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` items of a world (module docstring)."""
    x = 0.5 * rng.standard_normal((n, DIM))
    if world == "rule":
        x[:, 2:] = np.eye(DIM - 2)[rng.integers(DIM - 2, size=n)]
    return x


class Study:
    """One simulated study: its answers so far (arrays) and its versions."""

    def __init__(self, strategy, per_pair, changed, seed, world="model") -> None:
        self.rng = np.random.default_rng(seed)
        self.strategy, self.per_pair, self.changed, self.world = strategy, per_pair, changed, world
        self.x = world_items(world, ITEMS, self.rng)
        self.a, self.b, self.y, self.who = [], [], [], []
        self.answered: set[tuple[int, int]] = set()
        self.versions: list[dict] = []  # sigma, promise, total
        self.spent_at = 0  # answers when the study's false-alarm budget was last spent
        self.failed = 0  # fits that failed (no version, as a failed refit in the app)
        self.watch = True  # drift.py's watch (--no-watch: never)
        self.watching = False  # every pick a control pair until the next check (drift.py)

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
        share = 1.0 if self.watching else None  # sampling.py: the drift flag looks again
        control, own = picks.control_pick(
            picks.pair_control(cand[:, 0], cand[:, 1]), self.rng, share
        )
        if control is not None:
            return tuple(int(v) for v in cand[control])
        cand = cand[own]
        sigma = self.versions[-1]["sigma"]
        z = self.x[cand[:, 0]] - self.x[cand[:, 1]]
        q = np.einsum("ij,ij->i", z @ sigma, z)
        if self.strategy == "targeted":
            index, _ = picks.targeted_pick(q, self.rng)
        elif self.strategy == "information":  # the newest SCAN_ROWS answers: the crowd's
            recent = self.x[self.a[-300:]] - self.x[self.b[-300:]]
            values, vectors = np.linalg.eigh(sigma)
            factor = vectors * np.sqrt(np.maximum(values, 0.0))
            recent_q = np.einsum("ij,ij->i", recent @ sigma, recent)
            index, _ = picks.information_pick(z, q, recent, recent_q, factor, self.rng)
        elif self.strategy == "stratified":  # sampling.py's strata of log(1 + d)
            logd = np.log1p(q)
            edges = np.linspace(logd.min(), logd.max(), 6)
            stratum = np.clip(np.searchsorted(edges, logd, side="right") - 1, 0, 4)
            chosen = self.rng.choice(np.unique(stratum))
            index = int(self.rng.choice(np.flatnonzero(stratum == chosen)))
        else:
            index = picks.uncertainty_pick(2.0 * expit(-q), self.rng)
        return tuple(int(v) for v in cand[index])

    def answer_batch(self) -> None:
        """``STEP`` answers: ``STEP / per_pair`` pairs, each answered by ``per_pair`` people."""
        for _ in range(STEP // self.per_pair):
            a, b = self.pick()
            self.answered.add((a, b))
            z = self.x[a] - self.x[b]
            q = z @ self.sigma_now() @ z
            rule = self.world == "rule"  # deterministic: comparable when P(comparable) > 1/2
            truth = q < np.log(3.0) if rule else self.rng.random() < 2.0 * expit(-q)
            first = int(self.rng.integers(ANNOTATORS))
            for k in range(self.per_pair):
                flip = self.world == "model" and self.rng.random() < FLIPS
                self.a.append(a)
                self.b.append(b)
                self.y.append(float(truth != flip))
                self.who.append((first + k) % ANNOTATORS)

    def pair_data(self):
        """Every answer so far as the refit reads them (``PairData``)."""
        from learning.refits.pairs import PairData, pair_hash_unit

        a, b = np.array(self.a), np.array(self.b)
        unit = pair_hash_unit(a, b)
        pair = np.unique(a * ITEMS + b, return_inverse=True)[1].ravel()
        who, gold = np.array(self.who), np.full(a.size, np.nan)
        y = np.array(self.y)
        return PairData(a, b, y, unit < 0.2, unit, annotator=who, pair=pair, gold=gold)

    def refit(self) -> dict:
        """A version: the app's fit on every answer so far, then its drift checks."""
        from learning.refits.fitting import fit_explore

        data = self.pair_data()
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
            "total": len(data),
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
        from annotation.labelling.strategies import control_only
        from learning.versions import drift as app

        if not self.versions or not app.window_due(new["total"], self.versions[-1]["total"]):
            return []
        older = next(
            (v for v in reversed(self.versions) if v["total"] <= new["total"] - app.WINDOW), None
        )
        promise = None if older is None else older["promise"]
        if older is None or older["total"] < app.CHECK_MIN_VERSION_ANSWERS or not promise:
            return []
        level = app.version_level(RATE, new["total"], self.spent_at)
        out = {"answers": new["total"], "level": level}
        for name, statistic, sample in TESTS:
            if sample == "strategy":  # the app's rule: strategies.control_only
                sample = "control" if control_only(self.strategy) else "all"
            if not promise[sample]:
                out[name] = None
                continue
            z, y, clusters = self._later(older, new["total"], sample)
            if y.size < app.CHECK_MIN_ANSWERS:
                out[name] = None
                continue
            check = app.settle(
                app.judge(older["sigma"], promise, z, y, clusters, sample, 0, statistic), level
            )
            out[name] = (check.flagged, check.z, check.promised_gain)
            if name == "flag":  # the study's budget is spent when the flag judged
                self.spent_at = new["total"]
                self.watching = self.watch and app.sets_watch(check.sample, check.level, check.z)
        return [out]


def run_study(args: tuple) -> dict:
    """One study of a cell: its window checks (each test's flag, z and promised gain) and, per
    test, whether it was flagged before the change (false) and within ``WITHIN`` answers after."""
    strategy, per_pair, changed, seed, versions, world, share, watch = args
    share = _setup(share)
    study = Study(strategy, per_pair, changed, seed, world)
    study.watch = watch
    checks = []
    for _ in range(versions):
        study.answer_batch()
        checks += study.refit()
    from learning.versions.drift import WATCH_Z

    world_name = "changed" if changed else "stationary"
    out = {"cell": (world, strategy, per_pair, world_name), "checks": checks, "picks": share}
    out["watch"] = WATCH_Z if watch else None  # (the saved runs' field)
    return out | outcome(checks, changed)


def outcome(checks: list[dict], changed: bool) -> dict:
    """Per test, whether a study's ``checks`` flagged it before the change (false) and within
    ``WITHIN`` answers after."""
    out = {}
    for name, _, _ in TESTS:
        flags = [c["answers"] for c in checks if c[name] and c[name][0]]
        after = [n - CHANGE_AT for n in flags if changed and n > CHANGE_AT]
        out[name] = {
            "false": any(not changed or n <= CHANGE_AT for n in flags),
            "detected": bool(after) and min(after) <= WITHIN,
        }
    return out


def at_rate(result: dict, rate: float) -> dict:
    """A saved study as if its ``drift_alarm_rate`` were ``rate`` (``--rate``): each check's
    level scales with the rate; its z, whether it is made and whether it sets the watch do not."""
    checks = [
        c | {n: c[n] and [c[n][1] < -norm.isf(c["level"] * rate / RATE), *c[n][1:]] for n, *_ in TESTS}
        for c in result["checks"]
    ]  # fmt: skip
    return result | {"checks": checks} | outcome(checks, result["cell"][3] == "changed")


def run_jobs(run, jobs: list, processes: int, save: str | None) -> list[dict]:
    """``run`` on each job in ``processes`` processes, each result appended to ``save``."""
    results = []
    with get_context("spawn").Pool(max(1, processes)) as pool:
        for result in pool.imap_unordered(run, jobs):
            results.append(result)
            if save:
                with open(save, "a") as saved:
                    saved.write(json.dumps(result) + "\n")
    return results


def interval(k: int, n: int) -> str:
    """k of n with its 95 % Clopper-Pearson interval, in per cent."""
    if not n:
        return "—"
    lo = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} ({100 * lo:.0f}–{100 * hi:.0f} %)"


def table(results: list[dict]) -> None:
    """The table: per cell and test, stationary studies flagged (false alarms) with their
    interval and the z of their checks, changed studies flagged within ``WITHIN`` answers."""
    cells: dict = {}
    for result in results:  # random has none; earlier runs saved "share" (None: the ½ of then)
        share = result["picks"] if "picks" in result else result.get("share") or 0.5
        share = "—" if result["cell"][1] == "random" else share
        if share != "—" and result.get("watch") is None:
            share = f"{share}, no watch"
        cells.setdefault((*result["cell"][:3], share), []).append(result)
    print(f"| world | strategy | answers per pair | control picks | test | stationary: flagged "
          f"| z mean (sd) | changed: flagged ≤ {WITHIN} after |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for key, rows in sorted(cells.items()):
        still = [r for r in rows if r["cell"][3] == "stationary"]
        moved = [r for r in rows if r["cell"][3] == "changed"]
        for name, _, _ in TESTS:
            zs = [c[name][1] for r in still for c in r["checks"] if c[name]]
            false = sum(r[name]["false"] for r in still)
            caught = sum(r[name]["detected"] and not r[name]["false"] for r in moved)
            z = f"{np.mean(zs):+.2f} ({np.std(zs):.2f})" if zs else "—"
            print(f"| {' | '.join(map(str, key))} | {name} | {interval(false, len(still))} | "
                  f"{z} | {interval(caught, len(moved))} |")  # fmt: skip


def calibration(results: list[dict]) -> None:
    """Whether each stationary check keeps its level, pooled over cells: the share of checks
    with z below the normal 5 % and 1 % points (at most those for a standard normal or
    conservative z), and the checks flagged against the sum of their levels. No interval: a
    study's checks share answers. The union bound then gives the study's rate (docs/refits.md)."""
    print("| test | stationary studies flagged | their checks | z < −1.645 (nominal 5 %) | z < −2.326 (nominal 1 %) "
          "| checks flagged | sum of their levels |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    still = [r for r in results if r["cell"][3] == "stationary"]
    for name, _, _ in TESTS:
        judged = [c for r in still for c in r["checks"] if c[name]]
        zs = np.array([c[name][1] for c in judged], dtype=float)
        flagged = sum(bool(c[name][0]) for c in judged)
        levels = sum(c["level"] for c in judged)
        tails = [f"{int(np.sum(zs < t))} ({100 * np.mean(zs < t):.1f} %)" if zs.size else "—"
                 for t in (-1.645, -2.326)]  # fmt: skip
        studies = interval(sum(r[name]["false"] for r in still), len(still))
        print(
            f"| {name} | {studies} | {zs.size} | {tails[0]} | {tails[1]} | {flagged} | {levels:.2f} |"
        )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 study/strategy, 1 answer/pair")
    parser.add_argument("--studies", type=int, default=20, help="stationary studies per cell")
    parser.add_argument("--changed-studies", type=int, default=10, help="changed ones per cell")
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--worlds", default=",".join(WORLDS))
    parser.add_argument("--seed", type=int, default=0, help="the first study's seed")
    parser.add_argument("--control-picks", type=float, help="control draws' share (the app's)")
    parser.add_argument("--no-watch", action="store_true", help="no drift watch (its picks)")
    parser.add_argument("--save", help="append each study's result to this JSON-lines file")
    parser.add_argument("--table", nargs="*", help="only print the table of these saved files")
    parser.add_argument("--rate", type=float, help=f"the table at this rate (saved at {RATE})")
    args = parser.parse_args(argv)
    if args.table:
        lines = [line for path in args.table for line in Path(path).read_text().splitlines()]
        saved = [at_rate(json.loads(line), args.rate or RATE) for line in lines]
        table(saved)
        print()
        calibration(saved)
        return
    versions = 25 if args.quick else VERSIONS  # 500 answers: one window check (vs 200)
    stationary, changed = (1, 0) if args.quick else (args.studies, args.changed_studies)
    share = args.control_picks
    jobs = [  # study by study across the cells, so that a run cut short covers them all
        (s, per_pair, flag, args.seed + 1000 * per_pair + k + 500 * flag, versions, w, share,
         not args.no_watch)
        for k in range(max(stationary, changed))
        for w in (("model",) if args.quick else args.worlds.split(","))
        for s in args.strategies.split(",")
        for per_pair in ((1,) if args.quick else (1, 2))
        for flag, count in ((False, stationary), (True, changed))
        if k < count
    ]  # fmt: skip
    started = time.perf_counter()
    results = run_jobs(run_study, jobs, args.processes, args.save)
    print(f"{versions} versions of {STEP} answers; study-level rate {RATE}; change after "
          f"answer {CHANGE_AT}")  # fmt: skip
    table(results)
    print()
    calibration(results)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
