"""A worker's caches for refits: a study's judgments up to its last refit, and its last EXPLORE
solutions. Both are files under ``REFIT_CACHE_DIR/<database>/study-<id>-<created µs>/`` (the
database name and the study's creation time keep a test database's or a re-created study's
files apart), written to a temporary file and renamed. Losing or garbling one costs time — a
full read, a cold fit — never correctness: the snapshot checks the cached rows against the
study's data marks (``learning/refits/snapshots.py: judgment_snapshot_cached``), and a warm
start is only a start candidate.

Warm starts. A refit after a few new answers fits almost the same data as the last one, whose
solutions sit at the optimum of that data. ``warm_save`` keeps them after each stored EXPLORE
version (the plain fit's Σ, its validation folds' fits, the reliability EM's flip rates and
Σ); ``warm_load`` gives them to the next fit (``learning/refits/fitting.py: fit_explore``,
``warm=``), where every fit still begins from whichever start has the better objective (the
prior, the validation fit, this one) and stops on the same optimality test.

Pair differences (in the worker's memory, not on disk). ``differences_for`` keeps the last
EXPLORE fit's pair differences (``learning.core.explore.Differences``: the n × d rows in float64
and float32, their norms, ``ZᵀZ`` and the prior's and starts' distances) with the pairs' matrix
rows. When the next fit's pairs (same space and matrix) begin with exactly those pairs, it
extends them by the new pairs only; any other change (an edit, a deletion, an exclusion, another
policy reordering the pairs) builds them again. One entry, the last fit's: a worker serving
several large studies rebuilds on each switch rather than holding each study's arrays (about
0.7 GB at 10⁶ pairs, d = 50).
"""

from __future__ import annotations

import logging
import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from annotation.models import Study
from learning.core.explore import Differences, ExploreWarm
from learning.core.reliability import ReliabilityWarm

logger = logging.getLogger(__name__)
READ_ERRORS = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)


@dataclass(frozen=True)
class WarmStart:
    """A fit's solutions kept for the next refit: the plain EXPLORE fit's, and the reliability
    EM's when it ran (``learning/refits/fitting.py: fit_explore`` makes and takes them)."""

    explore: ExploreWarm
    reliability: ReliabilityWarm | None = None


def study_cache_dir(study: Study) -> Path:
    database = Path(str(connection.settings_dict["NAME"])).name or "default"
    stamp = int(study.created_at.timestamp() * 1e6) if study.created_at else 0
    return Path(settings.REFIT_CACHE_DIR) / database / f"study-{study.pk}-{stamp}"


def study_cache_forget(sender, instance: Study, **kwargs) -> None:
    """A deleted study's folder goes after the commit (``post_delete`` of ``Study``, registered
    in ``learning/apps.py``): where the web process shares the workers' disk."""
    folder = study_cache_dir(instance)
    transaction.on_commit(lambda: shutil.rmtree(folder, ignore_errors=True))


def study_caches_prune() -> int:
    """The folders of this database's deleted (or re-created) studies removed from this
    worker's disk — the refit sweep runs it in every worker; the count removed."""
    root = Path(settings.REFIT_CACHE_DIR) / (
        Path(str(connection.settings_dict["NAME"])).name or "default"
    )
    if not root.is_dir():
        return 0
    live = {study_cache_dir(s).name for s in Study.objects.only("pk", "created_at")}
    removed = 0
    for entry in root.iterdir():
        if entry.is_dir() and entry.name.startswith("study-") and entry.name not in live:
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


def arrays_save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``arrays`` as one ``.npz`` at ``path`` (atomic rename); a failure is logged, not raised."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.stem}.{os.getpid()}.partial.npz")
    try:
        np.savez(partial, **arrays)
        os.replace(partial, path)
    except OSError as error:  # a cache: the next refit reads or fits from scratch
        logger.warning("could not write the refit cache %s: %s", path, error)
        partial.unlink(missing_ok=True)


