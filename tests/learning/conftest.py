"""Small synthetic studies for the dashboard, export and permission tests.

A space of 60 words in R^5 stored as .npy under a temporary MEDIA_ROOT, a study on it with one
member per role, metric versions with real Sigma files, and WEAT results.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np
import pytest
from django.core.files.base import ContentFile

from annotation.models import Membership, Study
from learning.models import MetricVersion, WeatResult, WeatSuite, WeatTest
from spaces.models import EmbeddingSpace, Item
from tests.annotation.factories import make_user, npy_bytes

N_WORDS = 60
DIM = 5


@pytest.fixture(autouse=True)
def empty_cache():
    """Dashboards are cached per study and watermark; ids repeat across tests."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def space(media_root) -> EmbeddingSpace:
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(N_WORDS, DIM)).astype(np.float32)
    content = npy_bytes(matrix)
    space = EmbeddingSpace(
        name="tiny",
        dimension=DIM,
        sha256=hashlib.sha256(content).hexdigest(),
        item_count=N_WORDS,
    )
    space.matrix.save("tiny.npy", ContentFile(content), save=False)
    space.save()
    Item.objects.bulk_create(Item(space=space, key=f"w{row}", row=row) for row in range(N_WORDS))
    return space


@pytest.fixture
def study(space) -> Study:
    return Study.objects.create(name="Tiny study", space=space)


@pytest.fixture
def other_study(space) -> Study:
    return Study.objects.create(name="Other study", space=space)


@pytest.fixture(name="make_user")
def make_user_fixture(db) -> Callable:
    """``make_user(username, *, study=None, role=None, **flags)`` (tests.annotation.factories)."""
    return make_user


@pytest.fixture
def users(make_user, study) -> dict:
    """One user per role in ``study``, a member of no study, and a staff user."""
    return {
        "annotator": make_user("ann", study=study, role=Membership.Role.ANNOTATOR),
        "reviewer": make_user("rev", study=study, role=Membership.Role.REVIEWER),
        "admin": make_user("adm", study=study, role=Membership.Role.ADMIN),
        "outsider": make_user("out"),
        "staff": make_user("staff", is_staff=True),
    }


def face_sigma(directions: np.ndarray) -> np.ndarray:
    """I - QQ^T for the orthonormalised columns of ``directions``."""
    q, _ = np.linalg.qr(directions)
    return np.eye(directions.shape[0]) - q @ q.T


@pytest.fixture
def make_version() -> Callable:
    def make(
        study: Study,
        sigma: np.ndarray,
        *,
        method="face",
        label="",
        published=False,
        status=MetricVersion.Status.READY,
        diagnostics=None,
        counts=None,
        watermark=0,
        parent=None,
        verdict="informative",  # judged (a verdict is never a default: issue 35)
    ) -> MetricVersion:
        content = npy_bytes(np.asarray(sigma, dtype=np.float64))
        version = MetricVersion(
            study=study,
            method=method,
            label=label or method,
            status=status,
            dimension=sigma.shape[0],
            sigma_sha256=hashlib.sha256(content).hexdigest(),
            parameters={"n_components": 1} if method == "face" else {"max_eigenvalue": 100.0},
            judgment_watermark=watermark,
            diagnostics=diagnostics or {},
            counts=counts or {"comparable": 3, "incomparable": 2, "groups": 1},
            is_published=published,
            parent=parent,
            fingerprint=f"fp{watermark}",
            verdict=verdict,
            informative=verdict == "informative",
        )
        version.sigma.save(
            f"sigma-{study.pk}-{method}-{watermark}.npy", ContentFile(content), save=False
        )
        version.save()
        return version

    return make


@pytest.fixture
def sigma_a() -> np.ndarray:
    return face_sigma(np.eye(DIM)[:, :1])


@pytest.fixture
def sigma_b() -> np.ndarray:
    rng = np.random.default_rng(1)
    return face_sigma(rng.normal(size=(DIM, 2)))


@pytest.fixture
def versions(study, make_version, sigma_a, sigma_b) -> list[MetricVersion]:
    """A published FACE version and a newer ready FACE version, plus one EXPLORE version."""
    first = make_version(
        study,
        sigma_a,
        label="face-1",
        published=True,
        watermark=10,
        diagnostics={"heldout_loglik": -0.61, "auc": 0.7},
    )
    second = make_version(
        study,
        sigma_b,
        label="face-2",
        watermark=20,
        parent=first,
        diagnostics={"heldout_loglik": -0.55, "auc": 0.74},
    )
    rng = np.random.default_rng(2)
    root = rng.normal(size=(DIM, DIM))
    explore = make_version(
        study,
        root @ root.T / DIM,
        method="explore",
        label="explore",
        watermark=20,
        diagnostics={"heldout_loglik": -0.5, "converged": True},
    )
    return [first, second, explore]


@pytest.fixture
def weat(study, space, versions) -> list[WeatTest]:
    """Two tests (one meaningful, one unfair) with Euclidean and per-version results."""
    suite = WeatSuite.objects.create(name="tiny suite")
    suite.studies.add(study)
    tests = [
        WeatTest.objects.create(
            suite=suite,
            position=i,
            name=f"{kind} X / A",
            kind=kind,
            x_name="X",
            y_name="Y",
            a_name="A",
            b_name="B",
            x_words=["w0", "w1"],
            y_words=["w2", "w3"],
            a_words=["w4", "w5"],
            b_words=["w6", "w7"],
        )
        for i, kind in enumerate([WeatTest.Kind.MEANINGFUL, WeatTest.Kind.UNFAIR])
    ]
    rows = []
    for test in tests:
        metrics = [(None, "euclidean", 0.01)] + [
            (v, v.label, p) for v, p in zip(versions, [0.02, 0.2, 0.03], strict=True)
        ]
        for version, metric, p in metrics:
            rows.append(
                WeatResult(
                    test=test,
                    space=space,
                    metric_version=version,
                    metric=metric,
                    p_value=p,
                    effect_size=1.2 if p < 0.05 else 0.3,
                    statistic=0.5,
                    n_partitions=6,
                    exact=True,
                    ci_low=0.1,
                    ci_high=1.5,
                    scores={"w0": 0.4, "w1": 0.3, "w2": -0.2, "w3": -0.1},
                )
            )
    WeatResult.objects.bulk_create(rows)
    return tests
