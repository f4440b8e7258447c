"""What a version's verdict says, in the one shape every reader shows: the ``validity`` object.

:func:`validity_of` builds it from what the evaluation stored on the version, in this order:

1. ``diagnostics["validity"]`` — the verdict on held-out *items* (new people): ``verdict`` one of
   ``informative``, ``not informative``, ``cannot tell yet``, with its figures;
2. else the older pair-level judgment (``diagnostics["informative"]`` and
   ``heldout_baselines``, basis "held-out pairs"): informative when the gain over the constant
   prediction lies above 0 beyond noise and the prior does not predict better; not informative
   when the gain lies below 0 beyond noise (or the prior predicts better); else cannot tell yet;
3. else ``cannot tell yet`` with ``needs`` "not judged" — a version is never informative by
   default (a FACE version, a projection or an import that nobody judged included).

``override`` is the recorded reason a version that was not informative was published anyway
(``MetricVersion.publish_override``: reason, by, at; :mod:`learning.versions.storage`).
:func:`validity_header` is the same object in one HTTP header (an RFC 8941 dictionary) for the
Sigma downloads.
"""

from __future__ import annotations

import math

from common.errors import Conflict
from learning.models import MetricVersion

INFORMATIVE = "informative"
NOT_INFORMATIVE = "not informative"
CANNOT_TELL = "cannot tell yet"
VERDICTS = (INFORMATIVE, NOT_INFORMATIVE, CANNOT_TELL)
NEW_ITEMS = "new items"
HELDOUT_PAIRS = "held-out pairs"
NOT_JUDGED = "not judged"
HEADER = "X-Fairmetric-Validity"
REASON_MAX_CHARS = 1000


class NotInformative(Conflict):
    """Publishing a version whose verdict is not ``informative`` without a reason (409)."""

    def __init__(self, message: str, validity: dict) -> None:
        super().__init__(message)
        self.validity = validity


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _interval(value) -> list[float] | None:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    low, high = _number(value[0]), _number(value[1])
    return None if low is None or high is None else [low, high]


def _count(value) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _figures(basis, gain, interval, auc, items, pairs) -> dict:
    return {
        "basis": basis,
        "gain": _number(gain),
        "gain_interval": _interval(interval),
        "auc": _number(auc),
        "items": _count(items),
        "pairs": _count(pairs),
    }


def _from_items(stored: dict) -> dict:
    verdict = stored.get("verdict")
    if verdict not in VERDICTS:
        verdict, needs = CANNOT_TELL, f"an unknown verdict {verdict!r} is stored"
    else:
        needs = str(stored.get("needs") or "")
    figures = _figures(
        stored.get("basis") or NEW_ITEMS,
        stored.get("gain"),
        stored.get("gain_interval"),
        stored.get("auc"),
        stored.get("items"),
        stored.get("pairs"),
    )
    return {
        "verdict": verdict,
        "figures": figures,
        "needs": needs,
        "summary": str(stored.get("summary") or ""),
    }


def _from_pairs(diagnostics: dict) -> dict | None:
    """The pair-level judgment, three-valued; None when there are no held-out figures."""
    baselines = diagnostics.get("heldout_baselines") or {}
    const, prior = baselines.get("constant") or {}, baselines.get("prior") or {}
    interval = _interval(const.get("gain_ci"))
    if interval is None:
        return None
    prior_interval = _interval(prior.get("gain_ci"))
    stored = diagnostics.get("informative") or {}
    if interval[0] > 0 and (prior_interval is None or prior_interval[1] >= 0):
        verdict, needs = INFORMATIVE, ""
    elif interval[1] < 0 or (prior_interval is not None and prior_interval[1] < 0):
        verdict = NOT_INFORMATIVE
        needs = str(stored.get("missing") or "it predicts held-out answers worse than the constant")
    else:
        verdict = CANNOT_TELL
        needs = str(stored.get("missing") or "more answers")
    figures = _figures(
        HELDOUT_PAIRS,
        const.get("gain"),
        interval,
        diagnostics.get("heldout_auc"),
        None,
        diagnostics.get("heldout_pairs"),
    )
    return {
        "verdict": verdict,
        "figures": figures,
        "needs": needs,
        "summary": str(stored.get("summary") or ""),
    }


def _not_judged() -> dict:
    return {
        "verdict": CANNOT_TELL,
        "figures": _figures(None, None, None, None, None, None),
        "needs": NOT_JUDGED,
        "summary": "",
    }


def _override(version: MetricVersion) -> dict | None:
    stored = version.publish_override
    if not isinstance(stored, dict) or not stored.get("reason"):
        return None
    return {"reason": str(stored["reason"]), "by": stored.get("by"), "at": stored.get("at")}


def validity_of(version: MetricVersion) -> dict:
    """The ``validity`` object of a version (module docstring): verdict, figures, needs,
    summary, override."""
    diagnostics = version.diagnostics if isinstance(version.diagnostics, dict) else {}
    stored = diagnostics.get("validity")
    if isinstance(stored, dict):
        validity = _from_items(stored)
    else:
        validity = _from_pairs(diagnostics) or _not_judged()
    return validity | {"override": _override(version)}


def is_informative(version: MetricVersion) -> bool:
    return validity_of(version)["verdict"] == INFORMATIVE


def _header_number(value: float) -> str:
    text = f"{value:.3f}"
    return "0.000" if text == "-0.000" else text


def _header_string(text) -> str:
    """An RFC 8941 string: printable ASCII, quotes and backslashes escaped."""
    clean = "".join(c for c in str(text) if " " <= c <= "~")
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


def validity_header(validity: dict) -> str:
    """The object as an RFC 8941 dictionary, e.g. ``verdict="not informative", basis="held-out
    pairs", gain=-0.055, gain-low=-0.065, gain-high=-0.045, auc=0.493, override=?1`` (figures
    that are missing are left out)."""
    figures = validity["figures"]
    parts = [f"verdict={_header_string(validity['verdict'])}"]
    if figures.get("basis"):
        parts.append(f"basis={_header_string(figures['basis'])}")
    if figures.get("gain") is not None:
        parts.append(f"gain={_header_number(figures['gain'])}")
    if figures.get("gain_interval"):
        low, high = figures["gain_interval"]
        parts.append(f"gain-low={_header_number(low)}, gain-high={_header_number(high)}")
    if figures.get("auc") is not None:
        parts.append(f"auc={_header_number(figures['auc'])}")
    for name in ("items", "pairs"):
        if figures.get(name) is not None:
            parts.append(f"{name}={int(figures[name])}")
    parts.append("override=?1" if validity.get("override") else "override=?0")
    return ", ".join(parts)


def verdict_line(validity: dict, *, needs: bool = True) -> str:
    """One readable line: the verdict, its figures and (``needs``) what it lacks."""
    figures = validity["figures"]
    line = validity["verdict"]
    if figures.get("basis"):
        line += f" on {figures['basis']}"
    bits = []
    if figures.get("gain") is not None:
        gain = f"gain over the constant {figures['gain']:+.3f} per answer"
        if figures.get("gain_interval"):
            low, high = figures["gain_interval"]
            gain += f" (95 % interval {low:+.3f} to {high:+.3f})"
        bits.append(gain)
    if figures.get("auc") is not None:
        bits.append(f"held-out AUC {figures['auc']:.3f}")
    if bits:
        line += ": " + ", ".join(bits)
    if needs and validity.get("needs") and validity["verdict"] != INFORMATIVE:
        line += f" — {validity['needs']}"
    return line
