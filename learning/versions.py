"""Store and remove metric versions: Sigma as a ``.npy`` in media storage plus one database row.

:func:`metric_version_create` is the one-call way to record a Sigma fitted outside the refit
pipeline (the ``reproduce_weat_table`` command, notebooks, imports): it validates Sigma (finite,
symmetric, PSD, the space's dimension), writes it atomically (temporary name, fsync, rename),
records its sha256 and creates a ``ready`` version in one transaction. If the row cannot be
created, the file is removed again: never a row without its file, nor a stray file.

Each version gets a ``fingerprint`` (a hash of its method, label, parameters and watermarks
unless given) because the database allows one live version per study, method, watermarks and
fingerprint: FACE-3 and FACE-10 fitted on the same data are two versions, re-creating the same
one is an ``IntegrityError`` (delete the old one first, see :func:`metric_version_delete`).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import numpy as np
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils.text import slugify

from annotation.models import Study
from learning.core.psd import validate_sigma
from learning.fitting import file_write_atomic, sigma_bytes
from learning.models import MetricVersion


def version_fingerprint(
    *, method: str, label: str, parameters: dict, judgment_watermark: int, group_watermark: int
) -> str:
    """A 32-character hash of what identifies a fit (stable across runs)."""
    payload = json.dumps(
        {
            "method": method,
            "label": label,
            "parameters": parameters,
            "judgments": judgment_watermark,
            "groups": group_watermark,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.md5(payload.encode(), usedforsecurity=False).hexdigest()


def sigma_path(*, study: Study, method: str, label: str) -> str:
    """A fresh media-relative name for a Sigma file of ``study``."""
    stem = slugify(label or method) or method
    return f"sigmas/study-{study.pk}/{stem}-{uuid.uuid4().hex[:10]}.npy"


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
    fingerprint: str = "",
    parent: MetricVersion | None = None,
    fit_seconds: float | None = None,
) -> MetricVersion:
    """Save ``sigma`` and create a ready :class:`MetricVersion` for it; returns the version.

    Raises ``ValueError`` for an unknown method or a Sigma that is not a finite symmetric PSD
    matrix of the space's dimension; nothing is stored then.
    """
    if method not in MetricVersion.Method.values:
        raise ValueError(f"unknown method {method!r}; choose one of {MetricVersion.Method.values}")
    dimension = study.space.dimension
    sigma = validate_sigma(sigma, dimension)
    parameters = dict(parameters or {})
    label = label or method
    fingerprint = fingerprint or version_fingerprint(
        method=method,
        label=label,
        parameters=parameters,
        judgment_watermark=judgment_watermark,
        group_watermark=group_watermark,
    )
    data, sha = sigma_bytes(sigma)
    name = sigma_path(study=study, method=method, label=label)
    path = Path(default_storage.path(name))
    file_write_atomic(path, data)
    try:
        with transaction.atomic():
            return MetricVersion.objects.create(
                study=study,
                method=method,
                label=label,
                parameters=parameters,
                sigma=name,
                sigma_sha256=sha,
                dimension=dimension,
                judgment_watermark=judgment_watermark,
                group_watermark=group_watermark,
                fingerprint=fingerprint,
                counts=counts or {},
                diagnostics=diagnostics or {},
                status=MetricVersion.Status.READY,
                parent=parent,
                fit_seconds=fit_seconds,
            )
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def metric_version_delete(*, version: MetricVersion) -> None:
    """Delete a version (its WEAT results cascade) and, once committed, its Sigma file."""
    name = version.sigma.name
    with transaction.atomic():
        version.delete()
        if name:
            transaction.on_commit(lambda: default_storage.delete(name))
