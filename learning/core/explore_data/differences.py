"""Pair differences kept between EXPLORE's fits and refits (``Differences``), ``ZᵀZ/n``, and a
fit's ``loglik_`` on them read when first asked for (``FitLoglik``).

A refit after a few new answers fits the same pairs plus a few: what its problems read of the
n × d differences — the float32 copy, the norms, ``ZᵀZ``, the prior's and the warm starts'
distances, the rows sorted into label blocks — is kept here and extended by the new rows only
(``learning/refits/cache.py: differences_for`` keeps one in the worker's memory).
"""

from __future__ import annotations

import numpy as np

from .._pairloss import pair_loglik, psd_quad_forms, quad_forms, weighted_mean
from .._validation import check_finite, check_float_matrix
from ..psd import symmetrize


def second_moment(z: np.ndarray, chunk: int = 65536) -> np.ndarray:
    """``ZᵀZ/n`` in float64 (chunked)."""
    out = np.zeros((z.shape[1], z.shape[1]))
    for start in range(0, z.shape[0], chunk):
        zc = z[start : start + chunk]
        out += zc.T @ zc
    return symmetrize(out / z.shape[0])


class Differences:
    """Pair differences ``z`` (float64, n × d) with what every fit on them reads, computed once
    and extendable by appended rows: the squared norms ``sq``, ``ZᵀZ`` (``second()`` = ZᵀZ/n),
    a float32 copy (``work``) and the distances ``z_iᵀΣz_i`` of a few matrices (``distances``:
    the prior's, a warm start's), each in the work precision.

    ``extend(new)`` returns the differences of the rows followed by ``new``: the stored figures
    of the old rows are kept and only the new rows' are computed (rows are written into spare
    capacity of the same buffers when this object holds their last row, else copied once into
    buffers with 1/8 spare). A refit whose pairs are the last refit's plus new ones (the worker's
    memory, ``learning/refits/cache.py: differences_for``) thus builds nothing n × d again. The
    figures equal a fresh build's up to the order of float64 sums (ZᵀZ) and of BLAS chunks."""

    MEMO = 6  # distance vectors kept (the prior's, the starts')
    BLOCKED = 3  # sorted copies kept (all pairs, a validation fold's training part, ...)

    def __init__(self, z: np.ndarray, *, keep_work: bool = True, spare: float = 0.0) -> None:
        """``keep_work``: keep the float32 copy; ``spare``: room for this share of further rows
        (``extend`` then writes them in place)."""
        z = check_float_matrix(z, "Z")
        n = z.shape[0]
        sq, gram = np.einsum("ij,ij->i", z, z), second_moment(z) * n
        if spare > 0.0:
            room = n + int(spare * n) + 1
            buf, sq_buf = np.empty((room, z.shape[1])), np.empty(room)
            buf[:n], sq_buf[:n] = z, sq
            z, sq = buf, sq_buf
        self._init(n, z, sq, gram, keep_work)

    def _init(self, n, z, sq, gram, keep_work, z32=None, memo=None, filled=None) -> None:
        self.n, self.d = n, z.shape[1]
        self._z, self._sq, self._gram = z, sq, gram
        if z32 is None and keep_work:
            z32 = np.empty(z.shape, dtype=np.float32)
            z32[:n] = z[:n]
        self._z32 = z32
        self._memo: list = memo or []  # (dtype, sigma, distances over this object's rows)
        self._filled = filled if filled is not None else [self.n]  # shared by extensions
        self._blocked: list = []  # (block keys, rows sorted into those blocks): ``blocked``

    @property
    def z(self) -> np.ndarray:
        return self._z[: self.n]

    @property
    def sq(self) -> np.ndarray:
        return self._sq[: self.n]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.d)

    def second(self) -> np.ndarray:
        return symmetrize(self._gram / self.n)

    def work(self, dtype) -> np.ndarray | None:
        """The rows in ``dtype`` when kept (float64: ``z``), else None."""
        if np.dtype(dtype) == np.float64:
            return self.z
        return None if self._z32 is None else self._z32[: self.n]

    def distances(self, sigma: np.ndarray, dtype) -> np.ndarray:
        """``z_iᵀΣz_i`` over all rows with products in ``dtype`` (``quad_forms``), remembered:
        a matrix equal to ``t`` times a remembered one within 1e-12 (relative) reuses its
        distances times ``t`` (the prior at another scale)."""
        scale = max(float(np.max(np.abs(sigma))), np.finfo(float).tiny)
        for kind, s, dist in self._memo:
            norm = float(np.sum(s * s))
            t = float(np.sum(s * sigma)) / norm if norm > 0 else 0.0
            if kind == np.dtype(dtype) and np.max(np.abs(t * s - sigma)) <= 1e-12 * scale:
                return dist if t == 1.0 else t * dist
        rows = self.work(dtype)
        dist = quad_forms(self.z if rows is None else rows, sigma)
        self._memo = [(np.dtype(dtype), np.array(sigma), dist), *self._memo][: self.MEMO]
        return dist

    def blocked(self, key: np.ndarray, idx: np.ndarray, dtype) -> np.ndarray | None:
        """The rows ``idx`` in ``dtype``, remembered; None without a kept copy in ``dtype``.
        ``key``: each row's label block (``PairBlocks.keys``; -1: a row the problem leaves out),
        ``idx``: the problem's rows, sorted by (block, row) as ``PairBlocks.order`` sorts them.
        Rows with the keys of a remembered problem followed by new ones (the next refit): each
        block's old rows are copied in one piece (no gather) and its new rows placed after."""
        src = self.work(dtype)
        if src is None or (idx.size == self.n and np.array_equal(idx, np.arange(idx.size))):
            return src
        for k_old, zw_old in self._blocked:
            if k_old.size == key.size and zw_old.dtype == src.dtype and np.array_equal(k_old, key):
                return zw_old
        base = next(
            (
                (k, zw)
                for k, zw in self._blocked
                if k.size < key.size and zw.dtype == src.dtype and np.array_equal(key[: k.size], k)
            ),
            None,
        )
        zw = np.empty((idx.size, self.d), dtype=src.dtype)
        if base is None:
            for start in range(0, idx.size, 4096):
                zw[start : start + 4096] = src[idx[start : start + 4096]]
        else:
            k_old, zw_old = base
            new_rows = k_old.size + np.arange(key.size - k_old.size)
            at, old_at = 0, 0
            for block in range(3):
                size = int(np.count_nonzero(k_old == block))
                zw[at : at + size] = zw_old[old_at : old_at + size]
                at, old_at = at + size, old_at + size
                mine = new_rows[key[new_rows] == block]
                zw[at : at + mine.size] = src[mine]
                at += mine.size
            self._blocked = [e for e in self._blocked if e[1] is not zw_old]
        self._blocked = [(key, zw), *self._blocked][: self.BLOCKED]
        return zw

    def extend(self, new: np.ndarray) -> Differences:
        """These rows followed by ``new`` (m × d)."""
        new = np.asarray(new, dtype=np.float64).reshape(-1, self.d)
        check_finite(new, "the new differences")
        m, n = new.shape[0], self.n
        total = n + m
        in_place = self._filled[0] == n and self._z.shape[0] >= total
        if in_place:
            z, sq, z32, filled = self._z, self._sq, self._z32, self._filled
        else:
            cap = total + total // 8
            z, sq = np.empty((cap, self.d)), np.empty(cap)
            z[:n], sq[:n] = self.z, self.sq
            z32 = None
            if self._z32 is not None:
                z32 = np.empty((cap, self.d), dtype=np.float32)
                z32[:n] = self._z32[:n]
            filled = [n]
        z[n:total] = new
        sq[n:total] = np.einsum("ij,ij->i", new, new)
        if z32 is not None:
            z32[n:total] = new
        filled[0] = total
        out = Differences.__new__(Differences)
        memo = []
        for kind, s, dist in self._memo:
            rows = new.astype(kind, copy=False)
            memo.append((kind, s, np.concatenate([dist, quad_forms(rows, s)])))
        out._init(total, z, sq, self._gram + new.T @ new, False, z32, memo, filled)
        out._blocked = list(self._blocked)  # extended on first use (``blocked``)
        return out

    def take(self, rows: np.ndarray) -> Differences:
        """The differences of ``rows`` (a new object; nothing remembered)."""
        return Differences(self.z[rows], keep_work=self._z32 is not None)


