"""Metric version storage, in one place: create, fingerprint, Sigma file, ready/failed, publish.

A version is stored in two steps: a ``fitting`` row first (:func:`version_start`), then - once
Sigma is completely on disk (written to a temporary name, fsynced, renamed) - ``ready`` in one
transaction (:func:`version_store`). A worker killed in between leaves a ``fitting`` row that
the next refit retires as failed (:func:`versions_interrupted_retire`, transient, so its input is
refitted); never a ready version with half-written data, nor a ready row without its file.

Each version has a ``fingerprint`` (:func:`version_fingerprint`: its method, label, parameters
and the number of judgments it covers). The database allows one live version per study, method,
watermarks and fingerprint, so a redelivered refit cannot add a second version for the same
input, and FACE-3 and FACE-10 fitted on the same data are two versions.

:func:`metric_version_create` is the one-call way to record a Sigma fitted outside the refit
pipeline (the ``reproduce_weat_table`` command, notebooks, imports). Publishing
(``version_publish``, ``metric_version_publish``) is in ``learning/versions/publishing.py``,
re-exported here.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from pathlib import Path

import numpy as np
from django.core.files.storage import default_storage
from django.db import DatabaseError, IntegrityError, transaction

from annotation.models import Study
from common import storage
from common.errors import Conflict
from learning.core.psd import Congruence, validate_sigma
from learning.models import MetricVersion
from learning.versions.new_items import CANNOT_TELL, new_item_figures, new_items_verdict

logger = logging.getLogger(__name__)

Method = MetricVersion.Method
Status = MetricVersion.Status


def version_fingerprint(*, method: str, label: str, parameters: dict, judgment_count: int) -> str:
    """32 hex characters of sha256 over what identifies a fit's input (stable across runs)."""
    payload = json.dumps(
        {
            "method": method,
            "label": label,
            "parameters": parameters,
            "judgments_total": judgment_count,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def sigma_name(version: MetricVersion) -> str:
    """The media-relative name of a version's Sigma file."""
    return f"sigmas/study-{version.study_id}/{version.method}-v{version.pk}.npy"


def sigma_bytes(sigma: np.ndarray) -> tuple[bytes, str]:
    """The ``.npy`` bytes of Sigma (float64) and their sha256."""
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(sigma, dtype=np.float64), allow_pickle=False)
    data = buffer.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def _folds_name(version: MetricVersion) -> str:
    return sigma_name(version).removesuffix(".npy") + ".folds.npz"


def fold_fits_save(version: MetricVersion, *, fits: list, held: dict) -> None:
    """Keep a version's new-items fold fits (None: a fold not fitted) and their held-out pairs
    beside its Sigma (``learning/refits/newitems.py``), for Sigmas derived from it later."""
    fitted = np.array([f is not None for f in fits])
    d = version.dimension or version.study.space.dimension
    stack = np.stack([np.zeros((d, d)) if f is None else np.asarray(f, float) for f in fits])
    buffer = io.BytesIO()
    np.savez(buffer, fits=stack, fitted=fitted, **held)
    storage.store_bytes(buffer.getvalue(), _folds_name(version))


def fold_fits_load(version: MetricVersion) -> tuple[list, dict] | None:
    """``fold_fits_save``'s fits and held-out pairs, or None when the version has none."""
    try:
        data = storage.read_bytes(_folds_name(version))
    except FileNotFoundError:
        return None
    with np.load(io.BytesIO(data), allow_pickle=False) as data:
        fits = [f if ok else None for f, ok in zip(data["fits"], data["fitted"], strict=True)]
        held = {key: data[key] for key in ("row_a", "row_b", "y", "fold", "rates")}
    return fits, held


def _side_name(version: MetricVersion, suffix: str) -> str:
    return sigma_name(version).removesuffix(".npy") + suffix


def bootstrap_save(version: MetricVersion, stack: np.ndarray, meta: dict) -> Path:
    """Keep a version's bootstrap refits (``learning/refits/bootstrap.py``) beside its Sigma:
    the (B, d, d) stack and what they are (with the stack's sha256: a reader's local copy is
    the one of these bytes); returns a local path of the stack, to memory-map."""
    data, sha256 = sigma_bytes(stack)
    name = _side_name(version, ".bootstrap.npy")
    storage.store_bytes(data, name)
    storage.store_bytes(
        json.dumps(meta | {"sha256": sha256}).encode(), _side_name(version, ".bootstrap.json")
    )
    return storage.cached_copy(name, sha256)


def bootstrap_load(version: MetricVersion) -> tuple[Path, dict] | None:
    """``bootstrap_save``'s stack (a local path) and what they are, or None when not fitted yet
    (or when the stack stored is not the one its description names: a save cut short)."""
    try:
        meta = json.loads(storage.read_bytes(_side_name(version, ".bootstrap.json")))
        path = storage.cached_copy(_side_name(version, ".bootstrap.npy"), meta["sha256"])
        if not path.is_file():
            return None
    except (FileNotFoundError, KeyError, ValueError):
        return None
    if hashlib.sha256(path.read_bytes()).hexdigest() != meta["sha256"]:
        if not storage.is_local():  # a copy of other bytes under this sha256: not kept
            path.unlink(missing_ok=True)
        return None
    return path, meta


def derivation_load(version: MetricVersion) -> Congruence | None:
    """How a derived version's Sigma was made from its parent's, when it was recorded."""
    try:
        data = storage.read_bytes(_side_name(version, ".derive.npy"))
    except FileNotFoundError:
        return None
    return Congruence(np.load(io.BytesIO(data), allow_pickle=False))


def validity_store(version: MetricVersion, validity: dict) -> None:
    """Store a verdict (``learning/versions/new_items.py: new_items_verdict``, with its
    watermark) on the version: ``diagnostics["validity"]``, ``verdict`` and ``informative``
    kept equal, and the pages' ``diagnostics["informative"]`` line; one UPDATE."""
    verdict = validity["verdict"]
    version.verdict, version.informative = verdict, verdict == "informative"
    version.diagnostics = (version.diagnostics or {}) | {
        "validity": validity,
        "informative": {
            "informative": version.informative,
            "summary": validity["summary"],
            "missing": validity["needs"],
        },
    }
    MetricVersion.objects.filter(pk=version.pk).update(
        verdict=version.verdict, informative=version.informative, diagnostics=version.diagnostics
    )


def _derived_validity(study: Study, sigma, parent, derive, watermark: int) -> dict:
    """The verdict of a Sigma derived from ``parent``: ``derive`` applied to each of the
    parent's new-items fold fits, scored on the same held-out items; "cannot tell yet" when the
    derivation or the parent's fold fits are not known (nothing says how its Sigma would fare)."""
    kept = None if parent is None or derive is None else fold_fits_load(parent)
    if kept is None:
        why = (
            "derived from another version without its derivation"
            if parent is not None
            else "made outside the app's refits: no fit of its recipe on held-out items"
        )
        return {
            "verdict": CANNOT_TELL,
            "basis": "new items",
            "gain": None,
            "gain_interval": None,
            "auc": None,
            "items": 0,
            "pairs": 0,
            "needs": "the derivation applied to the source version's fold fits "
            "(metric_version_create(..., derive=...))",
            "summary": f"not judged on new items: {why}",
            "judged_at_watermark": watermark,
        }
    fits, held = kept
    fits = [None if f is None else validate_sigma(derive(f), sigma.shape[0]) for f in fits]
    rows = np.unique(np.concatenate([held["row_a"], held["row_b"]]))
    x = np.asarray(study.space.vectors(rows), dtype=np.float64)
    za = x[np.searchsorted(rows, held["row_a"])] - x[np.searchsorted(rows, held["row_b"])]
    fig = new_item_figures(
        za, held["y"], held["fold"], held["rates"], fits, held["row_a"], held["row_b"]
    )
    answers = int((parent.counts or {}).get("observations") or 0)
    sample = ((parent.diagnostics or {}).get("new_items") or {}).get("sample", "all")
    verdict = new_items_verdict(fig, answers=answers, sample=sample)
    return verdict | {"judged_at_watermark": watermark}


def version_start(
    *,
    study: Study,
    method: str,
    label: str,
    parameters: dict,
    judgment_watermark: int,
    group_watermark: int,
    judgment_count: int,
    counts: dict | None = None,
    parent: MetricVersion | None = None,
    cohort: str = "",
) -> MetricVersion | None:
    """A new ``fitting`` version; None when a live version for the same input exists.
    ``cohort``: a cohort's fit (``MetricVersion.cohort``; ``learning/cohorts/``)."""
    fingerprint = version_fingerprint(
        method=method, label=label, parameters=parameters, judgment_count=judgment_count
    )
    try:
        with transaction.atomic():
            return MetricVersion.objects.create(
                study=study,
                method=method,
                label=label,
                parameters=parameters,
                fingerprint=fingerprint,
                judgment_watermark=judgment_watermark,
                group_watermark=group_watermark,
                counts=counts or {},
                parent=parent,
                dimension=study.space.dimension,
                status=Status.FITTING,
                cohort=cohort,
            )
    except IntegrityError:  # the same input already has a live version
        logger.info("study %s %s: a version for this input exists", study.pk, method)
        return None


def version_store(
    version: MetricVersion,
    *,
    sigma: np.ndarray,
    parameters: dict | None = None,
    diagnostics: dict | None = None,
    fit_seconds: float | None = None,
) -> MetricVersion:
    """Write Sigma atomically (media storage: a rename, or one upload visible only when whole),
    then mark the version ready in one transaction (refreshed)."""
    data, sha = sigma_bytes(sigma)
    storage.store_bytes(data, sigma_name(version))
    with transaction.atomic():
        MetricVersion.objects.filter(pk=version.pk).update(
            status=Status.READY,
            sigma=sigma_name(version),
            sigma_sha256=sha,
            dimension=int(sigma.shape[0]),
            parameters=version.parameters | (parameters or {}),
            diagnostics=version.diagnostics | (diagnostics or {}),
            fit_seconds=fit_seconds,
        )
    version.refresh_from_db()
    return version


def version_fail(version: MetricVersion, message: str, *, transient: bool) -> None:
    """Mark the version failed with ``message`` (transient: its input is refitted later)."""
    logger.warning(
        "study %s %s version %s failed: %s", version.study_id, version.method, version.pk, message
    )
    try:
        MetricVersion.objects.filter(pk=version.pk).update(
            status=Status.FAILED, error=message[:2000], transient=transient
        )
    except DatabaseError:  # the database itself is down: the next refit retires the row
        logger.warning("could not mark version %s failed", version.pk)


def versions_interrupted_retire(*, study_id: int) -> None:
    """Fitting rows left by a killed worker (the caller holds the study's refit lease, so
    nobody else is fitting): failed and transient, their partial files removed."""
    orphans = list(MetricVersion.objects.filter(study_id=study_id, status=Status.FITTING))
    for orphan in orphans:
        default_storage.delete(sigma_name(orphan))
    MetricVersion.objects.filter(pk__in=[o.pk for o in orphans]).update(
        status=Status.FAILED,
        transient=True,
        error="Interrupted: the worker stopped during the fit; the data is refitted.",
    )


def metric_version_create(
    *,
    study: Study,
    method: str,
    sigma: np.ndarray,
    parameters: dict | None = None,
    label: str = "",
    counts: dict | None = None,
    diagnostics: dict | None = None,
    judgment_watermark: int = 0,
    group_watermark: int = 0,
    parent: MetricVersion | None = None,
    fit_seconds: float | None = None,
    derive=None,
) -> MetricVersion:
    """Save ``sigma`` as a new ready :class:`MetricVersion` of ``study``, judged; returns it.

    ``derive`` (Sigma → Sigma): how ``sigma`` was made from ``parent``'s; the version gets the
    verdict of that derivation applied to each of the parent's new-items fold fits, on the same
    held-out items (``_derived_validity``). A ``learning.core.psd.Congruence`` is also kept
    beside the Sigma, so that audits can apply it to the parent's bootstrap refits. Without it (or a parent) the version is "cannot
    tell yet": never informative by default.

    Raises ``ValueError`` for an unknown method or a Sigma that is not a finite symmetric PSD
    matrix of the space's dimension, and :class:`~common.errors.Conflict` when the same input
    has a live version already (delete it first, :func:`metric_version_delete`); nothing is
    stored then.
    """
    if method not in Method.values:
        raise ValueError(f"unknown method {method!r}; choose one of {Method.values}")
    sigma = validate_sigma(sigma, study.space.dimension)
    version = version_start(
        study=study,
        method=method,
        label=label or method,
        parameters=dict(parameters or {}),
        judgment_watermark=judgment_watermark,
        group_watermark=group_watermark,
        judgment_count=judgment_watermark,
        counts=counts,
        parent=parent,
    )
    if version is None:
        raise Conflict(f"study {study.pk} has a live {label or method} version for this input")
    try:
        version = version_store(
            version, sigma=sigma, diagnostics=diagnostics or {}, fit_seconds=fit_seconds
        )
        validity_store(version, _derived_validity(study, sigma, parent, derive, judgment_watermark))
        if isinstance(derive, Congruence) and parent is not None:  # kept for its bootstrap
            buffer = io.BytesIO()
            np.save(buffer, np.asarray(derive.matrix, dtype=np.float64), allow_pickle=False)
            storage.store_bytes(buffer.getvalue(), _side_name(version, ".derive.npy"))
        return version
    except BaseException:
        default_storage.delete(sigma_name(version))
        MetricVersion.objects.filter(pk=version.pk).delete()
        raise


def metric_version_delete(*, version: MetricVersion) -> None:
    """Delete a version (its WEAT results cascade) and, once committed, its Sigma file."""
    name = version.sigma.name
    sides = [_folds_name(version)] + [
        _side_name(version, s) for s in (".bootstrap.npy", ".bootstrap.json", ".derive.npy")
    ]
    with transaction.atomic():
        version.delete()
        if name:
            transaction.on_commit(lambda: default_storage.delete(name))
        transaction.on_commit(lambda: [default_storage.delete(side) for side in sides])


# Publishing lives in learning/versions/publishing.py; its names stay importable from here.
from learning.versions.publishing import (  # noqa: E402
    metric_version_publish,
    publish_reason_clean,
    version_publish,
)

__all__ = [
    "metric_version_publish",
    "publish_reason_clean",
    "version_publish",
]
