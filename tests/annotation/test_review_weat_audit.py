"""Adjudications and a study's own WEAT tests are in the audit log (issue #39, item 8): each
write one event in its transaction, naming the pair or the test (``audit.AuditEvent``)."""

from __future__ import annotations

import pytest

from annotation.models import PairJudgment, Source
from annotation.review import services
from audit.models import AuditEvent
from learning.evaluation.weat_tests import weat_draft, weat_test_delete, weat_test_save
from learning.models import WeatTest

pytestmark = pytest.mark.django_db
Action = AuditEvent.Action
WORDS = {
    "x_words": ["w000", "w001"],
    "y_words": ["w002", "w003"],
    "a_words": ["w004"],
    "b_words": ["w005"],
}
NAMES = {"x_name": "X", "y_name": "Y", "a_name": "A", "b_name": "B"}


def events() -> list[tuple[str, str, dict]]:
    return [(e.action, e.actor_name, e.detail) for e in AuditEvent.objects.order_by("id")]


def test_adjudications_set_and_taken_back_are_logged(study, items, reviewer, annotator):
    a, b = items[0].pk, items[1].pk
    PairJudgment.objects.create(
        study=study,
        annotator=annotator,
        item_a_id=a,
        item_b_id=b,
        label="comparable",
        source=Source.ANNOTATED,
    )
    AuditEvent.objects.all().delete()
    decision = services.adjudicate(
        study=study, user=reviewer, item_a_id=b, item_b_id=a, label="incomparable"
    )
    services.adjudication_remove(study=study, user=reviewer, item_a_id=a, item_b_id=b)
    assert events() == [
        (
            Action.ADJUDICATION_SET,
            "rev",
            {"item_a": a, "item_b": b, "label": "incomparable", "gold": False},
        ),
        (Action.ADJUDICATION_REMOVE, "rev", {"item_a": a, "item_b": b}),
    ]
    first = AuditEvent.objects.order_by("id").first()
    assert (first.study_id, first.target_id) == (study.pk, str(decision.pk))


def test_weat_tests_defined_changed_and_deleted_are_logged(study, study_admin):
    AuditEvent.objects.all().delete()
    draft = weat_draft(study=study, name="Mine", kind="meaningful", names=NAMES, words=WORDS)
    test = weat_test_save(user=study_admin, study=study, draft=draft)
    renamed = weat_draft(
        study=study, name="Renamed", kind="meaningful", names=NAMES, words=WORDS, test=test
    )
    weat_test_save(user=study_admin, study=study, draft=renamed, test=test)
    weat_test_delete(user=study_admin, study=study, test_id=test.pk)
    assert not WeatTest.objects.exists()
    assert events() == [
        (Action.WEAT_TEST_SAVE, "boss", {"name": "Mine", "kind": "meaningful", "created": True}),
        (
            Action.WEAT_TEST_SAVE,
            "boss",
            {"name": "Renamed", "kind": "meaningful", "created": False},
        ),
        (Action.WEAT_TEST_DELETE, "boss", {"name": "Renamed"}),
    ]
    assert set(AuditEvent.objects.values_list("study_id", flat=True)) == {study.pk}
