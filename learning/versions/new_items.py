"""Validity for new people: folds over *items*, the held-out gain of a Sigma over the constant
prediction on pairs of items its fit never saw, and the three-valued verdict.

Folds. Each item (a row of the space's matrix) falls in one of ``N_ITEM_FOLDS`` folds by a fixed
hash of its row. For fold k a pair is *held out* when both its items are in fold k; it is in
fold k's *training part* when neither is; a pair across the split is used by neither (it would
tell the fit about a held-out item). Every fit that scores fold k — the version's recipe applied
to the training part: its penalty choice, its prior, its reliability weights — sees no answer
about a held-out item. About 1/K of the answers are scored, each once, and each fold fit learns
from about (1 − 1/K)² of them.

Figures (``new_item_figures``). Per held-out pair ``g = ℓ(zᵀΣ_k z, y) − ℓ(rate_k, y)``, the gain of
fold k's Sigma over the constant prediction (``rate_k``: the comparable rate of fold k's training
part). Their mean is the estimate of the gain on a fresh pair of new people; its 95 % interval
comes from the delete-one-item jackknife over the held-out items (the pairs sharing an item are
not independent; the jackknife over items is the dyadic-data variance, ``benchmarks/coverage.py``
measures its coverage). AUC: of the held-out distances (smaller = comparable).

Verdict (``new_items_verdict``): "cannot tell yet" until at least ``MIN_ITEMS`` held-out items
and ``MIN_PAIRS`` scored pairs (what a verdict on heavy-tailed features needs to mean something,
whatever the table: ``benchmarks/validity.py``), saying how many more it needs; then
"informative" when the interval lies above 0, "not informative" when the gain is ≤ 0, and
"cannot tell yet" (with about how many more answers at this gain) in between.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import rankdata

from learning.core._pairloss import pair_loglik, quad_forms

N_ITEM_FOLDS = 5
MIN_ITEMS = 40  # held-out items in scored pairs before a first verdict
MIN_PAIRS = 100  # scored held-out pairs before a first verdict
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


def jackknife_items(gain: np.ndarray, item_a: np.ndarray, item_b: np.ndarray) -> float:
    """Standard error of ``gain.mean()`` by deleting one item (all its pairs) at a time."""
    items, inv = np.unique(np.concatenate([item_a, item_b]), return_inverse=True)
    m, n = items.size, gain.size
    if m < 3 or n < 2:
        return float("inf")
    ia, ib = inv[:n], inv[n:]
    loops = ia == ib
    s = np.bincount(ia, gain, m) + np.bincount(ib[~loops], gain[~loops], m)
    c = np.bincount(ia, minlength=m) + np.bincount(ib[~loops], minlength=m)
    rest = n - c
    ok = rest > 0
    theta = (gain.sum() - s[ok]) / rest[ok]
    if theta.size < 3:
        return float("inf")
    return float(np.sqrt((m - 1) / m * np.sum((theta - theta.mean()) ** 2)))


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
    rate = np.clip(np.asarray(rates, dtype=np.float64)[fold], 1e-6, 1 - 1e-6)
    ll = pair_loglik(dist, y)
    gain = ll - (y * np.log(rate) + (1 - y) * np.log1p(-rate))
    mean = float(gain.mean())
    se = jackknife_items(gain, item_a, item_b)
    interval = [mean - 1.96 * se, mean + 1.96 * se] if np.isfinite(se) else None
    items = int(np.unique(np.concatenate([item_a, item_b])).size)
    return Figures(mean, interval, _auc(y, -dist), items, int(y.size), float(ll.mean()))


def _more_answers(gain: float, low: float, pairs: int, k: int) -> int | None:
    """About how many more answers bring the interval's lower end above 0 at the same gain (the
    half-width shrinks as 1/√pairs; one answer in ``k`` is scored)."""
    half = gain - low
    if gain <= 0 or half <= 0 or pairs <= 0:
        return None
    return max(1, int(round(k * pairs * ((half / gain) ** 2 - 1.0))))


def new_items_verdict(fig: Figures, *, answers: int, k: int = N_ITEM_FOLDS) -> dict:
    """The verdict on ``fig`` (module docstring): the version's ``diagnostics["validity"]``
    without its watermark. ``answers``: the observations the figures came from."""
    base = fig.as_dict()
    base.pop("loglik")
    base |= {"basis": "new items"}
    needs = []
    if fig.items < MIN_ITEMS:
        needs.append(f"answers on at least {MIN_ITEMS - fig.items} more items")
    if fig.pairs < MIN_PAIRS:
        per = max(answers, 1) / max(fig.pairs, 1) if fig.pairs else k
        needs.append(f"about {int(np.ceil((MIN_PAIRS - fig.pairs) * per))} more answers")
    if fig.gain is None or fig.gain_interval is None or needs:
        return base | {
            "verdict": CANNOT_TELL,
            "needs": " and ".join(needs) or "more answers on pairs of distinct items",
            "summary": _summary(fig, "too few held-out people to say yet"),
        }
    low, high = fig.gain_interval
    if low > 0:
        return base | {"verdict": INFORMATIVE, "needs": "", "summary": _summary(fig, "")}
    if fig.gain <= 0:
        return base | {
            "verdict": NOT_INFORMATIVE,
            "needs": "answers that follow what the features hold; this fit predicts new "
            "people no better than the constant rate",
            "summary": _summary(fig, "does not beat the constant prediction"),
        }
    more = _more_answers(fig.gain, low, fig.pairs, k)
    return base | {
        "verdict": CANNOT_TELL,
        "needs": f"about {more} more answers at this gain" if more else "more answers",
        "summary": _summary(fig, "gain not yet beyond noise"),
    }


def _summary(fig: Figures, note: str) -> str:
    if fig.gain is None:
        return f"new items: nothing scored yet ({fig.items} held-out items); {note}"
    ci = fig.gain_interval
    span = f" (95 % interval {ci[0]:+.3f} to {ci[1]:+.3f})" if ci else ""
    auc = f", AUC {fig.auc:.3f}" if fig.auc is not None else ""
    tail = f"; {note}" if note else ""
    return (
        f"new items: gain over the constant {fig.gain:+.3f} per pair{span}{auc}, "
        f"{fig.pairs} pairs of {fig.items} held-out items{tail}"
    )
