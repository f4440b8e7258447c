"""Markdown summaries of the runs: labels to the target per strategy, learning curves, and the
reading on the mean curves."""

from __future__ import annotations

import numpy as np

from .crowd import Yardstick
from .study import Run


def interval(values) -> tuple[float, float, float]:
    """Mean and a 95 % t-interval over seeds (NaN bounds with one value)."""
    from scipy.stats import t as student

    v = np.asarray(values, dtype=float)
    mean = float(np.mean(v))
    if v.size < 2:
        return mean, float("nan"), float("nan")
    half = float(student.ppf(0.975, v.size - 1) * np.std(v, ddof=1) / np.sqrt(v.size))
    return mean, mean - half, mean + half


def fmt_interval(mean, lo, hi, digits=0) -> str:
    if not np.isfinite(mean):
        return "not reached"
    if not np.isfinite(lo):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def efficiency_table(runs: list[Run], stick: Yardstick, pool: int) -> tuple[str, dict]:
    lines = [
        "| strategy | labels to the target (mean [95 % CI] over seeds) | per seed | ratio vs random "
        "| overlap share | picked by the strategy | first current version (labels) "
        "| pool items touched | sampler s/label | refit s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    summary = {}
    by = {s: [r for r in runs if r.strategy == s] for s in dict.fromkeys(r.strategy for r in runs)}
    random_mean = np.nan
    for strategy, group in by.items():
        needed = np.array([r.needed(stick.target) for r in group])
        reached = needed[np.isfinite(needed)]
        mean, lo, hi = interval(reached) if reached.size == needed.size else (np.nan,) * 3
        if strategy == "random":
            random_mean = mean
        labels = sum(sum(r.reasons.values()) for r in group)
        overlap = sum(r.reasons["overlap"] for r in group) / max(labels, 1)
        own = sum(r.reasons[strategy] for r in group) / max(labels, 1)  # random's: all uniform
        current = ", ".join(str(r.first_current() or "–") for r in group)
        touched = np.mean([r.items_seen / pool for r in group])
        per_label = sum(r.sampler_s for r in group) / max(labels, 1)
        refit = sum(r.refit_s for r in group) / max(sum(len(r.labels) for r in group), 1)
        summary[strategy] = {"needed": needed.tolist(), "mean": mean, "ci": [lo, hi]}
        ratio = random_mean / mean if np.isfinite(mean) and np.isfinite(random_mean) else np.nan
        per_seed = ", ".join("–" if not np.isfinite(v) else f"{v:.0f}" for v in needed)
        lines.append(
            f"| {strategy} | {fmt_interval(mean, lo, hi)} | {per_seed} | "
            f"{'–' if not np.isfinite(ratio) else f'{ratio:.2f}x'} | {overlap:.0%} | {own:.0%} | "
            f"{current} | {touched:.0%} | {per_label * 1000:.0f} ms | {refit:.2f} |"
        )
    return "\n".join(lines), summary


def curve_table(runs: list[Run]) -> str:
    """Held-out log-likelihood and relative error per checkpoint, mean over the seeds that ran."""
    strategies = list(dict.fromkeys(r.strategy for r in runs))
    points = sorted({n for r in runs for n in r.labels})
    head = " | ".join(f"{s} loglik | {s} ‖Σ̂-Σ₀‖/‖Σ₀‖" for s in strategies)
    lines = [f"| labels | {head} |", "|---" * (1 + 2 * len(strategies)) + "|"]
    for n in points:
        cells = []
        for s in strategies:
            values = [
                (r.loglik[r.labels.index(n)], r.error[r.labels.index(n)])
                for r in runs
                if r.strategy == s and n in r.labels
            ]
            if not values:
                cells += ["", ""]
                continue
            ll, er = np.array(values).T
            m, lo, hi = interval(ll)
            cells += [fmt_interval(m, lo, hi, 4), f"{np.mean(er):.3f}"]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def first_reach(points, curve, level: float) -> float:
    """Labels at which ``curve`` (values at ``points``) first reaches ``level``, log-linear
    between points; NaN if never."""
    for k, value in enumerate(curve):
        if value >= level:
            if k == 0:
                return float(points[0])
            a, b = np.log(points[k - 1]), np.log(points[k])
            return float(np.exp(a + (level - curve[k - 1]) / (value - curve[k - 1]) * (b - a)))
    return float("nan")


def mean_curve_table(runs: list[Run]) -> str:
    """Labels each strategy's mean curve (over the seeds that ran each checkpoint) needs to
    reach random's mean at random's later checkpoints: the same reading for every strategy,
    less noisy than each run's first crossing of one target."""
    strategies = list(dict.fromkeys(r.strategy for r in runs))
    if "random" not in strategies:
        return ""
    mean = {}
    for s in strategies:
        group = [r for r in runs if r.strategy == s]
        points = sorted({n for r in group for n in r.labels})
        mean[s] = (
            points,
            [
                np.mean([r.loglik[r.labels.index(n)] for r in group if n in r.labels])
                for n in points
            ],
        )
    points, curve = mean["random"]
    head = " | ".join(f"{s} needs | ratio" for s in strategies if s != "random")
    lines = [
        f"| random's mean at (first reached at) | level | {head} |",
        "|---" * (2 * len(strategies)) + "|",
    ]
    for n, level in list(zip(points, curve, strict=True))[len(points) // 2 :]:
        own = first_reach(points, curve, level)  # random's own first reach (<= n: not monotone)
        cells = []
        for s in strategies:
            if s != "random":
                need = first_reach(*mean[s], level)
                cells += (
                    ["not reached", "–"]
                    if not np.isfinite(need)
                    else [f"{need:.0f}", f"{own / need:.2f}x"]
                )
        lines.append(f"| {n} ({own:.0f}) | {level:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
