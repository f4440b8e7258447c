"""Writes of answers: judgments (idempotent on ``client_id``), one or a batch, and undo.

Every write that changes the feedback calls :func:`annotation.hooks.feedback_changed` inside
its transaction; learning's receiver queues a refit once the write has committed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from annotation.access import Action, require
from annotation.events import target_reached_report
from annotation.facts import facts_for
from annotation.hooks import feedback_changed
from annotation.labelling.selectors import gold_pair_exists
from annotation.models import MAX_ELAPSED_MS, Label, PairJudgment, Source, Study, canonical_pair
from annotation.reasons import reasons_check, reasons_parse
from annotation.selectors import items_in_pool, not_in_pool, progress_for
from annotation.serializers import item_data
from common.errors import Conflict, InvalidInput, NotAllowed, NotFound
from spaces.models import attach_spaces


def parse_uuid(value) -> uuid.UUID:
    """A ``client_id`` as a UUID (InvalidInput when it is not one)."""
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


def _conflict_reuse() -> Conflict:
    return Conflict(
        "This client_id was already used for a different answer; generate a new client_id "
        "for every new answer."
    )


def _replay(existing: PairJudgment, *, study, annotator, pair, label) -> PairJudgment:
    """A retry of an earlier request answers with the stored judgment; anything else conflicts."""
    if _same_content(existing, study=study, annotator=annotator, pair=pair, label=label):
        return existing
    raise _conflict_reuse()


def two_items(item_a_id, item_b_id) -> tuple[int, int]:
    """Two different item ids, as their canonical pair (no query)."""
    try:
        item_a_id, item_b_id = int(item_a_id), int(item_b_id)
    except (TypeError, ValueError):
        raise InvalidInput("item_a and item_b must be item ids.") from None
    if item_a_id == item_b_id:
        raise InvalidInput("item_a and item_b must be two different items.")
    return canonical_pair(item_a_id, item_b_id)


def _answer_parse(*, label, item_a_id, item_b_id, elapsed_ms) -> tuple[int, int]:
    """One answer's own checks (no query); its canonical pair."""
    if label not in Label.values:
        raise InvalidInput(f"label must be one of {', '.join(Label.values)}.")
    pair = two_items(item_a_id, item_b_id)
    valid_elapsed = isinstance(elapsed_ms, int) and 0 <= elapsed_ms <= MAX_ELAPSED_MS
    if elapsed_ms is not None and not valid_elapsed:
        raise InvalidInput(f"elapsed_ms must be an integer between 0 and {MAX_ELAPSED_MS}.")
    return pair


def _study_takes_answers(study: Study, annotator) -> None:
    require(annotator, study, Action.VIEW)
    if not study.is_active:
        raise InvalidInput("This study is closed; it takes no more answers.")
    if study.mode == Study.Mode.GROUPS:
        raise InvalidInput("This study collects groups only, not pairs.")


TARGET_REACHED = "You reached your target in this study; no more answers are needed."
ALREADY_ANSWERED = "You already answered this pair; undo that answer first to change it."


def _is_gold(study: Study, pair) -> bool:
    facts = facts_for(study)
    if facts is None:
        return gold_pair_exists(study=study, item_a_id=pair[0], item_b_id=pair[1])
    return pair in facts.gold


