"""Bootstrap refits of a version's Σ (learning/refits/bootstrap.py) and the audit under them
(learning/audits/uncertainty.py): resampled by pair, the version's own recipe, cached per
version, narrow when the answers determine Σ and wide when they are few, a verdict that flips
across plausible metrics shown, an audit end to end (the API's ``metric_uncertainty``)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from annotation.models import PairJudgment
from learning.audits import run as audit_runs
from learning.audits import services as audit_services
from learning.audits.api import metric_uncertainty
from learning.audits.uncertainty import audit_under_refits
from learning.core.psd import Congruence
from learning.models import MetricVersion, ModelAudit
from learning.refits import bootstrap, service
from learning.refits.pairs import PairData
from learning.versions import storage
from learning.versions.sigmas import sigma_of

from .helpers import add_simulated, admin_of


def _pairs(cluster: np.ndarray) -> PairData:
    n = cluster.size
    return PairData(
        row_a=cluster * 2,
        row_b=cluster * 2 + 1,
        y=(cluster % 2).astype(float),
        held_out=np.zeros(n, bool),
        hash=cluster / (cluster.max() + 1),
        annotator=np.arange(n),
        pair=cluster,
        gold=np.full(n, np.nan),
    )


def test_resample_keeps_a_pairs_answers_together():
    cluster = np.array([0, 0, 0, 1, 2, 2, 3, 4, 4, 4, 4])
    rng = np.random.default_rng(0)
    for _ in range(20):
        sub = bootstrap.resample_by_pair(_pairs(cluster), rng)
        assert sub.pair.max() + 1 == 5  # as many pairs drawn as there are
        for p in np.unique(sub.pair):
            drawn = sub.row_a[sub.pair == p] // 2  # the original pair of this draw
            assert np.unique(drawn).size == 1
            assert drawn.size == np.sum(cluster == drawn[0])  # all its answers, once each


def _explore(world, n_pairs: int, seed: int = 1) -> MetricVersion:
    add_simulated(world, n_pairs, seed=seed)
    report = service.refit_study(study_id=world[2].pk)
    explore = MetricVersion.objects.filter(pk__in=report.ready, method="explore").first()
    assert explore is not None, report
    return explore


def _spread(version) -> float:
    refits = bootstrap.version_refits(version)
    stack = np.stack(list(refits))
    centre = stack.mean(axis=0)
    return float(np.mean([np.linalg.norm(s - centre) for s in stack]) / np.linalg.norm(centre))


@pytest.fixture
def few_refits(settings):
    settings.AUDIT_METRIC_REFITS = 4
    settings.AUDIT_BOOTSTRAP = 20


@pytest.mark.django_db
def test_many_answers_give_narrow_refits_and_few_wide(world, few_refits):
    many = _explore(world, 1500)
    narrow = _spread(many)
    storage.metric_version_delete(version=many)
    MetricVersion.objects.filter(study=world[2]).delete()
    PairJudgment.objects.filter(study=world[2]).delete()
    few = _explore(world, 60, seed=2)
    wide = _spread(few)
    assert narrow < 0.5 * wide, (narrow, wide)


@pytest.mark.django_db
def test_refits_are_cached_per_version_and_derived_versions_reuse_them(world, few_refits):
    version = _explore(world, 200)
    assert version.parameters["prior"] == bootstrap.FACE_PRIOR  # refitted on each resample
    face = MetricVersion.objects.get(study=world[2], method="face")
    assert bootstrap.version_refits(face).fitted == 4  # a FACE version: its groups and pairs
    first = bootstrap.version_refits(version)
    assert first.basis == "its own recipe"
    assert first.fitted == 4
    calls = []
    again = bootstrap.version_refits(version, progress=lambda d, t: calls.append(d))
    assert calls == []  # read from the cache, not fitted again
    np.testing.assert_array_equal(np.stack(list(first)), np.stack(list(again)))
    # a run cut short after two refits is continued, to the same refits
    stack = np.stack(list(first))
    meta = {"fitted": 2, "asked": 4, "tried": 2, "note": first.note, "seconds": 1.0}
    storage.bootstrap_save(version, stack[:2], meta)
    continued = bootstrap.version_refits(version, progress=lambda d, t: calls.append(d))
    assert calls == [3, 4]
    np.testing.assert_array_equal(np.stack(list(continued)), stack)
    d = version.dimension
    keep = np.eye(d)
    keep[0, 0] = 0.0
    derived = storage.metric_version_create(
        study=world[2],
        method="explore",
        sigma=Congruence(keep)(sigma_of(version)),
        label="explore-out",
        parent=version,
        judgment_watermark=version.judgment_watermark,
        derive=Congruence(keep),
    )
    refits = bootstrap.version_refits(derived)
    assert "derived" in refits.basis
    for mine, theirs in zip(refits, first, strict=True):
        np.testing.assert_allclose(mine, Congruence(keep)(theirs))
        assert np.allclose(mine[0], 0.0)
    handmade = storage.metric_version_create(study=world[2], method="explore", sigma=np.eye(d))
    with pytest.raises(bootstrap.NoRecipe):
        bootstrap.version_refits(handmade)


def brute_knn(points, k, *, threads=1, progress=None):
    """Each point's k nearest others by float64 distance, ties by index (few points)."""
    d = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=2)
    np.fill_diagonal(d, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(len(d)), d.shape), d), axis=-1)[:, :k]
    return order, np.take_along_axis(d, order, axis=1)


