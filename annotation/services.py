"""Writes: judgments (idempotent on ``client_id``), undo, and comparable groups.

Every write that changes the feedback calls :func:`annotation.hooks.feedback_changed` inside
its transaction; learning's receiver queues a refit once the write has committed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db import IntegrityError, transaction

from common.errors import Conflict, InvalidInput, NotAllowed, NotFound
from common.text import invisible

from .access import Action, can_edit_group, require
from .hooks import feedback_changed
from .models import (
    ComparableGroup,
    GoldPair,
    GroupEdit,
    Label,
    PairComment,
    PairJudgment,
    PairSkip,
    Source,
    Study,
    StudyCounter,
    canonical_pair,
)
from .selectors import gold_pair_exists, items_in_pool, progress_for, skipped_pairs_forget

MAX_ELAPSED_MS = 24 * 3600 * 1000
MAX_GROUP_NAME = 200
MAX_GROUP_SIZE = 5000


def _parse_uuid(value) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        raise InvalidInput("client_id must be a UUID.") from None


def _same_content(judgment: PairJudgment, *, study, annotator, pair, label) -> bool:
    return (
        judgment.study_id == study.pk
        and judgment.annotator_id == annotator.pk
        and (judgment.item_a_id, judgment.item_b_id) == pair
        and judgment.label == label
    )


def _replay(existing: PairJudgment, *, study, annotator, pair, label) -> PairJudgment:
    """A retry of an earlier request answers with the stored judgment; anything else conflicts."""
    if _same_content(existing, study=study, annotator=annotator, pair=pair, label=label):
        return existing
    raise Conflict(
        "This client_id was already used for a different answer; generate a new client_id "
        "for every new answer."
    )


def judgment_create(
    *,
    study: Study,
    annotator,
    item_a_id: int,
    item_b_id: int,
    label: str,
    client_id,
    elapsed_ms: int | None = None,
) -> tuple[PairJudgment, bool]:
    """Store one answer about a pair; returns ``(judgment, created)``.

    Idempotent on ``client_id``: a retry with the same content returns the stored judgment
    with ``created=False``; the same ``client_id`` with other content (another user, pair or
    label) raises :class:`Conflict`. The pair is stored canonically (``item_a_id <
    item_b_id``). Concurrent retries are settled by the unique constraint: the insert and the
    refit hook run in one transaction (a savepoint when the caller already holds one); a
    duplicate rolls it back and is answered from the stored row. The checks before it only
    read, so they need no transaction of their own (one BEGIN/COMMIT per answer, no savepoint).
    """
    client_id = _parse_uuid(client_id)
    if label not in Label.values:
        raise InvalidInput(f"label must be one of {', '.join(Label.values)}.")
    try:
        item_a_id, item_b_id = int(item_a_id), int(item_b_id)
    except (TypeError, ValueError):
        raise InvalidInput("item_a and item_b must be item ids.") from None
    if item_a_id == item_b_id:
        raise InvalidInput("item_a and item_b must be two different items.")
    pair = canonical_pair(item_a_id, item_b_id)

    # A replay answers with the stored row and its items: one query, joined.
    stored = PairJudgment.objects.select_related("item_a", "item_b", "annotator")
    existing = stored.filter(client_id=client_id).first()
    if existing is not None:
        return _replay(existing, study=study, annotator=annotator, pair=pair, label=label), False

    require(annotator, study, Action.VIEW)
    if not study.is_active:
        raise InvalidInput("This study is closed; it takes no more answers.")
    if study.mode == Study.Mode.GROUPS:
        raise InvalidInput("This study collects groups only, not pairs.")
    if study.stop_at_target and progress_for(study=study, user=annotator).complete:
        raise InvalidInput("You reached your target in this study; no more answers are needed.")
    valid_elapsed = isinstance(elapsed_ms, int) and 0 <= elapsed_ms <= MAX_ELAPSED_MS
    if elapsed_ms is not None and not valid_elapsed:
        raise InvalidInput(f"elapsed_ms must be an integer between 0 and {MAX_ELAPSED_MS}.")
    found = items_in_pool(study=study, item_ids=pair)
    missing = [i for i in pair if i not in found]
    if missing:
        raise InvalidInput(f"Item {missing[0]} does not exist or is not in this study's pool.")

    try:
        with transaction.atomic():  # a caller's outer transaction survives a duplicate
            judgment = PairJudgment.objects.create(
                study=study,
                item_a=found[pair[0]],  # the loaded items: the response needs no query
                item_b=found[pair[1]],
                label=label,
                annotator=annotator,
                source=Source.ANNOTATED,
                client_id=client_id,
                elapsed_ms=elapsed_ms,
                is_gold=gold_pair_exists(study=study, item_a_id=pair[0], item_b_id=pair[1]),
            )
            feedback_changed(study_id=study.pk)  # runs once the insert has committed
    except IntegrityError:
        existing = stored.filter(client_id=client_id).first()
        if existing is not None:  # a concurrent retry of the same request won the race
            return _replay(
                existing, study=study, annotator=annotator, pair=pair, label=label
            ), False
        raise Conflict(
            "You already answered this pair; undo that answer first to change it."
        ) from None
    return judgment, True


@transaction.atomic
def judgment_undo(
    *,
    user,
    study: Study | None = None,
    judgment_id: int | None = None,
    client_id=None,
) -> PairJudgment:
    """Delete one of the user's own judgments (by id or client_id); returns the deleted row."""
    if (judgment_id is None) == (client_id is None):
        raise InvalidInput("Give exactly one of judgment_id and client_id.")
    qs = PairJudgment.objects.select_for_update()
    if study is not None:
        qs = qs.filter(study=study)
    if judgment_id is not None:
        judgment = qs.filter(pk=judgment_id).first()
    else:
        judgment = qs.filter(client_id=_parse_uuid(client_id)).first()
    if judgment is None:
        raise NotFound("No such judgment.")
    if judgment.annotator_id != user.pk:
        raise NotAllowed("You can only undo your own answers.")
    study_id = judgment.study_id
    judgment_pk = judgment.pk
    judgment.delete()
    judgment.pk = judgment_pk
    feedback_changed(study_id=study_id)
    return judgment


