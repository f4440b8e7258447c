"""Validity for new people: folds over *items*, the held-out gain of a Sigma over the constant
prediction on pairs of items its fit never saw, and the three-valued verdict.

Folds. Each item (a row of the space's matrix) falls in one of ``N_ITEM_FOLDS`` folds by a fixed
hash of its row. For fold k a pair is *held out* when both its items are in fold k; it is in
fold k's *training part* when neither is; a pair across the split is used by neither (it would
tell the fit about a held-out item). Every fit that scores fold k — the version's recipe applied
to the training part: its penalty choice, its prior, its reliability weights — sees no answer
about a held-out item. About 1/K of the answers are scored, each once, and each fold fit learns
from about (1 − 1/K)² of them.

Figures (``new_item_figures``). Per held-out pair ``g = ℓ(P_k, y) − ℓ(rate_k, y)``, the gain of
fold k's Sigma (``P_k = 2σ(−zᵀΣ_k z)``, the paper's response model) over the constant prediction
(``rate_k``: the comparable rate of fold k's training part), where ``ℓ`` is the log-likelihood
of a prediction that allows ``LAPSE`` slips each way (``scored_loglik``: ``p ↦ LAPSE +
(1 − 2·LAPSE)·p``, for both predictions). Without the lapse a rare pair that a fit calls
certainly incomparable costs an unbounded loss: such pairs weigh in what new people get but
seldom appear among a few hundred held-out pairs, and the interval was optimistic on
heavy-tailed records (``benchmarks/coverage.py``, docs/refits.md). Their mean is the estimate of
the gain on a fresh pair of new people. Its 95 % interval (``gain_interval``) is a bootstrap-t:
the scale is the dyadic-robust standard error over the held-out items (``dyadic_se``: answers
that share an item are correlated, repeated answers to one pair are one cluster), the two
quantiles come from the pairs resampled with their answers (the gains are skewed: a Wald
interval missed high twice as often as low), each no nearer the centre than Student's t with the
error's effective degrees of freedom (``effective_df``: a few rare, costly pairs make the error
itself noisy, which resamples of the same few pairs do not show; the WEAT interval's t floor,
docs/core.md). AUC: of the held-out distances (smaller = comparable).

Verdict (``new_items_verdict``): "cannot tell yet" until at least ``MIN_ITEMS`` held-out items
and ``MIN_PAIRS`` scored pairs (what a verdict on heavy-tailed features needs to mean something,
whatever the table: ``benchmarks/validity.py``), saying how many more it needs; then
"informative" when the interval lies above 0, "not informative" when the gain is ≤ 0, and
"cannot tell yet" (with about how many more answers at this gain) in between.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import expit
from scipy.stats import rankdata
from scipy.stats import t as student_t

from learning.core._pairloss import quad_forms

N_ITEM_FOLDS = 5
MIN_ITEMS = 40  # held-out items in scored pairs before a first verdict
MIN_PAIRS = 100  # scored held-out pairs before a first verdict
LAPSE = 0.01  # the scored predictions allow 1 % slips each way (module docstring)
BOOTSTRAP_T = 999  # resamples for the interval's quantiles
BOOTSTRAP_T_MAX_PAIRS = 2_000  # above: the t floor alone (the skew's effect shrinks as 1/√pairs)
INFORMATIVE, NOT_INFORMATIVE, CANNOT_TELL = "informative", "not informative", "cannot tell yet"
VERDICTS = (INFORMATIVE, NOT_INFORMATIVE, CANNOT_TELL)


def item_fold(rows: np.ndarray, k: int = N_ITEM_FOLDS) -> np.ndarray:
    """Each item's fold in [0, k): splitmix64 of its matrix row (fixed for the item)."""
    with np.errstate(over="ignore"):
        z = np.asarray(rows).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = z + np.uint64(0x632BE59BD9B4E019)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return ((z >> np.uint64(11)).astype(np.float64) / float(1 << 53) * k).astype(np.int64)


