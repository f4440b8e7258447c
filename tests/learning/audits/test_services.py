"""The audit room's services: a checked upload queued after the commit, the worker's run (its
figures on the twins, idempotent, taken over after a dead worker), new records, and the loop
back to the annotators."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest
from django.utils import timezone

from annotation.labelling.sampling import next_pair
from annotation.labelling.services import judgment_create
from annotation.models import CandidatePair
from audit.models import AuditEvent
from common.errors import InvalidInput, NotAllowed, PayloadTooLarge
from learning.audits import run, selectors, services
from learning.models import AuditViolation, ModelAudit
from tests.annotation.factories import make_metric_version

from .conftest import TWINS, csv_upload, parquet_upload, twin_scores

pytestmark = pytest.mark.django_db


def create(world, table, **kwargs):
    user = kwargs.pop("user", world["users"]["reviewer"])
    upload = table if hasattr(table, "read") else csv_upload(table)
    return services.audit_create(user=user, study=world["study"], upload=upload, **kwargs)


def audited(world, table, **kwargs) -> ModelAudit:
    audit = create(world, table, **kwargs)
    assert run.audit_run(audit_id=audit.pk) == "done"
    audit.refresh_from_db()
    return audit


def test_an_upload_is_stored_and_queued_after_the_commit(
    twins, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr(services, "audit_enqueue", sent.append)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        audit = create(twins, twin_scores(twins["frame"], sex=True), name="with sex")
    assert len(callbacks) == 1
    assert sent == [audit.pk]
    assert audit.status == ModelAudit.Status.QUEUED
    assert audit.version == twins["version"]  # the published one by default
    assert (audit.item_count, audit.k, audit.has_decision) == (2 * TWINS, 10, True)
    assert audit.predictions.storage.exists(audit.predictions.name)
    event = AuditEvent.objects.get(action=AuditEvent.Action.MODEL_AUDIT)
    assert (event.actor, event.study_id, event.target_id) == (
        twins["users"]["reviewer"],
        twins["study"].pk,
        str(audit.pk),
    )
    assert event.detail == {"name": "with sex", "version": audit.version_id, "items": 2 * TWINS}


def test_the_model_that_uses_sex_violates_between_twins_and_the_other_does_not(twins):
    with_sex = audited(twins, twin_scores(twins["frame"], sex=True), k=3)
    without = audited(twins, twin_scores(twins["frame"], sex=False), k=3)
    s, w = with_sex.summary["sigma"], without.summary["sigma"]
    assert s["violation_rate"]["estimate"] > 0.2
    assert s["violation_rate"]["low"] > w["violation_rate"]["high"]
    # every twin pair (distance 0, scores apart) is a violation, ranked first
    worst = list(with_sex.violations.order_by("rank")[:TWINS])
    assert all(v.distance < 1e-9 and v.differing_fields == ["sex"] for v in worst)
    assert {v.key_a[:3] for v in worst} == {f"p{i:02d}" for i in range(TWINS)}
    assert all(v.key_a[:3] == v.key_b[:3] for v in worst)
    # no twin pair in the model without sex
    assert not without.violations.filter(distance__lt=1e-9).exists()
    # the Euclidean metric sees sex as a difference: the twins are no violation there
    assert (
        with_sex.summary["euclidean"]["violation_rate"]["estimate"]
        < s["violation_rate"]["estimate"]
    )
    assert with_sex.summary["epsilon_rule"].startswith("EXPLORE")
    assert with_sex.summary["epsilon"] == pytest.approx(np.sqrt(np.log(3)))


def test_stored_pairs_are_canonical_with_shares_and_decisions(twins):
    audit = audited(twins, twin_scores(twins["frame"], sex=True), k=5)
    rows = list(audit.violations.all())
    assert rows
    assert all(v.item_a_id < v.item_b_id for v in rows)
    assert audit.violation_count == len(rows)
    for v in rows:
        assert abs(abs(v.score_a - v.score_b) - v.distance - v.gap) < 1e-9
        assert v.decision_a in ("yes", "no")
        if v.distance > 1e-6:
            assert "sex" not in v.shares  # Σ ignores sex: no share of d_Σ
            assert sum(v.shares.values()) == pytest.approx(1.0, abs=0.02)


def test_a_second_run_does_nothing_and_a_dead_workers_audit_is_taken_over(twins):
    audit = audited(twins, twin_scores(twins["frame"], sex=True), k=3)
    stored = AuditViolation.objects.filter(audit=audit).count()
    assert run.audit_run(audit_id=audit.pk) == "skipped"
    assert AuditViolation.objects.filter(audit=audit).count() == stored
    # a run that died mid-way: running, its lease expired, half of its rows left
    ModelAudit.objects.filter(pk=audit.pk).update(
        status="running", lease_until=timezone.now() - timedelta(seconds=1)
    )
    AuditViolation.objects.filter(audit=audit, rank__gt=5).delete()
    assert run.audit_run(audit_id=audit.pk) == "done"
    assert AuditViolation.objects.filter(audit=audit).count() == stored
    # one under a live lease is left alone
    ModelAudit.objects.filter(pk=audit.pk).update(
        status="running", lease_until=timezone.now() + timedelta(seconds=60)
    )
    assert run.audit_run(audit_id=audit.pk) == "skipped"


def test_a_missing_input_file_fails_the_audit_with_its_reason(twins):
    audit = create(twins, twin_scores(twins["frame"], sex=True))
    audit.predictions.storage.delete(audit.predictions.name)
    assert run.audit_run(audit_id=audit.pk) == "failed"
    audit.refresh_from_db()
    assert audit.status == "failed"
    assert audit.error


def test_parquet_and_a_chosen_version_epsilon_and_lipschitz(twins):
    other = make_metric_version(
        study=twins["study"], method="face", sigma=np.eye(twins["space"].dimension), label="eye"
    )
    table = twin_scores(twins["frame"], sex=True)
    audit = audited(twins, parquet_upload(table), version_id=other.pk, epsilon=0.5, lipschitz=2)
    assert audit.version == other
    assert audit.summary["epsilon"] == 0.5
    assert audit.summary["lipschitz"] == 2.0
    assert audit.summary["epsilon_rule"] == "given"


def test_new_records_are_embedded_with_the_stored_feature_map(twins):
    table = twin_scores(twins["frame"], sex=True)
    extra = twins["frame"].head(4).copy()
    extra["id"] = [f"new{i}" for i in range(4)]
    extra["sex"] = ["Male", "Female", "Male", "Female"]  # each the other sex of p00F.. twins
    new = twin_scores(extra, sex=True).join(extra[["age", "job", "sex"]])
    table = table.reindex(columns=[*table.columns, "age", "job", "sex"])
    both = pd.concat([table, new], ignore_index=True)
    audit = audited(twins, both, k=3)
    assert audit.new_records == 4
    assert audit.item_count == 2 * TWINS + 4
    # new0 is p00 as a man: at distance 0 from p00F, which the model scores apart
    row = AuditViolation.objects.get(audit=audit, key_a="p00F", key_b="new0")
    assert row.item_a_id is not None
    assert row.item_b_id is None
    assert row.distance < 1e-9
    assert row.differing_fields == ["sex"]
    assert row.record_b["sex"] == "Male"
    assert set(row.record_b) >= {"age", "job", "sex"}


BAD_FILES = [
    ("key,score\nnope,0.5\np00F,0.3\n", "1 unknown key(s) (not in this study's item pool"),
    ("name,score\np00F,0.5\n", "missing: key"),
    ("key,score\np00F,high\np00M,0.2\n", "the score must be a finite number"),
    ("key,score\np00F,0.1\np00F,0.2\n", "A key appears more than once"),
    ("key,score\np00F,inf\np00M,0.2\n", "the score must be a finite number"),
    ("key,score\n", "a header but no rows"),
    ("key,score,decision\np00F,0.1,\np00M,0.2,yes\n", "the decision is empty"),
    ("key,score\n\u200b,0.1\np00M,0.2\n", "the key is empty"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_bad_files_get_a_clear_error_and_write_nothing(twins, text, message, media_root):
    with pytest.raises(InvalidInput, match=re.escape(message)):
        create(twins, text)
    assert not ModelAudit.objects.exists()
    assert not (media_root / "audits").exists()


def test_new_records_need_every_field_of_the_feature_map(twins):
    with pytest.raises(InvalidInput, match="missing: age"):
        create(twins, "key,score,job,sex\nnew1,0.3,clerk,Male\np00F,0.1,clerk,Male\n")
    with pytest.raises(InvalidInput, match="New records: column 'age', row 1: 'old' is not"):
        create(twins, "key,score,age,job,sex\nnew1,0.3,old,clerk,Male\np00F,0.1,3,clerk,Male\n")


def test_limits_and_parameters(twins, settings):
    scores = twin_scores(twins["frame"], sex=True)
    settings.AUDIT_MAX_ROWS = 10
    with pytest.raises(InvalidInput, match="at most 10"):
        create(twins, scores)
    settings.AUDIT_MAX_ROWS = 1000
    settings.MAX_TABLE_MB = 1
    with pytest.raises(PayloadTooLarge, match="larger than 1 MB"):
        create(twins, "key,score\n" + "x" * (2 << 20))
    with pytest.raises(InvalidInput, match="k must be a finite number between 1 and 50"):
        create(twins, scores, k=0)
    with pytest.raises(InvalidInput, match="epsilon must be above 0"):
        create(twins, scores, epsilon="0")
    with pytest.raises(InvalidInput, match="lipschitz must be a number"):
        create(twins, scores, lipschitz="steep")
    with pytest.raises(InvalidInput, match="need at least 11"):
        create(twins, scores.head(5))
    with pytest.raises(InvalidInput, match="is not a ready metric version of this study"):
        create(twins, scores, version_id=999_999)
    with pytest.raises(InvalidInput, match="cannot tell the format"):
        create(twins, csv_upload(scores, name="scores.xlsx"))
    assert not ModelAudit.objects.exists()


def test_annotators_may_not_audit(twins):
    with pytest.raises(NotAllowed, match="Only reviewers and admins"):
        create(twins, twin_scores(twins["frame"], sex=True), user=twins["users"]["annotator"])


def test_asking_the_annotators_closes_the_loop(twins):
    audit = audited(twins, twin_scores(twins["frame"], sex=True), k=3)
    chosen = list(audit.violations.order_by("rank")[:20])
    ids = [v.pk for v in chosen]
    with pytest.raises(NotAllowed, match="Only an admin"):
        services.audit_ask_annotators(
            user=twins["users"]["reviewer"], audit=audit, violation_ids=ids
        )
    result = services.audit_ask_annotators(
        user=twins["users"]["admin"], audit=audit, violation_ids=ids
    )
    assert result["added"] == 20
    pairs = set(CandidatePair.objects.filter(study=twins["study"]).values_list("item_a", "item_b"))
    assert pairs == {(v.item_a_id, v.item_b_id) for v in chosen}
    assert audit.violations.filter(asked_at__isnull=False).count() == 20
    asked = AuditEvent.objects.get(action=AuditEvent.Action.AUDIT_ASK)
    assert (asked.actor, asked.detail) == (twins["users"]["admin"], {"ranks": list(range(1, 21))})
    # the sampler offers them first
    annotator = twins["users"]["annotator"]
    offered = next_pair(study=twins["study"], user=annotator)
    assert offered.reason == "candidate"
    # answers: 12 comparable (confirmed), 8 incomparable (disowned)
    for n, v in enumerate(chosen):
        judgment_create(
            study=twins["study"],
            annotator=annotator,
            item_a_id=v.item_a_id,
            item_b_id=v.item_b_id,
            label="comparable" if n < 12 else "incomparable",
            client_id=uuid.uuid4(),
        )
    loop = selectors.audit_loop(audit=audit)
    assert (loop.asked, loop.answered) == (20, 20)
    assert loop.verdicts == {"confirmed": 12, "disowned": 8, "undecided": 0}
    assert loop.learned_by is None  # no version has these answers yet
    make_metric_version(
        study=twins["study"],
        method="explore",
        sigma=np.eye(twins["space"].dimension),
        label="next",
        judgment_watermark=loop.last_answer,
    )
    assert selectors.audit_loop(audit=audit).learned_by.label == "next"


def test_asking_refuses_unknown_violations_and_too_many(twins):
    audit = audited(twins, twin_scores(twins["frame"], sex=True), k=3)
    admin = twins["users"]["admin"]
    with pytest.raises(InvalidInput, match="are not in this audit"):
        services.audit_ask_annotators(user=admin, audit=audit, violation_ids=[999_999])
    with pytest.raises(InvalidInput, match="at least one"):
        services.audit_ask_annotators(user=admin, audit=audit, violation_ids=[])
    with pytest.raises(InvalidInput, match="by their ids"):
        services.audit_ask_annotators(user=admin, audit=audit, violation_ids=["x"])
    assert not CandidatePair.objects.exists()
