"""When a metric version is informative: the one rule, and what a version that is not lacks.

An EXPLORE version is *informative* when, on held-out pairs (each scored by a fit that did not
see it, at a penalty chosen without that pair's fold, shrunk toward a prior that did not see it
either: ``learning/core/_explore_path.py``, ``learning/refits/face_fits.py: face_prior``), it
predicts the answers better than the constant prediction — every pair comparable with the
training part's observed rate — beyond noise (the 95 % interval of its paired per-pair gain lies
above 0), and its prior does not predict them better beyond noise (the interval of its gain over
the prior does not lie below 0). A version that shrinks to a prior which already predicts is
informative; one that shrinks to an uninformative prior is not.

A version that is not informative is stored, shown with its figures and what is missing, and is
never the study's current metric (``learning/versions/selectors.py: version_current``: sampling,
suggestions) nor auto-published (``learning/evaluation/checks.py``). Other methods (FACE) have no
held-out likelihood and are informative by this rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from learning.models import MetricVersion

Method = MetricVersion.Method


@dataclass(frozen=True)
class Verdict:
    """``informative``; ``summary``: the held-out figures in one line; ``missing``: what the
    version lacks ("" when informative)."""

    informative: bool
    summary: str
    missing: str

    def as_dict(self) -> dict:
        return {"informative": self.informative, "summary": self.summary, "missing": self.missing}


def _answers_needed(gain: float, low: float, pairs: int) -> int | None:
    """Held-out pairs' interval half-width shrinks as 1/√n: about how many more answers bring
    its lower end above 0 for the same mean gain (None when the gain is not positive)."""
    half = gain - low
    if gain <= 0 or half <= 0 or pairs <= 0:
        return None
    return max(1, int(round(pairs * ((half / gain) ** 2 - 1.0))))


def informative_verdict(method: str, diagnostics: dict) -> Verdict:
    """The rule (module docstring) on a version's stored diagnostics."""
    if method != Method.EXPLORE:
        return Verdict(True, "", "")
    base = diagnostics.get("heldout_baselines") or {}
    const, prior = base.get("constant"), base.get("prior")
    if not const or not prior or None in (*const["gain_ci"], *prior["gain_ci"]):
        return Verdict(
            False,
            "no held-out comparison",
            "held-out pairs of both labels to compare the fit with the constant prediction",
        )
    c_lo, c_hi = const["gain_ci"]
    p_lo, p_hi = prior["gain_ci"]
    fit = diagnostics.get("heldout_loglik")
    summary = (
        f"held-out log-likelihood {fit:.3f} per pair; constant prediction {const['loglik']:.3f} "
        f"(gain {const['gain']:+.3f}, 95 % interval {c_lo:+.3f} to {c_hi:+.3f}); prior "
        f"{prior['loglik']:.3f} (gain {prior['gain']:+.3f}, {p_lo:+.3f} to {p_hi:+.3f})"
    )
    if c_lo > 0 and p_hi >= 0:
        return Verdict(True, summary, "")
    if p_hi < 0:
        missing = "its prior predicts the held-out answers better; more answers are needed"
    else:
        pairs = int(diagnostics.get("heldout_pairs") or 0)
        more = _answers_needed(const["gain"], c_lo, pairs)
        missing = (
            "it does not yet predict held-out answers better than the observed comparable rate"
            + (f"; about {more} more answers at this gain" if more else "; more answers")
            + " (answers on pairs that differ in what matters help most)"
        )
    return Verdict(False, summary, missing)


def version_judge(version: MetricVersion) -> Verdict:
    """Apply the rule to a ready version: store ``informative`` and ``diagnostics["informative"]``
    on it (one UPDATE) and return the verdict."""
    verdict = informative_verdict(version.method, version.diagnostics or {})
    version.informative = verdict.informative
    version.diagnostics = (version.diagnostics or {}) | {"informative": verdict.as_dict()}
    MetricVersion.objects.filter(pk=version.pk).update(
        informative=verdict.informative, diagnostics=version.diagnostics
    )
    return verdict


def not_informative_line(stored: dict | None) -> str:
    """One readable line for a version judged not informative (``diagnostics["informative"]``),
    "" otherwise: pages show it beside the version."""
    if not stored or stored.get("informative", True):
        return ""
    return (
        f"Not yet informative — not used as the study's current metric: {stored['missing']} "
        f"({stored['summary']})."
    )
