"""learning.versions.storage (store/delete a Sigma version) and learning.evaluation.weat (WEAT results)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from annotation.models import Study
from common.errors import Conflict
from learning.core.psd import sqrtm_psd
from learning.core.weat import weat
from learning.evaluation.weat import weat_baseline, weat_evaluate_version
from learning.models import MetricVersion, WeatResult, WeatSuite, WeatTest
from learning.versions.sigmas import sigma_of
from learning.versions.storage import metric_version_create, metric_version_delete
from spaces.vectors.importing import space_import

D = 4
KEYS = [f"w{i}" for i in range(12)] + ["Alice", "bob"]


@pytest.fixture
def setup(db, media_root, tmp_path):
    """A 14-word space in R^4, a study on it and a suite of one test."""
    matrix = np.random.default_rng(3).normal(size=(len(KEYS), D)).astype(np.float32)
    np.save(tmp_path / "m.npy", matrix)
    (tmp_path / "m.vocab").write_text("\n".join(k.lower() for k in KEYS) + "\n")
    space = space_import(path=tmp_path / "m.npy", name="tiny-eval")
    study = Study.objects.create(name="Eval study", space=space)
    suite = WeatSuite.objects.create(name="eval suite")
    suite.studies.add(study)
    test = WeatTest.objects.create(
        suite=suite,
        position=1,
        name="X / A",
        kind=WeatTest.Kind.UNFAIR,
        x_name="X",
        y_name="Y",
        a_name="A",
        b_name="B",
        x_words=["w0", "w1", "w2", "Alice"],
        y_words=["w3", "w4", "w5", "nobody"],
        a_words=["w6", "w7", "w8"],
        b_words=["w9", "w10", "w11", "bob"],
    )
    return {"space": space, "study": study, "suite": suite, "test": test, "matrix": matrix}


def projector_sigma(direction) -> np.ndarray:
    q = np.asarray(direction, dtype=float) / np.linalg.norm(direction)
    return np.eye(D) - np.outer(q, q)


def media_files(setup) -> list[Path]:
    folder = Path(setup["space"].matrix.path).parent.parent / "sigmas"
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


# --- versions ---------------------------------------------------------------------------------


def test_create_stores_sigma_with_its_sha256(setup):
    sigma = projector_sigma([1, 0, 0, 0])
    version = metric_version_create(
        study=setup["study"],
        method="face",
        sigma=sigma,
        label="face-1",
        parameters={"n_components": 1},
        counts={"groups": 1},
        judgment_watermark=5,
    )
    assert version.status == MetricVersion.Status.READY
    assert version.dimension == D
    data = Path(version.sigma.path).read_bytes()
    assert hashlib.sha256(data).hexdigest() == version.sigma_sha256
    np.testing.assert_allclose(sigma_of(version), sigma)
    assert len(version.fingerprint) == 32


@pytest.mark.parametrize(
    ("sigma", "message"),
    [
        (np.eye(3), "must be 4×4"),
        (np.diag([1.0, 1.0, 1.0, -1.0]), "not positive semi-definite"),
        (np.full((4, 4), np.nan), "NaN"),
    ],
    ids=["wrong-dimension", "not-psd", "nan"],
)
def test_a_bad_sigma_stores_nothing(setup, sigma, message):
    with pytest.raises(ValueError, match=message):
        metric_version_create(study=setup["study"], method="face", sigma=sigma)
    assert not MetricVersion.objects.exists()
    assert media_files(setup) == []


def test_the_same_fit_twice_is_refused_and_leaves_no_file(setup):
    kwargs = {"study": setup["study"], "method": "face", "sigma": np.eye(D), "label": "face-1"}
    metric_version_create(**kwargs)
    with pytest.raises(Conflict, match="live face-1 version"):
        metric_version_create(**kwargs)
    assert MetricVersion.objects.count() == 1
    assert len(media_files(setup)) == 1
    metric_version_create(**kwargs | {"label": "face-2"})  # another label: another version
    assert MetricVersion.objects.count() == 2


def test_delete_removes_row_results_and_file_after_commit(
    setup, django_capture_on_commit_callbacks
):
    version = metric_version_create(study=setup["study"], method="explore", sigma=np.eye(D))
    weat_evaluate_version(version, n_permutations=100, n_boot=0)
    path = Path(version.sigma.path)
    with django_capture_on_commit_callbacks(execute=True):
        metric_version_delete(version=version)
    assert not MetricVersion.objects.exists()
    assert not WeatResult.objects.exists()
    assert not path.exists()


# --- evaluation -------------------------------------------------------------------------------


def test_version_results_match_the_core_on_the_same_vectors(setup):
    sigma = projector_sigma([1, 1, 0, 0])
    version = metric_version_create(
        study=setup["study"], method="face", sigma=sigma, label="face-1"
    )
    (result,) = weat_evaluate_version(version, n_permutations=500, n_boot=200)
    m = setup["matrix"].astype(np.float64)
    row = {k.lower(): i for i, k in enumerate(KEYS)}

    def vectors(words):
        return m[[row[w.lower()] for w in words]]

    expected = weat(
        vectors(["w0", "w1", "w2", "Alice"]),
        vectors(["w3", "w4", "w5"]),
        vectors(["w6", "w7", "w8"]),
        vectors(["w9", "w10", "w11", "bob"]),
        sigma=sigma,
        n_permutations=500,
        random_state=0,
    )
    assert result.metric == "face-1"
    assert result.metric_version == version
    assert result.p_value == pytest.approx(expected.p_value)
    assert result.effect_size == pytest.approx(expected.effect_size)
    assert result.exact is True  # C(7, 4) = 35 partitions <= 500: all of them
    assert result.n_partitions == 35
    assert result.missing_words == ["nobody"]
    assert set(result.scores) == {"w0", "w1", "w2", "Alice", "w3", "w4", "w5"}
    assert result.ci_low <= result.ci_high
    # Sanity of the metric: s(w) equals plain cosines after transforming by Sigma^(1/2).
    root = sqrtm_psd(sigma)
    u = vectors(["w0"]) @ root
    a, b = vectors(["w6", "w7", "w8"]) @ root, vectors(["w9", "w10", "w11", "bob"]) @ root

    def cos(x, ys):
        return (ys @ x.T).ravel() / (np.linalg.norm(ys, axis=1) * np.linalg.norm(x))

    assert result.scores["w0"] == pytest.approx(cos(u, a).mean() - cos(u, b).mean(), abs=1e-6)


def test_reevaluating_a_version_replaces_its_rows(setup):
    version = metric_version_create(study=setup["study"], method="face", sigma=np.eye(D))
    weat_evaluate_version(version, n_permutations=100, n_boot=0)
    weat_evaluate_version(version, n_permutations=100, n_boot=0)
    assert WeatResult.objects.filter(metric_version=version).count() == 1


def test_baseline_is_cached_until_refreshed(setup, django_assert_max_num_queries):
    first = weat_baseline(setup["suite"], setup["space"], n_permutations=20)
    assert [r.metric for r in first] == ["euclidean"]
    assert first[0].metric_version is None
    assert first[0].n_partitions == 20
    assert first[0].exact is False
    with django_assert_max_num_queries(2):
        cached = weat_baseline(setup["suite"], setup["space"], n_permutations=20)
    assert [r.pk for r in cached] == [r.pk for r in first]
    again = weat_baseline(setup["suite"], setup["space"], n_permutations=20, refresh=True)
    assert again[0].pk != first[0].pk
    exact = weat_baseline(setup["suite"], setup["space"], n_permutations=1000)
    assert exact[0].exact is True  # another permutation count: recomputed
    assert WeatResult.objects.filter(metric_version=None).count() == 1


def test_a_test_without_enough_words_is_skipped(setup):
    test = setup["test"]
    test.y_words = ["nobody", "w3"]
    test.save()
    assert weat_baseline(setup["suite"], setup["space"], n_permutations=20) == []
    assert not WeatResult.objects.exists()