class _Pending:
    """The arguments of a fit's ``loglik_`` (``FitLoglik``); pickled or copied as the figure."""

    def __init__(self, z, sigma: np.ndarray, lab: np.ndarray, wts: np.ndarray) -> None:
        self.args = (z, sigma, lab, wts)

    def value(self) -> float:
        z, sigma, lab, wts = self.args
        return weighted_mean(pair_loglik(psd_quad_forms(z, sigma), lab), wts)

    def __reduce__(self):
        return (float, (self.value(),))


class FitLoglik:
    """``loglik_``: the mean pair log-likelihood of a fit's ``sigma_`` on its pairs (float64
    products). On kept ``Differences`` it is computed when first read, the same number: the
    figure of a fit nobody reads (a refit's plain fit before the reliability EM, the EM's inner
    fits) costs no n-sized pass; on other inputs at once. A pickled or copied fit carries the
    figure, not the differences."""

    @property
    def loglik_(self) -> float:
        value = self.__dict__.get("_loglik")
        if isinstance(value, _Pending):
            value = self.__dict__["_loglik"] = value.value()
        if value is None:
            raise AttributeError("loglik_")
        return value

    def _set_loglik(self, given, z, sigma: np.ndarray, lab: np.ndarray, wts: np.ndarray) -> None:
        """``given``: the fit's input (read later when it is a ``Differences``)."""
        pending = _Pending(z, sigma, lab, wts)
        self._loglik = pending if isinstance(given, Differences) else pending.value()