class _Predictions:
    def __init__(self, scores):
        self.scores, self.decisions = np.asarray(scores, float), None


def test_a_verdict_that_flips_across_plausible_metrics_is_shown():
    """Two points 1 apart in x (a sensitive direction), scored 0.1 apart, and far others: under
    a metric that ignores x they violate (d = 0), under one that weighs it they do not."""
    vectors = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 50.0], [1.0, 50.0]])
    scores = np.array([0.0, 0.1, 0.5, 0.5])
    ignores, weighs = np.diag([0.0, 1.0]), np.diag([1.0, 1.0])
    common = {
        "vectors": vectors,
        "predictions": _Predictions(scores),
        "method": "explore",
        "k": 1,
        "epsilon": 2.0,
        "lipschitz": 1.0,
        "kept": (np.array([0]), np.array([1])),
        "summary": {"sigma": {"violation_rate": {"estimate": 0.25, "low": 0.0, "high": 0.5}}},
        "knn": brute_knn,
    }
    result = audit_under_refits([ignores, weighs, weighs], **common)
    assert result["verdict"]["flips"] is True
    assert result["verdict"]["violating_under"] == 1
    assert result["kept_violations"]["worst"] == [1]  # the kept pair: a violation under 1 of 3
    rate = result["figures"]["violation_rate"]
    assert rate["min"] == 0.0
    assert rate["max"] > 0.0
    steady = audit_under_refits([ignores, ignores], **common)
    assert steady["verdict"]["flips"] is False
    assert steady["kept_violations"]["hold_under_all"] == 1.0


@pytest.mark.django_db
def test_an_audit_reports_its_range_across_plausible_metrics(world, few_refits, client):
    version = _explore(world, 300)
    study = world[2]
    rng = np.random.default_rng(3)
    items = world[1]
    body = pd.DataFrame({"key": [i.key for i in items], "score": rng.random(len(items))}).to_csv(
        index=False
    )
    admin = admin_of(study)
    audit = audit_services.audit_create(
        user=admin,
        study=study,
        upload=SimpleUploadedFile("s.csv", body.encode()),
        version_id=version.pk,
        k=5,
    )
    assert audit_runs.audit_run(audit_id=audit.pk) == "done"
    audit.refresh_from_db()
    shown = metric_uncertainty(audit)
    assert shown["status"] == "done", shown
    assert shown["refits"] == 4
    assert shown["fitted"] == 4
    rate = shown["violation_rate"]
    assert rate["audit"] == audit.summary["sigma"]["violation_rate"]["estimate"]
    assert rate["min"] <= rate["low"] <= rate["high"] <= rate["max"]
    assert {"all_pairs_rate", "consistency", "mean_gap"} <= set(shown)
    assert shown["kept_violations"]["pairs"] == audit.violations.count()
    assert audit.lease_until is None
    client.force_login(admin)
    page = client.get(reverse("learning:audit-detail", args=[study.pk, audit.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="audit-uncertainty" data-status="done"' in text
    assert "Across plausible metrics" in text
    # a worker that died during the run under the refits: the sweep's query finds the audit,
    # and its next run does that part again (the refits read from the cache), alone
    before = audit.uncertainty
    past = timezone.now() - timedelta(seconds=1)
    ModelAudit.objects.filter(pk=audit.pk).update(
        uncertainty={"status": "running", "refits": 4}, lease_until=past
    )
    assert audit.pk in audit_services.audits_resend()
    assert audit_runs.audit_run(audit_id=audit.pk) == "done"
    audit.refresh_from_db()
    assert audit.uncertainty["figures"] == before["figures"]
    assert audit.uncertainty["kept_violations"] == before["kept_violations"]
    assert audit_runs.audit_run(audit_id=audit.pk) == "skipped"


@pytest.mark.django_db
def test_turned_off_the_audit_says_so(world, settings):
    settings.AUDIT_METRIC_REFITS = 0
    version = _explore(world, 100)
    body = "key,score\n" + "".join(f"{i.key},{n % 7 / 7}\n" for n, i in enumerate(world[1]))
    audit = audit_services.audit_create(
        user=admin_of(world[2]),
        study=world[2],
        upload=SimpleUploadedFile("s.csv", body.encode()),
        version_id=version.pk,
        k=5,
    )
    assert audit_runs.audit_run(audit_id=audit.pk) == "done"
    audit.refresh_from_db()
    assert audit.uncertainty["status"] == "unavailable"
    assert "AUDIT_METRIC_REFITS = 0" in audit.uncertainty["reason"]
    assert storage.bootstrap_load(version) is None  # nothing was fitted
