"""Judgment services: idempotency, canonical storage, validation, undo, refit hook (groups:
test_groups.py)."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import IntegrityError, connection, connections, transaction

from annotation.labelling.services import judgment_create, judgment_undo
from annotation.models import GoldPair, Label, PairJudgment, Source, Study
from common.errors import Conflict, InvalidInput, NotAllowed, NotFound
from learning.refits.scheduling import refit_request
from tests.conftest import require

from .factories import make_space


def create(study, user, a, b, label=Label.COMPARABLE, client_id=None, elapsed_ms=1200):
    return judgment_create(
        study=study,
        annotator=user,
        item_a_id=a.pk,
        item_b_id=b.pk,
        label=label,
        client_id=client_id or uuid.uuid4(),
        elapsed_ms=elapsed_ms,
    )


def test_judgment_is_stored_canonically_with_its_elapsed_time(study, annotator, items):
    judgment, created = create(study, annotator, items[5], items[2], label=Label.INCOMPARABLE)
    assert created
    judgment.refresh_from_db()
    assert (judgment.item_a_id, judgment.item_b_id) == (items[2].pk, items[5].pk)
    assert judgment.label == "incomparable"
    assert judgment.elapsed_ms == 1200
    assert judgment.source == Source.ANNOTATED
    assert judgment.annotator == annotator


def test_duplicate_submission_is_stored_once_and_returns_the_same_judgment(study, annotator, items):
    cid = uuid.uuid4()
    first, created_first = create(study, annotator, items[0], items[1], client_id=cid)
    again, created_again = create(study, annotator, items[1], items[0], client_id=str(cid))
    assert created_first
    assert not created_again
    assert again.pk == first.pk
    assert PairJudgment.objects.filter(client_id=cid).count() == 1


@pytest.mark.parametrize("change", ["other_user", "other_pair", "other_label"])
def test_client_id_reused_for_different_content_conflicts(
    study, annotator, other_annotator, items, change
):
    cid = uuid.uuid4()
    create(study, annotator, items[0], items[1], client_id=cid)
    user, a, b, label = annotator, items[0], items[1], Label.COMPARABLE
    if change == "other_user":
        user = other_annotator
    elif change == "other_pair":
        b = items[2]
    else:
        label = Label.UNSURE
    with pytest.raises(Conflict, match="client_id"):
        create(study, user, a, b, label=label, client_id=cid)
    assert PairJudgment.objects.count() == 1


def test_answering_the_same_pair_twice_conflicts(study, annotator, items):
    create(study, annotator, items[0], items[1])
    with pytest.raises(Conflict, match="already answered"):
        create(study, annotator, items[1], items[0])
    assert PairJudgment.objects.count() == 1


def test_database_refuses_non_canonical_pairs(study, annotator, items):
    with pytest.raises(IntegrityError), transaction.atomic():
        PairJudgment.objects.create(
            study=study,
            item_a=items[3],
            item_b=items[1],
            label="comparable",
            annotator=annotator,
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"label": "maybe"}, "label"),
        ({"same": True}, "different"),
        ({"client_id": "not-a-uuid"}, "UUID"),
        ({"elapsed_ms": -5}, "elapsed_ms"),
        ({"unknown_item": True}, "does not exist"),
    ],
)
def test_bad_input_is_refused_and_stores_nothing(study, annotator, items, kwargs, message):
    args = {
        "study": study,
        "annotator": annotator,
        "item_a_id": items[0].pk,
        "item_b_id": items[1].pk,
        "label": "comparable",
        "client_id": uuid.uuid4(),
        "elapsed_ms": 10,
    }
    if kwargs.pop("same", False):
        args["item_b_id"] = items[0].pk
    if kwargs.pop("unknown_item", False):
        args["item_b_id"] = 10**9
    args.update(kwargs)
    with pytest.raises(InvalidInput, match=message):
        judgment_create(**args)
    assert PairJudgment.objects.count() == 0


def test_items_outside_the_study_space_or_pool_are_refused(study, annotator, items):
    other_space = make_space(name="other", seed=1)
    foreign = other_space.items.first()
    with pytest.raises(InvalidInput, match="pool"):
        create(study, annotator, items[0], foreign)
    tag = study.pool_tags.create(name="names-only")
    items[-1].tags.add(tag)
    items[-2].tags.add(tag)
    with pytest.raises(InvalidInput, match="pool"):
        create(study, annotator, items[0], items[-1])
    judgment, _ = create(study, annotator, items[-2], items[-1])
    assert judgment.pk


def test_non_members_and_closed_studies_are_refused(study, annotator, outsider, items):
    with pytest.raises(NotFound, match="No such study"):  # outsiders: as if it did not exist
        create(study, outsider, items[0], items[1])
    Study.objects.filter(pk=study.pk).update(is_active=False)
    study.refresh_from_db()
    with pytest.raises(InvalidInput, match="closed"):
        create(study, annotator, items[0], items[1])
    assert PairJudgment.objects.count() == 0


def test_staff_may_answer_in_any_study(study, staff, items):
    judgment, created = create(study, staff, items[0], items[1])
    assert created
    assert judgment.annotator == staff


def test_answers_to_gold_pairs_are_marked_gold(study, annotator, items):
    GoldPair.objects.create(study=study, item_a=items[0], item_b=items[1], label="comparable")
    gold, _ = create(study, annotator, items[1], items[0])
    plain, _ = create(study, annotator, items[1], items[2])
    assert gold.is_gold
    assert not plain.is_gold


def refit_hooks(callbacks) -> list:
    """The on-commit callbacks registered by learning.refits.scheduling.refit_request."""
    return [c for c in callbacks if c.__qualname__.startswith(refit_request.__name__ + ".")]


def test_saving_a_judgment_queues_a_refit_after_commit(
    study, annotator, items, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        cid = uuid.uuid4()
        create(study, annotator, items[0], items[1], client_id=cid)
    assert len(refit_hooks(callbacks)) == 1
    with django_capture_on_commit_callbacks() as callbacks:
        create(study, annotator, items[0], items[1], client_id=cid)  # a retry changes nothing
    assert callbacks == []


def test_a_refused_judgment_queues_no_refit(
    study, annotator, items, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(InvalidInput):
        create(study, annotator, items[0], items[0])
    assert callbacks == []


def test_undo_deletes_only_ones_own_judgment_and_queues_a_refit(
    study, annotator, other_annotator, items, django_capture_on_commit_callbacks
):
    mine, _ = create(study, annotator, items[0], items[1])
    theirs, _ = create(study, other_annotator, items[0], items[1])
    with pytest.raises(NotAllowed):
        judgment_undo(user=annotator, study=study, judgment_id=theirs.pk)
    with django_capture_on_commit_callbacks() as callbacks:
        undone = judgment_undo(user=annotator, study=study, client_id=mine.client_id)
    assert undone.pk == mine.pk
    assert len(refit_hooks(callbacks)) == 1
    assert list(PairJudgment.objects.values_list("pk", flat=True)) == [theirs.pk]
    with pytest.raises(NotFound):
        judgment_undo(user=annotator, study=study, judgment_id=mine.pk)


def test_undo_needs_exactly_one_reference(study, annotator):
    with pytest.raises(InvalidInput):
        judgment_undo(user=annotator, study=study)


def test_after_undo_the_pair_can_be_answered_again(study, annotator, items):
    first, _ = create(study, annotator, items[0], items[1])
    judgment_undo(user=annotator, study=study, judgment_id=first.pk)
    second, created = create(study, annotator, items[0], items[1], label=Label.UNSURE)
    assert created
    assert second.label == "unsure"


def test_imported_judgments_may_repeat_a_pair(study, items):
    for _ in range(2):
        PairJudgment.objects.create(
            study=study,
            item_a=items[0],
            item_b=items[1],
            label="comparable",
            source=Source.IMPORTED,
        )
    assert PairJudgment.objects.count() == 2


# --- Concurrency (PostgreSQL: real row locks and unique-index waits) ---------------------------


def run_concurrently(n: int, work) -> list:
    """Run ``work(i)`` in ``n`` threads released together; returns results or exceptions."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def target(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[i] = work(i)
        except Exception as exc:  # noqa: BLE001 - reported to the test
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return results


@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_of_one_answer_store_one_judgment(study, annotator, items):
    require(connection.vendor == "postgresql", "concurrency is tested on PostgreSQL")
    cid = uuid.uuid4()
    results = run_concurrently(
        6, lambda i: create(study, annotator, items[0], items[1], client_id=cid)
    )
    assert not [r for r in results if isinstance(r, Exception)], results
    assert len({judgment.pk for judgment, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert PairJudgment.objects.filter(client_id=cid).count() == 1


def test_groups_only_studies_take_no_pairs(study, annotator, items):
    Study.objects.filter(pk=study.pk).update(mode=Study.Mode.GROUPS)
    study.refresh_from_db()
    with pytest.raises(InvalidInput, match="groups only"):
        create(study, annotator, items[0], items[1])
    assert PairJudgment.objects.count() == 0