def judgment_create(
    *,
    study: Study,
    annotator,
    item_a_id: int,
    item_b_id: int,
    label: str,
    client_id,
    elapsed_ms: int | None = None,
    served: dict[int, dict] | None = None,
    reasons: list[str] | None = None,
) -> tuple[PairJudgment, bool]:
    """Store one answer about a pair; returns ``(judgment, created)``.

    ``served``: the pair's two items as the annotator's pair queue served them
    (``pair_queue.served_items``): chosen from the study's pool as it is now, so they are not
    read again (the created judgment then carries item ids only).

    Idempotent on ``client_id``: a retry with the same content returns the stored judgment
    with ``created=False``; the same ``client_id`` with other content (another user, pair or
    label) raises :class:`Conflict`. The pair is stored canonically (``item_a_id <
    item_b_id``). The insert comes first: a retry (rare) hits the unique constraint, which
    rolls back the insert and the refit hook (one transaction, a savepoint when the caller
    already holds one), and is answered from the stored row. So a new answer costs the pool
    check of its items, the insert and the hook's read; the study, the role and the gold pairs
    come from the cache (``annotation/facts.py``).

    ``reasons``: the fields that decided the answer (``annotation/reasons.py``),
    checked against the pair's records; a retry is answered from the stored row as above.
    """
    client_id = parse_uuid(client_id)
    pair = _answer_parse(
        label=label, item_a_id=item_a_id, item_b_id=item_b_id, elapsed_ms=elapsed_ms
    )
    reasons = reasons_parse(reasons)
    stored = PairJudgment.objects.select_related("item_a", "item_b", "annotator")
    try:
        _study_takes_answers(study, annotator)
        if study.stop_at_target and progress_for(study=study, user=annotator).complete:
            raise InvalidInput(TARGET_REACHED)
    except InvalidInput:
        existing = stored.filter(client_id=client_id).first()  # a retry of an earlier answer
        if existing is not None:
            return _replay(
                existing, study=study, annotator=annotator, pair=pair, label=label
            ), False
        raise
    if served is not None and set(served) == set(pair):
        items = {"item_a_id": pair[0], "item_b_id": pair[1]}
        shown = served
    else:
        found = items_in_pool(study=study, item_ids=pair)
        refused = not_in_pool(pair, found)
        if refused:
            raise InvalidInput(refused)
        items = {"item_a": found[pair[0]], "item_b": found[pair[1]]}  # the response: no query
        shown = None
    if reasons:
        if shown is None:
            attach_spaces(list(found.values()))
            shown = {i: item_data(found[i]) for i in pair}
        reasons_check(reasons, label=label, left=shown[pair[0]], right=shown[pair[1]])

    try:
        with transaction.atomic():  # a caller's outer transaction survives a duplicate
            judgment = PairJudgment.objects.create(
                study=study,
                **items,
                label=label,
                annotator=annotator,
                source=Source.ANNOTATED,
                client_id=client_id,
                elapsed_ms=elapsed_ms,
                is_gold=_is_gold(study, pair),
                reasons=reasons,
            )
            feedback_changed(study_id=study.pk)  # runs once the insert has committed
            target_reached_report(study=study, annotator=annotator, added=1)
    except IntegrityError:
        existing = stored.filter(client_id=client_id).first()
        if existing is not None:  # a retry, or a concurrent retry that won the race
            return _replay(
                existing, study=study, annotator=annotator, pair=pair, label=label
            ), False
        raise Conflict(ALREADY_ANSWERED) from None
    return judgment, True


def _reasons_refusal(answer: dict, pair, found) -> str | None:
    """Why a batch answer's reasons are refused (its items in ``found``), or None."""
    reasons = answer.get("reasons") or []
    if not reasons:
        return None
    left, right = item_data(found[pair[0]]), item_data(found[pair[1]])
    try:
        reasons_check(reasons, label=answer.get("label"), left=left, right=right)
    except InvalidInput as error:
        return error.message
    return None


@dataclass
class BatchResult:
    """One answer of a batch: ``created``, ``duplicate`` (a retry: the stored answer), or
    ``error`` with the reason (nothing stored for it)."""

    client_id: str
    status: str
    judgment: PairJudgment | None = None
    detail: str = ""


