"""Pair-selection rules measured in a numpy replica of the label-efficiency study loop.

    python benchmarks/strategy_replica.py                      # 8 rules x 4 seeds (~6 min, 2 cores)
    python benchmarks/strategy_replica.py --quick              # 2 rules, 1 seed, short budget

``benchmarks/label_efficiency.py`` runs the app's own sampler and refit against a database;
that is the yardstick for what the app ships. Trying a selection rule there means building it
into the sampler first. This replica runs the same experiment without a database, so a rule can
be measured before it is built. It uses the same pool, the same truth Σ₀ and crowd (ten
annotators, flip rates 0–30 % and one careless), overlap 2 (each chosen pair is answered by two
annotators in turn), refits at the same √2 schedule with the refit's estimator, and the same
yardstick with the same target. The estimator is EXPLORE with its penalty chosen on pair-hash
folds, then reliability-weighted by EM at that penalty (``learning.refits.fitting.fit_explore``).

Rules (``--strategies``), each picking the first answer to a new pair (random until the first
fit):

* ``random``; ``targeted`` (as the app's: P(comparable) under Σ̂ nearest 0.65, 5 % uniform);
  ``uncertainty`` (nearest 1/2);
* ``vopt``: a **greedy batch V-optimal design** under Σ̂'s full curvature. After each refit it
  draws 4,096 random candidate pairs and picks, one at a time, the candidate that most reduces
  ``tr(G M⁻¹)``. That trace is the asymptotic excess held-out loss of the penalised fit:
  ``M`` is the information of the answers so far plus the penalty (n·β in EXPLORE's whitened
  coordinates) and ``G`` the pool's information. Each pick updates ``M`` (Sherman–Morrison),
  so the batch is diverse. The Fisher information is that of an answer flipped at the
  crowd's rate (``--eps``, 0.1), and 10 % of picks are uniform;
* ``band``: P(comparable) under Σ̂ nearest a level drawn afresh per pick from U(0.35, 0.95),
  which spreads the picks over the comparable side instead of one level set;
* ``oracle-targeted``, ``oracle-vopt``, ``oracle-band``: the same rules choosing with the
  **true** Σ₀ instead of Σ̂. This is a diagnostic that no study can run: what each rule would
  give if it knew the metric.

Prints the labels each run needs to reach the target (95 % of the gain of 1,810 random
answers), with the ratio against random, and the mean-curve reading of
``label_efficiency.py``. ``--processes`` splits the runs over worker processes.
docs/active_learning.md ("Selection rules in the replica") has the figures.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from multiprocessing import get_context  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from label_efficiency_parts import crowd, sources, study, tables  # noqa: E402

RULES = (
    "random",
    "targeted",
    "uncertainty",
    "vopt",
    "band",
    "oracle-targeted",
    "oracle-vopt",
    "oracle-band",
)
CANDIDATES = 256  # per pick, as the app's sampler
DESIGN_CANDIDATES = 4096  # per refit, for vopt
DESIGN_POOL = 2000  # random pool pairs that estimate G
TARGETED_P, TARGETED_UNIFORM = 0.65, 0.05
VOPT_UNIFORM = 0.10
BAND = (0.35, 0.95)


def noisy_information(q: np.ndarray, eps: float) -> np.ndarray:
    """Fisher information about q = zᵀΣz of one answer flipped at rate ``eps``:
    ``p_e = (1 - e)p + e(1 - p)``, ``p = 2σ(-q)``; finite as q -> 0 when eps > 0."""
    q = np.maximum(np.asarray(q, dtype=np.float64), 1e-12)
    s = expit(-q)
    p, slope = 2.0 * s, -2.0 * s * (1.0 - s)
    pe = (1.0 - eps) * p + eps * (1.0 - p)
    return (slope * (1.0 - 2.0 * eps)) ** 2 / np.maximum(pe * (1.0 - pe), 1e-300)


def vech(zt: np.ndarray) -> np.ndarray:
    """vech(z zᵀ) per row, off-diagonal entries times √2, so ⟨u, vech(Δ)⟩ = zᵀΔz."""
    i, j = np.triu_indices(zt.shape[1])
    return zt[:, i] * zt[:, j] * np.where(i == j, 1.0, np.sqrt(2.0))


class VOptimalDesign:
    """Greedy batch V-optimal design for one fit (see the module docstring).

    Coordinates: z̃ = W^{-1/2} z with ``W`` EXPLORE's penalty metric (the curvature-weighted
    second moment of the answers at the prior), where its penalty is the ridge n·β·I."""

    def __init__(self, x, sigma, beta, prior_scale, answered_z, answered_y, eps, rng):
        from learning.core._pairloss import curvature

        n = len(answered_z)
        h0 = curvature(prior_scale * np.einsum("ij,ij->i", answered_z, answered_z), answered_y)
        h0 = np.minimum(h0, np.quantile(h0, 0.99))
        w, v = np.linalg.eigh((answered_z * h0[:, None]).T @ answered_z / n)
        self.whiten = v / np.sqrt(np.maximum(w, w.max() * 1e-9))

        def features(z):
            return vech(z @ self.whiten), noisy_information(crowd.quad(z, sigma), eps)

        u, h = features(answered_z)
        m = (u * h[:, None]).T @ u + n * beta * np.eye(u.shape[1])
        self.minv = np.linalg.inv(m)
        i, j = crowd.random_pairs(len(x), DESIGN_POOL, rng)
        up, hp = features(x[i] - x[j])
        gram = (up * hp[:, None]).T @ up / DESIGN_POOL
        self.b = self.minv @ gram @ self.minv
        self.ci, self.cj = crowd.random_pairs(len(x), DESIGN_CANDIDATES, rng)
        self.uc, self.hc = features(x[self.ci] - x[self.cj])
        self.reduce = np.einsum("ij,ij->i", self.uc @ self.b, self.uc)  # uᵀ M⁻¹GM⁻¹ u
        self.var = np.einsum("ij,ij->i", self.uc @ self.minv, self.uc)  # uᵀ M⁻¹ u
        self.alive = np.ones(DESIGN_CANDIDATES, dtype=bool)

    def pick(self) -> tuple[int, int]:
        gain = np.where(self.alive, self.hc * self.reduce / (1.0 + self.hc * self.var), -np.inf)
        k = int(np.argmax(gain))
        self.alive[k] = False
        u, h = self.uc[k], self.hc[k]
        kv, mv = self.minv @ u, self.b @ u
        c, a = h / (1.0 + h * float(u @ kv)), float(u @ mv)
        uk, um = self.uc @ kv, self.uc @ mv
        self.var -= c * uk**2
        self.reduce -= 2.0 * c * uk * um - c * c * a * uk**2
        self.minv -= c * np.outer(kv, kv)
        self.b -= c * (np.outer(kv, mv) + np.outer(mv, kv)) - c * c * a * np.outer(kv, kv)
        return int(self.ci[k]), int(self.cj[k])


def nearest_level(x, sigma, level: float, rng) -> tuple[int, int]:
    ci, cj = crowd.random_pairs(len(x), CANDIDATES, rng)
    gap = np.abs(2.0 * expit(-crowd.quad(x[ci] - x[cj], sigma)) - level)
    k = int(np.argmin(gap))
    return int(ci[k]), int(cj[k])


def fit(z, y, who, pair, lo, hi):
    """The refit's estimator: EXPLORE on pair-hash folds, then reliability EM at its penalty
    (unweighted below 20 distinct pairs, as ``learning.refits.fitting``)."""
    from learning.core.explore import EXPLORE
    from learning.core.reliability import ReliableEXPLORE

    fold = np.minimum((crowd.unit_hash(lo, hi, 99) * 5).astype(np.int64), 4)
    plain = EXPLORE(random_state=0).fit_differences(z, y, validation=fold)
    if np.unique(pair).size < 20:
        return plain, plain.sigma_
    weighted = ReliableEXPLORE(explore_params={"random_state": 0}).fit_differences(
        z, y, who, pair=pair, plain=plain
    )
    return plain, weighted.sigma_


def replica_run(rule, seed, source, stick, max_labels, eps) -> study.Run:
    x, sigma0 = source.vectors, source.sigma0
    rng = np.random.default_rng(seed)
    schedule = set(study.checkpoints(max_labels))
    run = study.Run(rule, seed)
    rows: list[tuple[int, int, int, int]] = []  # (i, j, annotator, pair code)
    sigma, design = None, None
    oracle = rule.startswith("oracle-")
    base = rule.removeprefix("oracle-")
    while len(rows) < max_labels:
        started = time.perf_counter()
        guide = sigma0 if oracle else sigma
        uniform = {"targeted": TARGETED_UNIFORM, "vopt": VOPT_UNIFORM}.get(base, 0.0)
        if (
            sigma is None  # before the first fit, every rule picks at random
            or base == "random"
            or (base == "vopt" and design is None)
            or rng.random() < uniform
        ):
            i, j = (int(v[0]) for v in crowd.random_pairs(len(x), 1, rng))
            reason = "random"
        elif base == "vopt":
            i, j = design.pick()
            reason = rule
        else:
            level = {"targeted": TARGETED_P, "uncertainty": 0.5}.get(base) or rng.uniform(*BAND)
            i, j = nearest_level(x, guide, level, rng)
            reason = rule
        run.sampler_s += time.perf_counter() - started
        code = rows[-1][3] + 1 if rows else 0  # the new pair's code
        for answer in range(2):  # overlap 2: the next annotator answers the same pair
            if len(rows) >= max_labels:
                break
            rows.append((i, j, len(rows) % len(crowd.CROWD_FLIPS), code))
            run.reasons["overlap" if answer else reason] += 1
            if len(rows) not in schedule:
                continue
            started = time.perf_counter()
            ii, jj, who, pair = (np.array(c) for c in zip(*rows, strict=True))
            z = x[ii] - x[jj]
            y = crowd.answers(
                ii, jj, crowd.p_of(crowd.quad(z, sigma0)), who, crowd.CROWD_FLIPS, seed
            )
            lo, hi = np.minimum(ii, jj), np.maximum(ii, jj)
            try:
                plain, sigma = fit(z, y, who, pair, lo, hi)
            except ValueError:  # too few answers or one label only: keep the previous fit
                plain = None
            if plain is not None and base == "vopt" and sigma is not None:
                design = VOptimalDesign(
                    x, sigma0 if oracle else sigma, plain.alpha_, plain.prior_scale_, z, y, eps, rng
                )
            run.refit_s += time.perf_counter() - started
            run.labels.append(len(rows))
            run.loglik.append(stick.loglik(sigma))
            run.error.append(stick.error(sigma))
    run.items_seen = len({r[0] for r in rows} | {r[1] for r in rows})
    return run


_STATE: dict = {}


def _init(source, stick, max_labels, eps) -> None:
    _STATE.update(source=source, stick=stick, max_labels=max_labels, eps=eps)


def _job(rule_seed) -> study.Run:
    rule, seed = rule_seed
    s = _STATE
    return replica_run(rule, seed, s["source"], s["stick"], s["max_labels"], s["eps"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strategies", default=",".join(RULES), help="comma-separated rules")
    parser.add_argument("--items", choices=sorted(sources.SOURCES), default="glove")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--max-labels", type=int, default=2560)
    parser.add_argument("--full-labels", type=int, default=1810)
    parser.add_argument("--eps", type=float, default=0.1, help="flip rate in vopt's information")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="random and targeted, 1 seed, 320")
    args = parser.parse_args(argv)
    rules = args.strategies.split(",")
    if args.quick:
        rules, args.seeds, args.max_labels = ["random", "targeted"], 1, 320
    unknown = sorted(set(rules) - set(RULES))
    if unknown:
        parser.error(f"unknown rule(s) {', '.join(unknown)}; choose from {', '.join(RULES)}")
    if "random" not in rules:
        rules.insert(0, "random")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    import django

    django.setup()  # the item sources read their packaged data through the settings
    started = time.time()
    source = sources.SOURCES[args.items](n_names=200)
    stick = crowd.yardstick(source, args.full_labels, 0, crowd.TARGET_SHARE, True)
    print(
        f"# {source.description}\nstart {stick.start:.4f}, full data ({args.full_labels} random "
        f"answers) {stick.full:.4f}, target {stick.target:.4f}, Σ₀ {stick.best:.4f}",
        flush=True,
    )
    jobs = [(rule, seed) for rule in rules for seed in range(args.seeds)]
    init = (source, stick, args.max_labels, args.eps)
    if args.processes > 1:
        with get_context("fork").Pool(args.processes, _init, init) as pool:
            runs = pool.map(_job, jobs, chunksize=1)
    else:
        _init(*init)
        runs = [_job(job) for job in jobs]
    table, _ = tables.efficiency_table(runs, stick, len(source.keys))
    print(table.replace("| sampler s/label | refit s |", "| selection s/label | refit s |"))
    print()
    print(tables.mean_curve_table(runs))
    print()
    print(tables.curve_table(runs))
    print(f"\n{time.time() - started:.0f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