def arrays_load(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of ``path`` (None when missing or unreadable)."""
    try:
        with np.load(path, allow_pickle=False) as found:
            return {key: found[key] for key in found.files}
    except READ_ERRORS:
        return None


def _warm_arrays(warm: WarmStart, prefix: str = "") -> dict[str, np.ndarray]:
    arrays = {"sigma": warm.explore.sigma}
    if warm.explore.folds:
        arrays["folds"] = np.stack(warm.explore.folds)
    if warm.reliability is not None:
        arrays["annotator"] = np.asarray(warm.reliability.annotator, dtype=np.int64)
        arrays["flip_rate"] = warm.reliability.flip_rate
        arrays["em_sigma"] = warm.reliability.sigma
    return {prefix + key: value for key, value in arrays.items()}


def _warm_of(data: dict, dimension: int, prefix: str = "") -> WarmStart | None:
    data = {key[len(prefix) :]: v for key, v in data.items() if key.startswith(prefix)}
    if data.get("sigma") is None or data["sigma"].shape != (dimension,) * 2:
        return None
    folds = tuple(data["folds"]) if "folds" in data else None
    reliability = None
    if {"annotator", "flip_rate", "em_sigma"} <= data.keys():
        reliability = ReliabilityWarm(data["annotator"], data["flip_rate"], data["em_sigma"])
    return WarmStart(ExploreWarm(data["sigma"], folds), reliability)


def warm_save(*, study: Study, warm: WarmStart) -> None:
    """Keep ``warm`` for the study's next EXPLORE refit."""
    arrays_save(study_cache_dir(study) / "explore-warm.npz", _warm_arrays(warm))


def warm_load(*, study: Study, dimension: int) -> WarmStart | None:
    """The study's last EXPLORE solutions when they fit a ``dimension``-d space, else None."""
    data = arrays_load(study_cache_dir(study) / "explore-warm.npz")
    return None if data is None else _warm_of(data, dimension)


def fold_warms_save(*, study: Study, warms: dict[int, WarmStart]) -> None:
    """Keep the new-items fold fits' solutions (fold number → its fit's ``WarmStart``) for the
    study's next refit (``learning/refits/newitems.py: FoldWarms``)."""
    arrays = {}
    for fold, warm in warms.items():
        arrays |= _warm_arrays(warm, f"k{int(fold)}_")
    if arrays:
        arrays_save(study_cache_dir(study) / "explore-fold-warm.npz", arrays)


def fold_warms_load(*, study: Study, dimension: int) -> dict[int, WarmStart]:
    """The study's last fold fits' solutions that fit a ``dimension``-d space (may be empty)."""
    data = arrays_load(study_cache_dir(study) / "explore-fold-warm.npz") or {}
    folds = {int(key[1:].split("_", 1)[0]) for key in data if key.startswith("k")}
    warms = {k: _warm_of(data, dimension, f"k{k}_") for k in folds}
    return {k: warm for k, warm in warms.items() if warm is not None}


@dataclass(frozen=True, eq=False)
class _KeptDifferences:
    key: tuple
    row_a: np.ndarray
    row_b: np.ndarray
    data: Differences


SPARE = 0.125  # room for this share of new pairs before the kept arrays are copied again
_KEPT: dict[str, _KeptDifferences] = {}  # "last": the last EXPLORE fit's differences


def _rows_differences(read_vectors, row_a: np.ndarray, row_b: np.ndarray) -> np.ndarray:
    """``x[row_a] - x[row_b]`` in float64, reading each needed matrix row once."""
    rows, inverse = np.unique(np.concatenate([row_a, row_b]), return_inverse=True)
    vectors = np.asarray(read_vectors(rows), dtype=np.float64)
    inverse = inverse.ravel()
    return vectors[inverse[: row_a.size]] - vectors[inverse[row_a.size :]]


def space_key(read_vectors) -> tuple | None:
    """What identifies the matrix behind ``read_vectors`` (a space's bound ``vectors``): the
    database, its model, primary key and file checksum; None when unknown (nothing is kept)."""
    space = getattr(read_vectors, "__self__", None)
    pk = getattr(space, "pk", None)
    if pk is None:
        return None
    database = str(connection.settings_dict.get("NAME"))
    return (database, type(space).__name__, pk, getattr(space, "sha256", None))


def differences_for(read_vectors, row_a: np.ndarray, row_b: np.ndarray) -> tuple:
    """The pairs' differences as ``Differences`` and how they were had: "kept + m new" (the last
    fit's, extended), "built" (and kept for the next fit) or "built (not kept)"."""
    key = space_key(read_vectors)
    if key is None:
        return Differences(_rows_differences(read_vectors, row_a, row_b), keep_work=False), (
            "built (not kept)"
        )
    kept, n = _KEPT.get("last"), row_a.size
    if (
        kept is not None
        and kept.key == key
        and kept.row_a.size <= n
        and np.array_equal(row_a[: kept.row_a.size], kept.row_a)
        and np.array_equal(row_b[: kept.row_a.size], kept.row_b)
    ):
        old = kept.row_a.size
        data = kept.data
        if n > old:
            data = data.extend(_rows_differences(read_vectors, row_a[old:], row_b[old:]))
        how = f"kept + {n - old} new"
    else:
        _KEPT.pop("last", None)  # its memory back before the new one is built
        data = Differences(_rows_differences(read_vectors, row_a, row_b), spare=SPARE)
        how = "built"
    _KEPT["last"] = _KeptDifferences(key, row_a.copy(), row_b.copy(), data)
    return data, how


def differences_once(read_vectors, row_a: np.ndarray, row_b: np.ndarray) -> Differences:
    """The pairs' differences for one fit, not kept (the kept ones are left as they are)."""
    return Differences(_rows_differences(read_vectors, row_a, row_b), keep_work=False)


def differences_forget() -> None:
    """Drop the kept differences (tests; a worker that must free the memory)."""
    _KEPT.clear()