def judgments_create_batch(*, study: Study, annotator, answers: list[dict]) -> list[BatchResult]:
    """Store many answers at once, each on its own: one answer's error never stops another.

    Each answer is what :func:`judgment_create` takes (``item_a``, ``item_b``, ``label``,
    ``client_id``, optional ``elapsed_ms``) and is idempotent on its ``client_id`` as there. The
    whole batch costs the replay lookup, the pool check of all items, one ``INSERT … ON
    CONFLICT DO NOTHING`` of the new rows, the read-back of the stored rows and the refit
    hook, whatever its size. An answer whose insert conflicts (the same pair answered before,
    or a concurrent retry) is settled from the stored rows like a single answer.
    """
    try:
        _study_takes_answers(study, annotator)
        closed = None
    except InvalidInput as error:  # only retries of stored answers are answered
        closed = error.message
    results: list[BatchResult | None] = [None] * len(answers)
    parsed: dict[int, tuple[uuid.UUID, tuple[int, int]]] = {}
    for n, answer in enumerate(answers):
        raw_id = str(answer.get("client_id", ""))
        try:
            client_id = parse_uuid(answer.get("client_id"))
            pair = _answer_parse(
                label=answer.get("label"),
                item_a_id=answer.get("item_a"),
                item_b_id=answer.get("item_b"),
                elapsed_ms=answer.get("elapsed_ms"),
            )
            reasons_parse(answer.get("reasons"))
        except InvalidInput as error:
            results[n] = BatchResult(raw_id, "error", detail=error.message)
            continue
        parsed[n] = (client_id, pair)

    stored = PairJudgment.objects.select_related("item_a", "item_b", "annotator")
    client_ids = {cid for cid, _ in parsed.values()}
    before = {j.client_id: j for j in stored.filter(client_id__in=client_ids)}
    found = items_in_pool(study=study, item_ids={i for _, p in parsed.values() for i in p})
    if any(answers[n].get("reasons") for n in parsed):
        attach_spaces(list(found.values()))
    room = None
    if study.stop_at_target and closed is None:
        progress = progress_for(study=study, user=annotator)
        room = max(0, progress.target - progress.answered)

    new: dict[uuid.UUID, PairJudgment] = {}
    first_of: dict[uuid.UUID, int] = {}
    for n, (client_id, pair) in parsed.items():
        answer = answers[n]
        if client_id in before or client_id in first_of:
            continue  # settled below from the stored row
        refused = closed or not_in_pool(pair, found) or _reasons_refusal(answer, pair, found)
        if refused is None and room is not None:
            refused = TARGET_REACHED if room <= 0 else None
            room -= 1
        if refused:
            results[n] = BatchResult(str(client_id), "error", detail=refused)
            continue
        first_of[client_id] = n
        new[client_id] = PairJudgment(
            study=study,
            item_a=found[pair[0]],
            item_b=found[pair[1]],
            label=answer["label"],
            annotator=annotator,
            source=Source.ANNOTATED,
            client_id=client_id,
            elapsed_ms=answer.get("elapsed_ms"),
            is_gold=_is_gold(study, pair),
            reasons=list(answer.get("reasons") or []),
        )
    after = dict(before)
    if new:
        with transaction.atomic():
            PairJudgment.objects.bulk_create(list(new.values()), ignore_conflicts=True)
            after.update({j.client_id: j for j in stored.filter(client_id__in=list(new))})
            added = sum(1 for cid in after if cid not in before)
            if added:
                feedback_changed(study_id=study.pk)
                target_reached_report(study=study, annotator=annotator, added=added)
    for n, (client_id, pair) in parsed.items():
        if results[n] is not None:
            continue
        row = after.get(client_id)
        mine_now = client_id in new and first_of[client_id] == n
        if row is None:  # the pair was answered before under another client_id
            results[n] = BatchResult(str(client_id), "error", detail=ALREADY_ANSWERED)
            continue
        label = answers[n]["label"]
        if not _same_content(row, study=study, annotator=annotator, pair=pair, label=label):
            results[n] = BatchResult(str(client_id), "error", detail=_conflict_reuse().message)
            continue
        status = "created" if mine_now and client_id not in before else "duplicate"
        results[n] = BatchResult(str(client_id), status, judgment=row)
    return [r for r in results if r is not None]


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
        judgment = qs.filter(client_id=parse_uuid(client_id)).first()
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
