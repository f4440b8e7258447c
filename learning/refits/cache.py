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
"""

from __future__ import annotations

import logging
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection

from annotation.models import Study
from learning.core.explore import ExploreWarm
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


def warm_save(*, study: Study, warm: WarmStart) -> None:
    """Keep ``warm`` for the study's next EXPLORE refit."""
    arrays = {"sigma": warm.explore.sigma}
    if warm.explore.folds:
        arrays["folds"] = np.stack(warm.explore.folds)
    if warm.reliability is not None:
        arrays["annotator"] = np.asarray(warm.reliability.annotator, dtype=np.int64)
        arrays["flip_rate"] = warm.reliability.flip_rate
        arrays["em_sigma"] = warm.reliability.sigma
    arrays_save(study_cache_dir(study) / "explore-warm.npz", arrays)


def warm_load(*, study: Study, dimension: int) -> WarmStart | None:
    """The study's last EXPLORE solutions when they fit a ``dimension``-d space, else None."""
    data = arrays_load(study_cache_dir(study) / "explore-warm.npz")
    if data is None or data.get("sigma") is None or data["sigma"].shape != (dimension,) * 2:
        return None
    folds = tuple(data["folds"]) if "folds" in data else None
    reliability = None
    if {"annotator", "flip_rate", "em_sigma"} <= data.keys():
        reliability = ReliabilityWarm(data["annotator"], data["flip_rate"], data["em_sigma"])
    return WarmStart(ExploreWarm(data["sigma"], folds), reliability)
