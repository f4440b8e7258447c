"""The audit's rates beyond one L and beyond k: the violation rate as a curve over L on the
neighbour graphs (Σ and Euclidean), and the all-pairs rate within ε estimated from uniformly
sampled pairs, with its interval (numbers: ``learning.core.fairness.curves``). The worker adds
them to the summary (``learning.audits.run.audit_compute``); the pages draw them
(``static/js/audit-curves.js``), two audits overlaid on the comparison page."""

from __future__ import annotations

import time

import numpy as np

from learning.audits.twins import twin_summary
from learning.core.fairness.curves import L_GRID, all_pairs_rate, rate_curve

SAMPLED_PAIRS = 200_000


def _neighbour_curve(idx, dist, scores, epsilon) -> dict:
    diff = np.abs(scores[:, None] - scores[idx])
    rates, limit, pairs = rate_curve(diff, dist, epsilon=epsilon)
    return {
        "rates": [None if np.isnan(r) else float(r) for r in rates],
        "limit": None if np.isnan(limit) else limit,
        "pairs": pairs,
    }


def curve_summary(
    *, idx_s, dist_s, idx_e, dist_e, sigma_points, points, scores, epsilon, lipschitz, seed=0
) -> dict:
    """``{"L": grid, "sigma": …, "euclidean": …}`` (each: the neighbour curve and the sampled
    all-pairs figures); ``dist_e`` and ``points`` already on the Euclidean scale."""
    out = {"L": [float(v) for v in L_GRID], "sampled_pairs": SAMPLED_PAIRS}
    for name, idx, dist, x in (
        ("sigma", idx_s, dist_s, sigma_points),
        ("euclidean", idx_e, dist_e, points),
    ):
        out[name] = {
            "neighbours": _neighbour_curve(idx, dist, scores, epsilon),
            "all_pairs": all_pairs_rate(
                x, scores, epsilon=epsilon, lipschitz=lipschitz, m=SAMPLED_PAIRS, seed=seed
            ).as_dict(),
        }
    return out


def further_figures(
    *, predictions, delta, n_boot, graphs, points, epsilon, lipschitz, timings: dict
) -> dict:
    """The summary's entries beyond the neighbour figures: the counterfactual twins
    (``learning.audits.twins.twin_summary``) and the curves; ``graphs``: the (neighbours,
    distances) of Σ and of the scaled Euclidean metric, ``points``: φW and the scaled φ.
    Records their seconds in ``timings``."""
    mark = time.perf_counter()
    counterfactual = twin_summary(predictions, delta=delta, n_boot=n_boot)
    timings["twins"], mark = time.perf_counter() - mark, time.perf_counter()
    (idx_s, dist_s), (idx_e, dist_e) = graphs
    curves = curve_summary(
        idx_s=idx_s,
        dist_s=dist_s,
        idx_e=idx_e,
        dist_e=dist_e,
        sigma_points=points[0],
        points=points[1],
        scores=predictions.scores,
        epsilon=epsilon,
        lipschitz=lipschitz,
    )
    timings["curves"] = time.perf_counter() - mark
    twins = predictions.twins
    return {
        "counterfactual": counterfactual,
        "twins": 0 if twins is None else len(twins.keys),
        "curves": curves,
    }
