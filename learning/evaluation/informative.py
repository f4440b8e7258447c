"""When a metric version is informative — for new people — and when it stops being so.

A version is judged on *new items* (``learning/versions/new_items.py``, whose module docstring
holds the rule and its thresholds): its own recipe refitted on each item fold's training part
(``learning/refits/newitems.py``: the penalty choice, the prior and the reliability weights
included; a derived Sigma by its derivation applied to each fold fit), scored on the pairs of
that fold's held-out items against the constant prediction. Three verdicts: "informative" (the
95 % interval of the gain per pair lies above 0), "not informative" (gain ≤ 0), "cannot tell
yet" (too few held-out items or answers, with what it needs; or a gain not yet beyond noise).
The pair-level figures (``heldout_*``: new pairs of items the fit saw) stay in the diagnostics
beside them and decide nothing.

A version never judged has a blank ``verdict`` and is not informative. Only an informative
version is the study's current metric (``learning/versions/selectors.py: version_current``:
sampling, suggestions, audits) or auto-published (``learning/evaluation/checks.py``).

The current version keeps earning its place (``version_recheck``): each refit scores its stored
Sigma on the answers that arrived after it — answers it never saw — against the constant rate
of the answers it was fitted on; once at least ``RECHECK_MIN`` such answers give a mean gain
≤ 0 it is "not informative" and loses its place (``diagnostics["validity"]["recheck"]``).
"""

from __future__ import annotations

from learning.models import MetricVersion
from learning.versions.new_items import (
    NOT_INFORMATIVE,
    Figures,
    new_items_verdict,
)
from learning.versions.storage import validity_store

RECHECK_MIN = 50  # answers after a version before it can lose its place


def version_judge(version: MetricVersion) -> dict:
    """Apply the rule to a ready version's new-items figures (``diagnostics["new_items"]``,
    written by the refit) and store the verdict on it (``storage.validity_store``); return it."""
    diag = version.diagnostics or {}
    stored = diag.get("new_items")
    if stored:
        fig = Figures(
            stored["gain"],
            stored["gain_interval"],
            stored["auc"],
            stored["items"],
            stored["pairs"],
            stored.get("loglik"),
        )
        answers = int(stored.get("answers") or 0)
    else:
        fig, answers = Figures(None, None, None, 0, 0), int(version.counts.get("observations") or 0)
    validity = new_items_verdict(fig, answers=answers, sample=(stored or {}).get("sample", "all"))
    if not stored and diag.get("new_items_error"):
        validity["summary"] = f"new items not scored: {diag['new_items_error']}"
    validity["judged_at_watermark"] = int(version.judgment_watermark)
    validity_store(version, validity)
    return validity


def version_recheck(version: MetricVersion, fig: Figures, *, watermark: int) -> bool:
    """Re-judge an informative version on the answers after it (``fig``: its stored Sigma on
    them, module docstring); store the figures, and the loss of its place when its gain is ≤ 0
    on at least ``RECHECK_MIN`` answers. True when it lost its place."""
    validity = dict((version.diagnostics or {}).get("validity") or {})
    if not validity:
        return False
    validity["recheck"] = fig.as_dict() | {"watermark": int(watermark)}
    lost = fig.pairs >= RECHECK_MIN and fig.gain is not None and fig.gain <= 0
    if lost:
        validity |= {
            "verdict": NOT_INFORMATIVE,
            "needs": "a newer version that beats the constant prediction",
            "summary": (
                f"lost its place: on the {fig.pairs} answers after it its gain over the "
                f"constant is {fig.gain:+.3f} per answer (was: {validity.get('summary', '')})"
            ),
            "judged_at_watermark": int(watermark),
        }
    validity_store(version, validity)
    return lost


def not_informative_line(stored: dict | None) -> str:
    """One readable line for a version judged not informative (``diagnostics["informative"]``),
    "" otherwise: pages show it beside the version."""
    if not stored or stored.get("informative", False):
        return ""
    return (
        f"Not informative for new people — not used as the study's current metric: "
        f"{stored['missing'] or 'never judged'} ({stored['summary']})."
    )
