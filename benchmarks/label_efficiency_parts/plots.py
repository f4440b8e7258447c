"""The curves as an HTML page (plotly, as the dashboards), loading the vendored plotly.js by
relative path."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .crowd import Yardstick
from .study import Run
from .tables import interval

ROOT = Path(__file__).resolve().parents[2]


def write_html(path: Path, runs: list[Run], stick: Yardstick, noise: dict | None) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=(
            "held-out log-likelihood vs labels (mean ± 95 % CI over seeds)",
            "‖Σ̂ − Σ₀‖_F / ‖Σ₀‖_F vs labels",
            "noise: held-out log-likelihood vs share of noisy annotators",
            "noise: AUC vs share of noisy annotators",
        ),
    )
    palette = ["#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a"]
    for k, strategy in enumerate(dict.fromkeys(r.strategy for r in runs)):
        group = [r for r in runs if r.strategy == strategy]
        points = sorted({n for r in group for n in r.labels})
        for col, attr in ((1, "loglik"), (2, "error")):
            stats = [
                interval([getattr(r, attr)[r.labels.index(n)] for r in group if n in r.labels])
                for n in points
            ]
            mean, lo, hi = (np.array(v) for v in zip(*stats, strict=True))
            color = palette[k % len(palette)]
            fig.add_trace(
                go.Scatter(x=points, y=mean, name=strategy, legendgroup=strategy,
                           showlegend=col == 1, line={"color": color},
                           error_y={"type": "data", "symmetric": False,
                                    "array": np.nan_to_num(hi - mean),
                                    "arrayminus": np.nan_to_num(mean - lo)}),
                row=1, col=col,
            )  # fmt: skip
    for value, label in ((stick.target, "95 % of full-data gain"), (stick.best, "Σ₀ itself")):
        fig.add_hline(y=value, line_dash="dot", annotation_text=label, row=1, col=1)
    if noise:
        shares = [100 * s for s in noise]
        for k, (key, name) in enumerate(
            (("plain", "plain EXPLORE"), ("weighted", "weighted EXPLORE"), ("face", "FACE"))
        ):
            for col, metric in ((1, "ll"), (2, "auc")):
                if key == "face" and metric == "ll":
                    continue
                stats = [interval([r[f"{key}_{metric}"] for r in rows]) for rows in noise.values()]
                mean, lo, hi = (np.array(v) for v in zip(*stats, strict=True))
                fig.add_trace(
                    go.Scatter(x=shares, y=mean, name=name, legendgroup=name,
                               showlegend=col == 2, line={"color": palette[k + 2], "dash": "dash"},
                               error_y={"type": "data", "symmetric": False,
                                        "array": np.nan_to_num(hi - mean),
                                        "arrayminus": np.nan_to_num(mean - lo)}),
                    row=2, col=col,
                )  # fmt: skip
    fig.update_xaxes(type="log", title_text="labels", row=1)
    fig.update_xaxes(title_text="noisy annotators (%)", row=2)
    fig.update_layout(height=820, title="fairmetric: label efficiency and noise robustness")
    path.parent.mkdir(parents=True, exist_ok=True)
    vendor = os.path.relpath(ROOT / "static/vendor/plotly/plotly.min.js", path.parent.resolve())
    fig.write_html(path, include_plotlyjs=vendor, full_html=True)
