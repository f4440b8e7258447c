"""Bootstrap refits of a version's Σ: its own recipe refitted on resamples of the study's
answers, drawn by pair — the plausible metrics an audit is repeated under
(``learning/audits/uncertainty.py``).

**The resample** (``resample_by_pair``): a cluster bootstrap over the distinct pairs of the
version's observations. As many pairs as there are are drawn with replacement and each keeps all
its answers (a pair answered three times brings its three answers, together); a pair drawn twice
is two pairs of the resample (two clusters), with the same hash, so both copies fall in one
validation fold of the penalty choice. The curated groups of a FACE fit are drawn likewise, one
group a cluster. Under the "majority" policy each observation is a pair already.

**The recipe** (``version_recipe``) is the version's own, read from what it stored, not from the
study's settings now: the observations up to its judgment watermark under its repeat policy,
exclusions and validation share (``learning/refits/snapshots.py``, ``pairs.py``); EXPLORE with its
penalty choice, its bound, its prior — the identity, a fixed FACE version, or FACE on the groups
and the resample's comparable pairs, refitted on each resample and on each validation fold's
training part as the refit does — and reliability weights when the version was weighted; FACE
on the resampled groups and comparable pairs. The fitting code is the refit's
(``learning/refits/newitems.py: explore_recipe``, ``learning/refits/face_fits.py``). A Σ
**derived** from a fitted version (a projection, ``storage.metric_version_create``'s ``derive``,
recorded as a ``learning.core.psd.Congruence``) is bootstrapped as its new-items verdict is
judged: the parent's refits, each derived the same way. A Σ made outside the refits (imported, a
hand-made one, a derivation not recorded) has no recipe: ``NoRecipe`` says so.

**Cached per version** beside its Σ (``storage.bootstrap_save``): the refits of one version serve
every audit of it (and of the versions derived from it); they are read back one at a time
(memory-mapped), so an audit holds one Σ of them at a time. The stack is saved after each refit:
a run cut short (the task's time limit, a worker killed) is continued by the next, not started
again. Refit b is seeded by the version's id and b: the same version gets the same resamples in
any worker, in one run or several.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from learning.core.psd import validate_sigma
from learning.models import MetricVersion
from learning.refits import face_fits, fitting, newitems
from learning.refits.pairs import PairData, pair_data
from learning.refits.snapshots import GroupSnapshot, group_snapshot, judgment_snapshot
from learning.versions import selectors, sigmas, storage

Method = MetricVersion.Method
FACE_PRIOR = "face (groups and comparable pairs)"


class NoRecipe(ValueError):
    """The version's Σ cannot be refitted (why, in words)."""


def resample_by_pair(pairs: PairData, rng: np.random.Generator) -> PairData:
    """A cluster-bootstrap resample of ``pairs`` (module docstring), vectorised."""
    cluster = pairs.pair if pairs.pair is not None else np.arange(len(pairs))
    m = int(cluster.max(initial=-1)) + 1
    order = np.argsort(cluster, kind="stable")
    starts = np.searchsorted(cluster[order], np.arange(m + 1))
    drawn = rng.integers(0, m, size=m)
    sizes = (starts[1:] - starts[:-1])[drawn]
    offsets = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    take = order[np.repeat(starts[drawn], sizes) + offsets]
    return pairs.take(take, None if pairs.pair is None else np.repeat(np.arange(m), sizes))


def resample_groups(groups: GroupSnapshot, rng: np.random.Generator) -> GroupSnapshot:
    if not groups.rows:
        return groups
    drawn = rng.integers(0, len(groups.rows), size=len(groups.rows))
    return GroupSnapshot(rows=[groups.rows[i] for i in drawn], creators=groups.creators)


@dataclass(frozen=True)
class Recipe:
    """A fitted version's recipe on its own observations and groups."""

    version: MetricVersion
    pairs: PairData
    groups: GroupSnapshot
    read: Callable
    fit: Callable[[PairData, GroupSnapshot], np.ndarray]
    note: str  # what was read, in words (e.g. answers changed since the version)


def _face_k(version: MetricVersion):
    """FACE's k for an EXPLORE prior refitted from the pairs: the FACE version fitted on the
    same answers (the refit fits both), else the study's setting now."""
    face = (
        MetricVersion.objects.ready()
        .filter(study_id=version.study_id, method=Method.FACE)
        .filter(judgment_watermark=version.judgment_watermark)
        .order_by("-id")
        .first()
    )
    if face is not None:
        k = (face.parameters or {}).get("n_components")
        return None if k in (None, "auto") else int(k)
    return selectors.learning_settings_get(study_id=version.study_id).face_components


def _explore_fit(version: MetricVersion, read) -> Callable:
    params = version.parameters or {}
    prior_name = str(params.get("prior") or (version.diagnostics or {}).get("prior") or "")
    fixed, k = None, None
    if prior_name.startswith("face #"):
        source = MetricVersion.objects.filter(pk=int(prior_name.split("#")[1])).first()
        if source is None or not source.sigma:
            raise NoRecipe(f"its prior, FACE version {prior_name[5:]}, is gone")
        fixed = np.asarray(sigmas.sigma_of(source))
    elif prior_name == FACE_PRIOR:
        k = _face_k(version)
    elif prior_name not in ("identity", ""):
        raise NoRecipe(f"its prior {prior_name!r} is not one the refits make")

    def fit(sub: PairData, groups: GroupSnapshot) -> np.ndarray:
        fold_prior = None
        if prior_name == FACE_PRIOR:

            def fold_prior(keep: np.ndarray) -> np.ndarray:
                return face_fits.face_prior(sub, groups, read, k=k, keep=keep)

        recipe = newitems.explore_recipe(
            read,
            max_eigenvalue=params.get("max_eigenvalue"),
            prior=fixed,
            prior_name=prior_name or "identity",
            weight_by_reliability=bool(params.get("weight_by_reliability", False)),
            fold_prior=fold_prior,
        )
        return recipe(sub, np.ones(len(sub), dtype=bool))

    return fit