@dataclass(frozen=True)
class ItemSplit:
    """Per pair: the fold whose held-out pairs it belongs to (-1: none, its items' folds differ),
    and each item's fold; ``train(k)``: the pairs fold k's fit may use."""

    held: np.ndarray
    fold_a: np.ndarray
    fold_b: np.ndarray
    k: int

    def train(self, fold: int) -> np.ndarray:
        return (self.fold_a != fold) & (self.fold_b != fold)


def item_split(row_a: np.ndarray, row_b: np.ndarray, k: int = N_ITEM_FOLDS) -> ItemSplit:
    fa, fb = item_fold(row_a, k), item_fold(row_b, k)
    return ItemSplit(np.where(fa == fb, fa, -1), fa, fb, k)


@dataclass(frozen=True)
class Figures:
    """The held-out figures on new items (``gain``: mean per pair, None when nothing scored)."""

    gain: float | None
    gain_interval: list[float] | None
    auc: float | None
    items: int
    pairs: int
    loglik: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def _auc(y: np.ndarray, score: np.ndarray) -> float | None:
    binary = (y == 0) | (y == 1)
    pos, neg = int(np.sum(y[binary] == 1)), int(np.sum(y[binary] == 0))
    if pos == 0 or neg == 0:
        return None
    ranks = rankdata(score[binary])
    return float((ranks[y[binary] == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))


def scored_loglik(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per answer ``y ∈ [0, 1]`` (1 comparable): the log-likelihood of the prediction
    P(comparable) = ``p`` allowing ``LAPSE`` slips each way (bounded by ``log LAPSE``)."""
    q = LAPSE + (1.0 - 2.0 * LAPSE) * np.asarray(p, dtype=np.float64)
    return y * np.log(q) + (1.0 - y) * np.log1p(-q)


def distance_loglik(dist: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``scored_loglik`` of the response model's prediction ``2σ(−d)`` at squared distances
    ``dist``."""
    return scored_loglik(2.0 * expit(-np.maximum(np.asarray(dist, dtype=np.float64), 0.0)), y)


def _dyads(item_a: np.ndarray, item_b: np.ndarray, n: int):
    """The items (``m``), each answer's two items as 0..m−1 and its pair of items as 0..D−1."""
    items, inv = np.unique(np.concatenate([item_a, item_b]), return_inverse=True)
    ia, ib = inv[:n], inv[n:]
    key = np.minimum(ia, ib) * items.size + np.maximum(ia, ib)
    return items.size, ia, ib, np.unique(key, return_inverse=True)[1].ravel()


def dyadic_se(gain: np.ndarray, item_a: np.ndarray, item_b: np.ndarray) -> float:
    """Standard error of ``gain.mean()`` when answers that share an item are correlated: the
    dyadic-robust variance (Fafchamps & Gubert 2007; Aronow, Samii & Assenova 2015),
    ``Σ_{p,q share an item} e_p·e_q / n²`` with ``e = gain − mean``, times ``m/(m − 1)`` for
    ``m`` items. Computed as ``Σ_i E_i² − Σ_D E_D²`` (``E_i``: residuals of the answers on item
    i; ``E_D``: of the answers on one pair of items, counted twice by the first sum); where that
    is not positive (strongly negative covariances in a small sample), the pair-clustered
    variance ``Σ_D E_D²``. (The delete-one-item jackknife used before counts
    each answer's own variance twice: intervals √2 too wide where items have few answers.)"""
    gain = np.asarray(gain, dtype=np.float64)
    return _dyadic_se(gain, *_dyads(item_a, item_b, gain.size))


def _dyadic_se(gain: np.ndarray, m: int, ia: np.ndarray, ib: np.ndarray, dyad: np.ndarray):
    n = gain.size
    if m < 3 or n < 2:
        return float("inf")
    e = gain - gain.mean()
    loops = ia == ib  # an item against itself: one item, counted once below
    per_item = np.bincount(ia, e, m) + np.bincount(ib[~loops], e[~loops], m)
    per_dyad = np.bincount(dyad, e)
    twice = np.bincount(dyad[~loops], e[~loops], per_dyad.size)
    shared = float(np.sum(per_item**2) - np.sum(twice**2))
    clustered = float(np.sum(per_dyad**2))
    return float(np.sqrt((shared if shared > 0 else clustered) * m / (m - 1)) / n)


def effective_df(gain: np.ndarray, dyad: np.ndarray) -> float:
    """Satterthwaite's degrees of freedom of the clustered error: with ``u`` each pair's summed
    residuals over ``D`` pairs, ``2D/(κ − 1)`` for the kurtosis ``κ = mean(u⁴)/mean(u²)²`` (the
    variance of ``Σu²`` matched to a scaled χ²; about ``D`` for normal gains, a few dozen where a
    few pairs carry most of the error). At least 1."""
    u = np.bincount(dyad, np.asarray(gain, dtype=np.float64) - float(np.mean(gain)))
    second = float(np.mean(u**2))
    if second <= 0.0:
        return float(u.size)
    kurtosis = float(np.mean(u**4)) / second**2
    return float(max(2.0 * u.size / max(kurtosis - 1.0, 1e-12), 1.0))


def gain_interval(
    gain: np.ndarray, item_a: np.ndarray, item_b: np.ndarray, level: float = 0.95
) -> list[float] | None:
    """The interval of ``gain.mean()`` (module docstring): ``mean − q_hi·se, mean − q_lo·se`` with
    ``se = dyadic_se`` and ``q`` the quantiles of the studentized mean over resamples of the
    pairs of items (each with all its answers; seeded, so a figure is reproducible), each no
    nearer 0 than Student's t with ``effective_df`` (alone past ``BOOTSTRAP_T_MAX_PAIRS``
    pairs). None when the error cannot be estimated."""
    gain = np.asarray(gain, dtype=np.float64)
    dyads = _dyads(item_a, item_b, gain.size)
    se = _dyadic_se(gain, *dyads)
    if not np.isfinite(se):
        return None
    mean, tail, dyad = float(gain.mean()), (1.0 - level) / 2.0, dyads[3]
    size = int(dyad.max()) + 1
    floor = float(student_t.ppf(1.0 - tail, effective_df(gain, dyad)))
    floored = [mean - floor * se, mean + floor * se]
    if se == 0.0 or not 3 <= size <= BOOTSTRAP_T_MAX_PAIRS:
        return floored
    sums = np.bincount(dyad, gain, size)
    counts = np.bincount(dyad, minlength=size).astype(np.float64)
    # each resample as how often it drew each pair: (B × pairs) @ the pairs' moments
    draw = np.random.default_rng(35).integers(0, size, size=(BOOTSTRAP_T, size))
    draw += np.arange(BOOTSTRAP_T)[:, None] * size
    times = np.bincount(draw.ravel(), minlength=BOOTSTRAP_T * size).reshape(BOOTSTRAP_T, size)
    moments = np.stack([sums, counts, sums**2, sums * counts, counts**2], axis=1)
    s, c, ss, sc, cc = (times.astype(np.float64) @ moments).T
    means = s / c
    spread = np.sqrt(np.maximum(ss - 2 * means * sc + means**2 * cc, 0.0) * size / (size - 1))
    ok = spread > 0
    if ok.sum() < BOOTSTRAP_T // 2:
        return floored
    t = (means[ok] - mean) / (spread[ok] / c[ok])
    q_lo, q_hi = np.quantile(t, [tail, 1.0 - tail])
    return [mean - max(float(q_hi), floor) * se, mean - min(float(q_lo), -floor) * se]


def new_item_figures(
    z: np.ndarray,
    y: np.ndarray,
    fold: np.ndarray,
    rates: np.ndarray,
    fits: list,
    item_a: np.ndarray,
    item_b: np.ndarray,
) -> Figures:
    """The figures (module docstring) of held-out pairs (differences ``z``, labels ``y``, fold
    ``fold``, items ``item_a``/``item_b``) scored by ``fits[k]`` (d × d, or None: fold k could
    not be fitted, its pairs are not scored) against ``rates[k]``."""
    scored = np.array([fits[f] is not None for f in fold], dtype=bool) if fold.size else fold > 0
    if not scored.any():
        return Figures(None, None, None, 0, 0)
    z, y, fold = z[scored], y[scored], fold[scored]
    item_a, item_b = item_a[scored], item_b[scored]
    dist = np.empty(y.size)
    for f in np.unique(fold):
        mine = fold == f
        dist[mine] = np.maximum(quad_forms(z[mine], np.asarray(fits[f], dtype=np.float64)), 0.0)
    rate = np.clip(np.asarray(rates, dtype=np.float64)[fold], 0.0, 1.0)
    ll = distance_loglik(dist, y)
    gain = ll - scored_loglik(rate, y)
    mean = float(gain.mean())
    interval = gain_interval(gain, item_a, item_b)
    items = int(np.unique(np.concatenate([item_a, item_b])).size)
    return Figures(mean, interval, _auc(y, -dist), items, int(y.size), float(ll.mean()))


def _more_answers(gain: float, low: float, pairs: int, per: float) -> int | None:
    """About how many more answers bring the interval's lower end above 0 at the same gain (the
    half-width shrinks as 1/√pairs; ``per`` answers for each one scored)."""
    half = gain - low
    if gain <= 0 or half <= 0 or pairs <= 0:
        return None
    return max(1, int(round(per * pairs * ((half / gain) ** 2 - 1.0))))


def new_items_verdict(
    fig: Figures, *, answers: int, k: int = N_ITEM_FOLDS, sample: str = "all"
) -> dict:
    """The verdict on ``fig`` (module docstring): the version's ``diagnostics["validity"]``
    without its watermark. ``answers``: the observations the figures came from; ``sample``:
    which held-out answers were scored ("control": control pairs only, ``newitems.fold_fits``)."""
    base = fig.as_dict()
    base.pop("loglik")
    base |= {"basis": "new items", "sample": sample}
    needs = []
    # answers for each scored one: about k, more where only control pairs are scored
    per = max(answers, 1) / fig.pairs if fig.pairs else k
    if fig.items < MIN_ITEMS:
        needs.append(f"answers on at least {MIN_ITEMS - fig.items} more items")
    if fig.pairs < MIN_PAIRS:
        needs.append(f"about {int(np.ceil((MIN_PAIRS - fig.pairs) * per))} more answers")
    if fig.gain is None or fig.gain_interval is None or needs:
        return base | {
            "verdict": CANNOT_TELL,
            "needs": " and ".join(needs) or "more answers on pairs of distinct items",
            "summary": _summary(fig, "too few held-out people to say yet", sample),
        }
    low, high = fig.gain_interval
    if low > 0:
        return base | {"verdict": INFORMATIVE, "needs": "", "summary": _summary(fig, "", sample)}
    if fig.gain <= 0:
        return base | {
            "verdict": NOT_INFORMATIVE,
            "needs": "answers that follow what the features hold; this fit predicts new "
            "people no better than the constant rate",
            "summary": _summary(fig, "does not beat the constant prediction", sample),
        }
    more = _more_answers(fig.gain, low, fig.pairs, per)
    return base | {
        "verdict": CANNOT_TELL,
        "needs": f"about {more} more answers at this gain" if more else "more answers",
        "summary": _summary(fig, "gain not yet beyond noise", sample),
    }


def _summary(fig: Figures, note: str, sample: str = "all") -> str:
    if fig.gain is None:
        return f"new items: nothing scored yet ({fig.items} held-out items); {note}"
    ci = fig.gain_interval
    span = f" (95 % interval {ci[0]:+.3f} to {ci[1]:+.3f})" if ci else ""
    auc = f", AUC {fig.auc:.3f}" if fig.auc is not None else ""
    tail = f"; {note}" if note else ""
    return (
        f"new items: gain over the constant {fig.gain:+.3f} per pair{span}{auc}, "
        f"{fig.pairs} {'control ' if sample == 'control' else ''}pairs of {fig.items} "
        f"held-out items{tail}"
    )
