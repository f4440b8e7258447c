"""Writes of comparable groups: create, rename, add and remove members. One new study-wide group
revision per change, one history row per edit; every change calls
:func:`annotation.hooks.feedback_changed` inside its transaction (a refit after the commit).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError, transaction

from annotation.access import Action, can_edit_group, require
from annotation.hooks import feedback_changed
from annotation.models import (
    MAX_GROUP_NAME,
    MAX_GROUP_SIZE,
    ComparableGroup,
    GroupEdit,
    Study,
    StudyCounter,
)
from annotation.selectors import items_in_pool, not_in_pool
from common.errors import Conflict, InvalidInput, NotAllowed
from common.text import invisible


def _clean_name(name) -> str:
    name = name.strip() if isinstance(name, str) else ""
    if not name:
        raise InvalidInput("A group needs a name.")
    if invisible(name):
        raise InvalidInput("A group name needs a visible character (not only zero-width or bidi).")
    if len(name) > MAX_GROUP_NAME:
        raise InvalidInput(f"A group name has at most {MAX_GROUP_NAME} characters.")
    return name


def _pool_members(study: Study, item_ids: Iterable) -> list[int]:
    try:
        ids = list(dict.fromkeys(int(i) for i in item_ids))
    except (TypeError, ValueError):
        raise InvalidInput("Members must be item ids.") from None
    if not ids:
        return []
    refused = not_in_pool(ids, items_in_pool(study=study, item_ids=ids))
    if refused:
        raise InvalidInput(refused)
    return ids


def _require_group_mode(study: Study) -> None:
    if study.mode == Study.Mode.PAIRS:
        raise InvalidInput("This study collects pairs only, not groups.")
    if not study.is_active:
        raise InvalidInput("This study is closed; it takes no more answers.")


@transaction.atomic
def group_create(
    *, study: Study, user, name: str, member_ids: Iterable[int] = ()
) -> ComparableGroup:
    """Create a named group (optionally with members); history rows and a new group revision."""
    require(user, study, Action.VIEW)
    _require_group_mode(study)
    name = _clean_name(name)
    ids = _pool_members(study, member_ids)
    if len(ids) > MAX_GROUP_SIZE:
        raise InvalidInput(f"A group has at most {MAX_GROUP_SIZE} members.")
    if ComparableGroup.objects.filter(study=study, name=name).exists():
        raise Conflict(f"A group named {name!r} already exists in this study.")
    revision = StudyCounter.group_revision_next(study)
    try:
        with transaction.atomic():
            group = ComparableGroup.objects.create(
                study=study, name=name, created_by=user, revision=revision
            )
    except IntegrityError:
        raise Conflict(f"A group named {name!r} already exists in this study.") from None
    group.members.add(*ids)
    GroupEdit.objects.bulk_create(
        [
            GroupEdit(
                group=group,
                user=user,
                action=GroupEdit.Action.CREATE,
                detail=name,
                revision=revision,
            )
        ]
        + [
            GroupEdit(
                group=group, user=user, action=GroupEdit.Action.ADD, item_id=i, revision=revision
            )
            for i in ids
        ]
    )
    feedback_changed(study_id=study.pk)
    return group


@transaction.atomic
def group_update(
    *,
    group: ComparableGroup,
    user,
    name: str | None = None,
    add: Iterable[int] = (),
    remove: Iterable[int] = (),
) -> ComparableGroup:
    """Rename a group and add/remove members; one history row per change, one new revision.

    Adding a member already there or removing one that is not is a no-op; an update that
    changes nothing writes nothing and queues no refit.
    """
    group = ComparableGroup.objects.select_for_update().select_related("study").get(pk=group.pk)
    study = group.study
    require(user, study, Action.VIEW)
    if not can_edit_group(user, group):
        raise NotAllowed("Only the group's creator or a reviewer/admin can edit this group.")
    _require_group_mode(study)
    add_ids = _pool_members(study, add)
    try:
        remove_ids = list(dict.fromkeys(int(i) for i in remove))
    except (TypeError, ValueError):
        raise InvalidInput("Members must be item ids.") from None
    if set(add_ids) & set(remove_ids):
        raise InvalidInput("An item cannot be both added and removed.")
    current = set(group.members.values_list("id", flat=True))
    add_ids = [i for i in add_ids if i not in current]
    remove_ids = [i for i in remove_ids if i in current]
    if len(current) + len(add_ids) - len(remove_ids) > MAX_GROUP_SIZE:
        raise InvalidInput(f"A group has at most {MAX_GROUP_SIZE} members.")
    new_name = None
    if name is not None:
        new_name = _clean_name(name)
        if new_name == group.name:
            new_name = None
        elif ComparableGroup.objects.filter(study=study, name=new_name).exists():
            raise Conflict(f"A group named {new_name!r} already exists in this study.")
    if new_name is None and not add_ids and not remove_ids:
        return group

    revision = StudyCounter.group_revision_next(study)
    edits = []
    if new_name is not None:
        edits.append(
            GroupEdit(
                group=group,
                user=user,
                action=GroupEdit.Action.RENAME,
                detail=f"{group.name} → {new_name}"[:300],
                revision=revision,
            )
        )
        group.name = new_name
    edits += [
        GroupEdit(group=group, user=user, action=GroupEdit.Action.ADD, item_id=i, revision=revision)
        for i in add_ids
    ]
    edits += [
        GroupEdit(
            group=group, user=user, action=GroupEdit.Action.REMOVE, item_id=i, revision=revision
        )
        for i in remove_ids
    ]
    group.revision = revision
    try:
        with transaction.atomic():
            group.save(update_fields=["name", "revision", "updated_at"])
    except IntegrityError:
        raise Conflict(f"A group named {new_name!r} already exists in this study.") from None
    if add_ids:
        group.members.add(*add_ids)
    if remove_ids:
        group.members.remove(*remove_ids)
    GroupEdit.objects.bulk_create(edits)
    feedback_changed(study_id=study.pk)
    return group
