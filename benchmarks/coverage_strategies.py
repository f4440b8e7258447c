"""Does the new-items interval cover under the app's own sampling? (issue 35)

    python benchmarks/coverage_strategies.py --processes 2 --save runs.jsonl   # 50 per cell
    python benchmarks/coverage_strategies.py --quick      # one study per strategy (seconds)
    python benchmarks/coverage_strategies.py --table runs.jsonl   # the table of saved runs

A study of ``benchmarks/drift.py`` (its worlds ``model`` and ``rule``, 400 items in d = 6, the
rule Σ₀ never changing; pairs chosen by the app's pick functions with its control picks,
``--no-watch``; each pair answered by 1 or 2 annotators), refitted every 100 answers so that the
adaptive strategies steer by the latest fit (not modelled: the app waits for a version judged
informative, and picks uniformly until then: the harder case here). At 1,000 answers, the app's
new-items check (``learning/refits/newitems.py``: the EXPLORE recipe with reliability weighting
on each item fold's training part) is scored two ways on the same fold fits: ``app`` — what the
app scores (``scoring``: the held-out answers to control pairs against the training part's
control rate under every strategy but random; every held-out answer under random) — and
``every held-out answer`` (what it scored before, against every training answer's rate). Each
interval is asked whether it covers its truth: the fold fits' expected gain over their constant
on a fresh pair of *new* people (20,000 uniform pairs of 2,000 items drawn anew from the world,
the labels' probabilities as the world's annotators give them, averaged over the folds as the
scored pairs weigh them). "below"/"above": intervals that lie below/above the truth.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import drift as world  # noqa: E402

ANSWERS, REFIT_EVERY, NEW_ITEMS, TRUTH_PAIRS = 1000, 100, 2000, 20_000
SAMPLES = ("app", "every held-out answer")


def comparable(name: str, q: np.ndarray) -> np.ndarray:
    """P(an answer says comparable) at squared distance ``q`` under Σ₀ in world ``name``."""
    if name == "rule":  # deterministic annotators
        return (q < np.log(3.0)).astype(float)
    return world.FLIPS + (1.0 - 2.0 * world.FLIPS) * 2.0 * expit(-q)


def run_study(job) -> dict:
    """One study (module docstring): both intervals and their truths."""
    strategy, per_pair, name, seed, answers = job
    world._setup()
    from annotation.labelling.strategies import control_only
    from learning.refits import newitems
    from learning.refits.fitting import fit_explore
    from learning.versions.new_items import distance_loglik, new_item_figures, scored_loglik

    study = world.Study(strategy, per_pair, False, seed, name)
    study.watch = False
    read = study.x.__getitem__
    while len(study.y) < answers:
        study.answer_batch()
        if len(study.y) % REFIT_EVERY == 0 and len(study.y) < answers:
            try:
                fit = fit_explore(
                    study.pair_data(), read, max_eigenvalue=None, weight_by_reliability=True
                )
            except (ValueError, np.linalg.LinAlgError):
                continue
            study.versions.append({"sigma": fit.sigma, "promise": None, "total": len(study.y)})
    pairs = study.pair_data()
    recipe = newitems.explore_recipe(
        read, max_eigenvalue=None, prior=None, prior_name="identity", weight_by_reliability=True
    )
    folds = newitems.fold_fits(pairs, recipe)
    rng = np.random.default_rng([seed, 35])
    fresh = world.world_items(name, NEW_ITEMS, rng)
    i, j = rng.integers(0, NEW_ITEMS, size=(2, TRUTH_PAIRS))
    z = fresh[i[i != j]] - fresh[j[i != j]]
    p = comparable(name, np.einsum("ij,jk,ik->i", z, world.SIGMA0, z))
    out = {"cell": [name, strategy, per_pair], "seed": seed}
    for sample, only in zip(SAMPLES, (control_only(strategy), False), strict=True):
        split, scored, rates = newitems.scoring(pairs, only)
        fits = [
            fit if np.any(scored & (split.held == k)) else None for k, fit in enumerate(folds.fits)
        ]
        a, b, y, fold = (
            pairs.row_a[scored],
            pairs.row_b[scored],
            pairs.y[scored],
            split.held[scored],
        )
        fig = new_item_figures(study.x[a] - study.x[b], y, fold, rates, fits, a, b)
        gains, weights = [], []
        for k, fit in enumerate(fits):
            if fit is not None:
                d = np.maximum(np.einsum("ij,jk,ik->i", z, fit, z), 0.0)
                gains.append(float(np.mean(distance_loglik(d, p) - scored_loglik(rates[k], p))))
                weights.append(int(np.sum(fold == k)))
        truth = float(np.average(gains, weights=weights)) if gains else None
        out[sample] = {"truth": truth, "gain": fig.gain, "interval": fig.gain_interval,
                       "pairs": fig.pairs}  # fmt: skip
    return out


def table(results: list[dict]) -> None:
    """Coverage per cell and pooled, with its Monte Carlo standard error."""
    print("| world | strategy | answers per pair | studies | scored pairs (app / every) "
          + "".join(f"| {s}: coverage (below / above) | {s}: mean error " for s in SAMPLES)
          + "|")  # fmt: skip
    print("|---" * (5 + 2 * len(SAMPLES)) + "|")
    cells: dict = {}
    for result in results:
        cells.setdefault(tuple(result["cell"]), []).append(result)
    pooled = {s: {"all": [0, 0, 0], "adaptive": [0, 0, 0]} for s in SAMPLES}
    for cell, found in sorted(cells.items()):
        row = f"| {cell[0]} | {cell[1]} | {cell[2]} | {len(found)} | "
        row += " / ".join(f"{np.mean([r[s]['pairs'] for r in found]):.0f}" for s in SAMPLES)
        for sample in SAMPLES:
            hits, errors = [0, 0, 0], []
            for result in found:
                got = result[sample]
                if got["interval"] is None or got["truth"] is None:
                    continue
                low, high = got["interval"]
                hit = 0 if low <= got["truth"] <= high else (1 if high < got["truth"] else 2)
                hits[hit] += 1
                errors.append(got["gain"] - got["truth"])
                pooled[sample]["all"][hit] += 1
                if cell[1] != "random":
                    pooled[sample]["adaptive"][hit] += 1
            row += f" | {_cover(hits)} | {np.mean(errors):+.4f}" if errors else " | — | —"
        print(row + " |")
    print()
    for sample in SAMPLES:
        for which, hits in pooled[sample].items():
            print(f"* {sample}, {which} studies: {_cover(hits, se=True)}")


def _cover(hits: list[int], se: bool = False) -> str:
    n = sum(hits)
    if not n:
        return "—"
    c = hits[0] / n
    spread = f" ± {np.sqrt(c * (1 - c) / n):.3f}" if se else ""
    return f"{c:.3f}{spread} ({hits[1]} / {hits[2]} of {n})"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one study per strategy, 300 answers")
    parser.add_argument("--studies", type=int, default=50, help="studies per cell")
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--strategies", default=",".join(world.STRATEGIES))
    parser.add_argument("--worlds", default=",".join(world.WORLDS))
    parser.add_argument("--seed", type=int, default=1000, help="the first study's seed")
    parser.add_argument("--save", help="append each study's result to this JSON-lines file")
    parser.add_argument("--table", nargs="*", help="only print the table of these saved files")
    args = parser.parse_args(argv)
    if args.table:
        table([json.loads(ln) for p in args.table for ln in Path(p).read_text().splitlines()])
        return
    answers = 300 if args.quick else ANSWERS
    jobs = [  # study by study across the cells, so that a run cut short covers them all
        (strategy, per_pair, name, args.seed + k, answers)
        for k in range(1 if args.quick else args.studies)
        for name in (("model",) if args.quick else args.worlds.split(","))
        for strategy in args.strategies.split(",")
        for per_pair in ((1,) if args.quick else (1, 2))
    ]
    started = time.perf_counter()
    results = world.run_jobs(run_study, jobs, args.processes, args.save)
    print(f"{answers} answers, a fit every {REFIT_EVERY} steering the sampler")
    table(results)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
