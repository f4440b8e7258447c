"""Group services: history rows, one new study-wide revision per change, unique names, members
from the pool, who may edit; concurrent edits on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation.groups.services import group_create, group_update
from annotation.models import ComparableGroup, GroupEdit, Study, StudyCounter
from common.errors import Conflict, InvalidInput, NotAllowed
from tests.conftest import require

from .factories import make_space, make_study
from .test_services import refit_hooks, run_concurrently


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


# --- Concurrency (PostgreSQL: real row locks) ---------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_group_edits_get_distinct_revisions(study, annotator, items):
    require(connection.vendor == "postgresql", "concurrency is tested on PostgreSQL")
    groups = [group_create(study=study, user=annotator, name=f"g{i}") for i in range(5)]
    results = run_concurrently(
        5, lambda i: group_update(group=groups[i], user=annotator, add=[items[i].pk]).revision
    )
    assert sorted(results) == [6, 7, 8, 9, 10]
    assert StudyCounter.objects.get(study=study).group_revision == 10
