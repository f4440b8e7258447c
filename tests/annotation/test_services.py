"""Judgment and group services: idempotency, canonical storage, validation, refit hook."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import IntegrityError, connection, connections, transaction

from annotation.models import (
    ComparableGroup,
    GoldPair,
    GroupEdit,
    Label,
    PairJudgment,
    Source,
    Study,
    StudyCounter,
)
from annotation.services import (
    group_create,
    group_update,
    judgment_create,
    judgment_undo,
)
from common.errors import Conflict, InvalidInput, NotAllowed, NotFound
from learning.refits.scheduling import refit_request
from tests.conftest import require

from .factories import make_space, make_study


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


# --- Groups -----------------------------------------------------------------------------------


def test_group_create_records_history_and_bumps_the_study_revision(
    study, annotator, items, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        group = group_create(
            study=study, user=annotator, name="  girls ", member_ids=[i.pk for i in items[:3]]
        )
    assert len(refit_hooks(callbacks)) == 1
    assert group.name == "girls"
    assert set(group.members.values_list("pk", flat=True)) == {i.pk for i in items[:3]}
    assert StudyCounter.objects.get(study=study).group_revision == 1
    assert group.revision == 1
    actions = sorted(group.edits.values_list("action", flat=True))
    assert actions == ["add", "add", "add", "create"]


def test_group_update_renames_adds_and_removes_with_one_new_revision(study, annotator, items):
    group = group_create(study=study, user=annotator, name="g", member_ids=[items[0].pk])
    other = group_create(study=study, user=annotator, name="h")
    updated = group_update(
        group=group,
        user=annotator,
        name="g2",
        add=[items[1].pk, items[2].pk],
        remove=[items[0].pk],
    )
    assert updated.name == "g2"
    assert set(updated.members.values_list("pk", flat=True)) == {items[1].pk, items[2].pk}
    assert other.revision == 2
    assert updated.revision == 3
    assert StudyCounter.objects.get(study=study).group_revision == 3
    latest = GroupEdit.objects.filter(group=group, revision=3)
    assert sorted(latest.values_list("action", flat=True)) == ["add", "add", "remove", "rename"]


def test_group_update_that_changes_nothing_writes_nothing(
    study, annotator, items, django_capture_on_commit_callbacks
):
    group = group_create(study=study, user=annotator, name="g", member_ids=[items[0].pk])
    with django_capture_on_commit_callbacks() as callbacks:
        group_update(group=group, user=annotator, name="g", add=[items[0].pk], remove=[999])
    assert callbacks == []
    assert StudyCounter.objects.get(study=study).group_revision == 1


def test_group_names_are_unique_in_a_study(study, annotator, items):
    group_create(study=study, user=annotator, name="g")
    with pytest.raises(Conflict):
        group_create(study=study, user=annotator, name="g")
    h = group_create(study=study, user=annotator, name="h")
    with pytest.raises(Conflict):
        group_update(group=h, user=annotator, name="g")
    assert ComparableGroup.objects.count() == 2


def test_group_members_must_be_in_the_pool(study, annotator, items):
    foreign = make_space(name="other", seed=2).items.first()
    with pytest.raises(InvalidInput, match="pool"):
        group_create(study=study, user=annotator, name="g", member_ids=[items[0].pk, foreign.pk])
    assert ComparableGroup.objects.count() == 0
    assert not StudyCounter.objects.filter(study=study, group_revision__gt=0).exists()


def test_only_the_creator_or_reviewers_edit_a_group(
    study, annotator, other_annotator, reviewer, items
):
    group = group_create(study=study, user=annotator, name="g")
    with pytest.raises(NotAllowed):
        group_update(group=group, user=other_annotator, add=[items[0].pk])
    group_update(group=group, user=reviewer, add=[items[0].pk])
    assert group.members.count() == 1


def test_pairs_only_studies_take_no_groups(space, annotator, items):
    from annotation.models import Membership

    pairs_study = make_study(space=space, name="pairs only", mode=Study.Mode.PAIRS)
    Membership.objects.create(user=annotator, study=pairs_study)
    with pytest.raises(InvalidInput, match="pairs only"):
        group_create(study=pairs_study, user=annotator, name="g")


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


@pytest.mark.django_db(transaction=True)
def test_concurrent_group_edits_get_distinct_revisions(study, annotator, items):
    require(connection.vendor == "postgresql", "concurrency is tested on PostgreSQL")
    groups = [group_create(study=study, user=annotator, name=f"g{i}") for i in range(5)]
    results = run_concurrently(
        5, lambda i: group_update(group=groups[i], user=annotator, add=[items[i].pk]).revision
    )
    assert sorted(results) == [6, 7, 8, 9, 10]
    assert StudyCounter.objects.get(study=study).group_revision == 10


def test_groups_only_studies_take_no_pairs(study, annotator, items):
    Study.objects.filter(pk=study.pk).update(mode=Study.Mode.GROUPS)
    study.refresh_from_db()
    with pytest.raises(InvalidInput, match="groups only"):
        create(study, annotator, items[0], items[1])
    assert PairJudgment.objects.count() == 0