def _face_fit(version: MetricVersion, read) -> Callable:
    params = version.parameters or {}
    k = params.get("n_components")
    k = None if k in (None, "auto") else int(k)
    use_pairs = bool(params.get("pairs_as_groups", False))

    def fit(sub: PairData, groups: GroupSnapshot) -> np.ndarray:
        keep = np.full(len(sub), use_pairs)
        return face_fits.face_prior(sub, groups, read, k=k, keep=keep)

    return fit


def version_recipe(version: MetricVersion) -> Recipe:
    """The recipe of a version the refits fitted (``NoRecipe`` for any other)."""
    params = version.parameters or {}
    if "repeat_policy" not in params or version.status != MetricVersion.Status.READY:
        raise NoRecipe("its Σ was made outside the app's refits: no recipe to refit")
    study, excluded = version.study, list(params.get("excluded_annotators") or [])
    read = study.space.vectors
    shot = judgment_snapshot(
        study_id=study.pk, watermark=version.judgment_watermark, excluded_annotators=excluded
    )
    pairs = pair_data(
        shot,
        policy=params["repeat_policy"],
        validation_share=float(params.get("validation_share", 0.2)),
    )
    if not len(pairs):
        raise NoRecipe("no answers up to its watermark")
    uses_groups = version.method == Method.FACE or params.get("prior") == FACE_PRIOR
    groups = (
        group_snapshot(study_id=study.pk, excluded_annotators=excluded)
        if uses_groups
        else GroupSnapshot(rows=[], creators=0)
    )
    seen = int((version.counts or {}).get("observations") or 0)
    note = f"{len(pairs):,} observations up to its watermark"
    if seen and seen != len(pairs):
        note += f" (it was fitted on {seen:,}: answers were deleted or decided since)"
    fit = (
        _explore_fit(version, read)
        if version.method == Method.EXPLORE
        else _face_fit(version, read)
    )
    return Recipe(version, pairs, groups, read, fit, note)


@dataclass(frozen=True)
class Refits:
    """A version's bootstrap refits: read one at a time (``__iter__``), with what they are."""

    path: str
    fitted: int
    asked: int
    basis: str  # in words: its own recipe, or its parent's then the derivation
    note: str
    seconds: float
    derive: Callable | None = None

    def __iter__(self) -> Iterator[np.ndarray]:
        stack = np.load(self.path, mmap_mode="r")
        for n in range(stack.shape[0]):
            sigma = np.array(stack[n], dtype=np.float64)
            yield sigma if self.derive is None else self.derive(sigma)

    def as_dict(self) -> dict:
        return {
            "refits": self.asked,
            "fitted": self.fitted,
            "basis": self.basis,
            "note": self.note,
            "fit_seconds": round(self.seconds, 2),
        }


def _fit_refits(version: MetricVersion, n: int, progress, kept=None) -> Refits:
    """Fit refits ``tried..n-1`` (each seeded by the version and its number), after ``kept``
    ones of a run cut short; the stack is saved after each, so a later run continues it."""
    recipe = version_recipe(version)
    d = version.dimension or version.study.space.dimension
    fits, tried, before = [], 0, 0.0
    if kept is not None:
        fits = list(np.load(kept[0]))
        tried, before = int(kept[1].get("tried", n)), float(kept[1]["seconds"])
    started, path, meta = time.perf_counter(), None, {}
    for b in range(tried, n):
        rng = np.random.default_rng([int(version.pk), 36, b])
        sub, groups = resample_by_pair(recipe.pairs, rng), resample_groups(recipe.groups, rng)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits.append(validate_sigma(recipe.fit(sub, groups), d))
        except (fitting.FitError, ValueError, np.linalg.LinAlgError):
            pass  # a resample the recipe cannot fit (one label, too few answers): counted
        seconds = before + time.perf_counter() - started
        meta = {"fitted": len(fits), "asked": n, "tried": b + 1, "note": recipe.note}
        stack = np.stack(fits) if fits else np.zeros((0, d, d))
        path = storage.bootstrap_save(version, stack, meta | {"seconds": seconds})
        progress(b + 1, n)
    seconds = before + time.perf_counter() - started
    return Refits(str(path), len(fits), n, "its own recipe", recipe.note, seconds)


def version_refits(version: MetricVersion, *, progress=None) -> Refits:
    """The version's ``AUDIT_METRIC_REFITS`` bootstrap refits, fitted once and then read from
    the cache (module docstring); ``progress(done, total)`` while fitting. Raises ``NoRecipe``."""
    n = settings.AUDIT_METRIC_REFITS
    progress = progress or (lambda done, total: None)
    derive = storage.derivation_load(version) if version.parent_id else None
    if version.parent_id and "repeat_policy" not in (version.parameters or {}):
        if derive is None:
            raise NoRecipe(
                f"it is derived from version {version.parent_id} by a derivation not recorded"
            )
        base = version_refits(version.parent, progress=progress)
        return Refits(
            base.path,
            base.fitted,
            base.asked,
            f"version {version.parent_id}'s recipe, each refit then derived as this Σ was",
            base.note,
            base.seconds,
            derive,
        )
    kept = storage.bootstrap_load(version)
    if kept is not None and kept[1].get("asked") != n:
        kept = None  # another number of refits: fitted again
    if kept is not None and kept[1].get("tried", n) >= n:
        path, meta = kept
        return Refits(str(path), meta["fitted"], n, "its own recipe", meta["note"], meta["seconds"])
    return _fit_refits(version, n, progress, kept)
