"""Label efficiency of the sampler's strategies with a simulated crowd, and noise robustness.

    python benchmarks/label_efficiency.py            # 5 strategies x 4 seeds (~30 min, 1 core)
    python benchmarks/label_efficiency.py --quick    # random vs targeted, 1 seed (seconds)

**Database.** A throwaway SQLite file in a temporary directory (migrated, deleted at the end);
with DATABASE_URL set, that database instead (point it at an empty throwaway one: the rows
stay). Media and the broker's files go to the temporary directory too.

**Items** (``--items``, pluggable: ``SOURCES``): ``glove`` = GloVe 6B 50d vectors of the demo's
popular names and Hu & Liu opinion words (learning/glove_demo.py), a pool of ``names`` names plus as
many positive and negative words; ``adult`` = as many UCI Adult training records, embedded by
the demo's record-space φ, with Σ₀ = EXPLORE on the paper's Adult pairs (``adult_source``).
**Truth** Σ₀ (``glove``): EXPLORE fitted on the demo's construction
(random name pairs comparable, random positive/negative pairs incomparable, all the demo's
names and words, ``TRUTH_PAIRS`` per label) at a **fixed penalty** ``TRUTH_ALPHA`` = 0.1, so
the truth does not move when EXPLORE's penalty rule changes (the one-split ray rule picks
α ≈ 7.3 here: a Σ₀ so smooth that random's full-data gain over the start is 0.021 of
log-likelihood and the 95 % target sits inside the refit-to-refit noise; α = 0.1 gives back a
truth like the one the strategies were chosen on, Σ₀ scoring -0.434 against a start of -0.647).

**Crowd.** Ten simulated annotators, round-robin: five flip 0 %, then 5, 10, 20 and 30 %, and
one careless (answers at random). Each pair has one true label, drawn once from the paper's
response model P(comparable) = 2σ(-zᵀΣ₀z) (a hash of the pair and the seed: every strategy
meets the same truths), and each annotator reports it flipped at their rate.

**The loop** (no HTTP): ``annotation.labelling.sampling.next_pair`` (the real sampler: overlap 2, then the
study's strategy) → ``annotation.labelling.services.judgment_create`` → at each checkpoint
``learning.refits.service.refit_study`` (the worker's refit: snapshot, ``fit_explore``, version
stored, evaluated and judged for new people; FACE off, the rest the study defaults). The
sampler steers as in the app: by the newest version judged informative, uniformly (reason
``random``) until there is one, and then three quarters of a non-random strategy's picks are
control draws; the table gives each strategy's own share of the picks and the checkpoint of its
first informative version. (The figures of 2026-11-24 predate that gate and the control picks
(issue 35): the sampler then steered by every version from the first 20 answers on.) **Refit schedule**: after 20 labels and
then every factor √2 (20, 28, 40, 57, 80, 113, ...), and at ``--max-labels``; a run stops one
checkpoint after it first reaches the target.

**Yardstick.** Held-out log-likelihood: the expected log-likelihood of the fitted Σ̂ on
``HELD_OUT`` fresh random pool pairs, labels drawn from Σ₀ (expectation taken exactly:
Σ p₀ log p̂ + (1 - p₀) log(1 - p̂)); and ‖Σ̂ - Σ₀‖_F / ‖Σ₀‖_F. The **start** is the identity
scaled so the median held-out pair has P(comparable) = 1/2 (no data needed); the **full-data**
reference is EXPLORE (same defaults as ``fit_explore``) on ``--full-labels`` answers (1,810)
collected at random by the same crowd, each pair answered twice (as overlap 2 does), weighted
by reliability when the study default is: "the same held-out quality" is 95 % of what random
sampling gains with those answers. Each run's budget (``--max-labels``) is twice that, so that
random's own crossing lies inside its curve (with a budget equal to the reference, random met
the target only at its last checkpoint, in half the seeds, and the ratio read noise).
**Labels needed**: where a run's curve first reaches start + 95 % of the full-data gain
(interpolated linearly in log labels between checkpoints).

**Noise robustness** (``--noise-only`` runs just this part): pure numpy (no database), the same
pool and Σ₀; each pair answered by 3 of 20 annotators, a share 0-30 % of them noisy (flip 30 %),
the rest flip 2 %. Plain EXPLORE (every answer one observation), reliability-weighted EXPLORE
(``learning.core.reliability``) and FACE (k = 3, pairs judged comparable by majority as groups).

Prints markdown tables; ``--html`` writes the curves (plotly, as the dashboards) to a file that
loads ``static/vendor/plotly/plotly.min.js`` by relative path (open it from the checkout).

The parts are in benchmarks/label_efficiency_parts/ (items and truth, the crowd and the
yardstick, the study loop, tables, noise robustness, plots); this file is the command.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from label_efficiency_parts.crowd import CROWD_FLIPS, TARGET_SHARE, yardstick  # noqa: E402
from label_efficiency_parts.noise import noise_study, noise_table  # noqa: E402
from label_efficiency_parts.plots import write_html  # noqa: E402
from label_efficiency_parts.sources import SOURCES  # noqa: E402
from label_efficiency_parts.study import STRATEGIES, Run, checkpoints, configure, run_jobs  # noqa: E402
from label_efficiency_parts.tables import curve_table, efficiency_table, mean_curve_table  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 2 strategies, small")
    parser.add_argument("--items", choices=sorted(SOURCES), default="glove")
    parser.add_argument("--seeds", type=int)
    parser.add_argument("--strategies", help="comma-separated (default: all four)")
    parser.add_argument(
        "--full-labels",
        type=int,
        help="answers of the full-data reference (default 1810; --quick 160)",
    )
    parser.add_argument(
        "--max-labels",
        type=int,
        help="each run's budget (default twice --full-labels, so that random's crossing of the "
        "target is read inside the curve, not at its last point; --quick: --full-labels)",
    )
    parser.add_argument("--html", type=Path, help="write the curves here (plotly)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--target-share",
        type=float,
        help="share of the full-data gain to reach (default 0.95; --quick 0.5: its tiny budget "
        "is too noisy for 95 %%)",
    )
    parser.add_argument("--noise-only", action="store_true")
    parser.add_argument("--no-noise", action="store_true", help="skip the noise-robustness part")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="run studies in this many processes, each with its own SQLite file (default 1)",
    )
    args = parser.parse_args(argv)
    q = args.quick
    seeds = args.seeds or (1 if q else 4)
    strategies = (args.strategies or ("random,targeted" if q else ",".join(STRATEGIES))).split(",")
    unknown = set(strategies) - set(STRATEGIES)
    bad_share = args.target_share is not None and not 0 < args.target_share <= 1
    small = any(v is not None and v < 20 for v in (args.max_labels, args.full_labels))
    if unknown or bad_share or seeds < 1 or small:
        print(f"error: unknown strategy {sorted(unknown)}, target share outside (0, 1], seeds < 1 "
              "or max-labels/full-labels < 20",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.noise_only and args.no_noise:
        print("error: --noise-only and --no-noise exclude each other", file=sys.stderr)
        return 2
    if args.processes < 1 or (args.processes > 1 and os.environ.get("DATABASE_URL")):
        print("error: --processes must be >= 1, and 1 with DATABASE_URL", file=sys.stderr)
        return 2
    full_labels = args.full_labels or (160 if q else 1810)
    max_labels = args.max_labels or (full_labels if q else 2 * full_labels)
    workdir = Path(tempfile.mkdtemp(prefix="label-efficiency-"))
    started = time.perf_counter()
    try:
        database = configure(workdir)
        source = SOURCES[args.items](n_names=60 if q else 200)
        share = args.target_share or (0.5 if q else TARGET_SHARE)
        from learning.models import StudyLearningSettings

        weighted = StudyLearningSettings().weight_by_reliability  # the default the studies use
        stick = yardstick(source, full_labels, seed=0, share=share, weighted=weighted)
        print(
            f"## Label efficiency ({'quick' if q else 'full'}), {time.strftime('%Y-%m-%d %H:%M')}"
        )
        print(f"\nItems: {source.description}. Pool of {len(source.keys)} items.")
        print(f"Database: {database}; load average {os.getloadavg()[0]:.1f} at start.")
        print(f"Crowd: flip rates {CROWD_FLIPS} (0.5 = careless); overlap 2; seeds {seeds}.")
        print(
            f"Refits: the study defaults (answers weighted by reliability: {weighted}).\n"
            f"Held-out expected log-likelihood: start {stick.start:.4f}, full data "
            f"({full_labels:,} random answers, 2 per pair) {stick.full:.4f}, Σ₀ {stick.best:.4f}; target "
            f"(start + {share:.0%} of the gain) {stick.target:.4f}."
        )
        runs: list[Run] = []
        if not args.noise_only:
            schedule = checkpoints(max_labels)
            print(f"Budget per run: {max_labels:,} labels. Refit schedule (labels): {schedule}\n")
            jobs = [(strategy, seed) for seed in range(seeds) for strategy in strategies]
            runs = run_jobs(jobs, args.processes, workdir, source, stick, schedule)
            table, summary = efficiency_table(runs, stick, len(source.keys))
            print(table)
            print("\nLearning curves (held-out expected log-likelihood, mean [95 % CI]; error):\n")
            print(curve_table(runs))
            print("\nRead on the mean curves (labels to reach random's mean at its checkpoints):\n")
            print(mean_curve_table(runs))
        noise = None
        if not args.no_noise:
            shares = (0.0, 0.3) if q else (0.0, 0.1, 0.2, 0.3)
            noise = noise_study(
                source, shares, pairs=300 if q else 1200, seeds=2 if q else 4, stick=stick
            )
            print("\nNoise robustness (pure numpy; each pair answered by 3 of 20 annotators):\n")
            print(noise_table(noise))
        if args.html:
            write_html(args.html, runs, stick, noise)
        if args.json:
            args.json.write_text(json.dumps(
                {"command": "python benchmarks/label_efficiency.py " + " ".join(argv or sys.argv[1:]),
                 "measured": time.strftime("%Y-%m-%d %H:%M"),
                 "runs": [r.__dict__ | {"reasons": dict(r.reasons)} for r in runs],
                 "noise": {str(k): v for k, v in (noise or {}).items()},
                 "yardstick": {"start": stick.start, "full": stick.full, "target": stick.target,
                               "sigma0": stick.best}}, indent=1, default=float))  # fmt: skip
        print(f"\nwall time {time.perf_counter() - started:.0f} s")
        if args.noise_only:
            return 0
        best = max(
            (s for s in summary if s != "random" and np.isfinite(summary[s]["mean"])),
            key=lambda s: -summary[s]["mean"],
            default=None,
        )
        m = summary.get("random", {}).get("mean", np.nan)
        if not np.isfinite(m):
            print(f"label efficiency: random did not reach the target within {max_labels} labels")
            return 1
        if best is None:
            print(f"label efficiency: only random reached the target within {max_labels} labels "
                  f"({m:.0f})")  # fmt: skip
            return 1
        n = summary[best]["mean"]
        print(
            f"label efficiency: {best} needs {m / n:.1f}x fewer labels than random ({n:.0f} vs {m:.0f})"
        )
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