@transaction.atomic
def gold_pair_set(*, study: Study, user, item_a_id: int, item_b_id: int, label: str) -> GoldPair:
    """Set (create or change) a gold pair's known answer; study admins only."""
    require(user, study, Action.MANAGE, "Only admins of the study set gold pairs.")
    if label not in (Label.COMPARABLE, Label.INCOMPARABLE):
        raise InvalidInput("A gold pair's label is comparable or incomparable.")
    if int(item_a_id) == int(item_b_id):
        raise InvalidInput("item_a and item_b must be two different items.")
    pair = canonical_pair(int(item_a_id), int(item_b_id))
    _pool_members(study, pair)
    gold, _ = GoldPair.objects.update_or_create(
        study=study, item_a_id=pair[0], item_b_id=pair[1], defaults={"label": label}
    )
    return gold


# --- Groups -----------------------------------------------------------------------------------


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
    found = items_in_pool(study=study, item_ids=ids)
    missing = [i for i in ids if i not in found]
    if missing:
        raise InvalidInput(f"Item {missing[0]} does not exist or is not in this study's pool.")
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


# --- Skips and comments on pairs (the labelling page's S and C keys) ----------------------------


def _pair_on_the_page(study: Study, user, item_a_id, item_b_id) -> tuple[int, int]:
    """The canonical pair, if ``user`` may label pairs in ``study`` and both items are in its
    pool (the checks of an answer, but the target: one may skip or comment at any time)."""
    require(user, study, Action.VIEW)
    if study.mode == Study.Mode.GROUPS:
        raise InvalidInput("This study collects groups only, not pairs.")
    try:
        item_a_id, item_b_id = int(item_a_id), int(item_b_id)
    except (TypeError, ValueError):
        raise InvalidInput("item_a and item_b must be item ids.") from None
    if item_a_id == item_b_id:
        raise InvalidInput("item_a and item_b must be two different items.")
    pair = canonical_pair(item_a_id, item_b_id)
    found = items_in_pool(study=study, item_ids=pair)
    missing = [i for i in pair if i not in found]
    if missing:
        raise InvalidInput(f"Item {missing[0]} does not exist or is not in this study's pool.")
    return pair


def pair_skip(*, study: Study, user, item_a_id: int, item_b_id: int) -> tuple[PairSkip, bool]:
    """Record that ``user`` passed on a pair: no answer, and the pair is not offered to them
    again. Idempotent per (study, user, pair); returns ``(skip, created)``."""
    pair = _pair_on_the_page(study, user, item_a_id, item_b_id)
    fields = {"study": study, "annotator": user, "item_a_id": pair[0], "item_b_id": pair[1]}
    try:
        with transaction.atomic():
            skip, created = PairSkip.objects.get_or_create(**fields)
    except IntegrityError:  # a concurrent retry stored it first
        skip, created = PairSkip.objects.get(**fields), False
    if created:
        skipped_pairs_forget(study=study, user=user)
    return skip, created


def pair_comment(
    *, study: Study, user, item_a_id: int, item_b_id: int, text: str, client_id
) -> tuple[PairComment, bool]:
    """A note on a pair for the study's reviewers; idempotent on ``client_id``."""
    client_id = _parse_uuid(client_id)
    pair = _pair_on_the_page(study, user, item_a_id, item_b_id)
    text = " ".join(str(text or "").split())
    if not text:
        raise InvalidInput("A comment needs some text.")
    if len(text) > PairComment.MAX_LENGTH:
        raise InvalidInput(f"A comment has at most {PairComment.MAX_LENGTH} characters.")
    existing = PairComment.objects.filter(client_id=client_id).first()
    if existing is None:
        try:
            with transaction.atomic():
                return PairComment.objects.create(
                    study=study,
                    author=user,
                    item_a_id=pair[0],
                    item_b_id=pair[1],
                    text=text,
                    client_id=client_id,
                ), True
        except IntegrityError:  # a concurrent retry stored it first
            existing = PairComment.objects.get(client_id=client_id)
    same = (existing.study_id, existing.author_id, existing.item_a_id, existing.item_b_id) == (
        study.pk,
        user.pk,
        *pair,
    )
    if not same or existing.text != text:
        raise Conflict("This client_id was already used for another comment.")
    return existing, False
