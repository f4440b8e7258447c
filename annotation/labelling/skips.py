"""Skips and comments on pairs (the labelling page's S and C keys): neither is an answer.

A skipped pair is never offered to that annotator again; a comment is a short note for the
study's reviewers (the review page).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotation.access import Action, require
from annotation.labelling import pair_queue
from annotation.labelling.selectors import skipped_pairs_forget
from annotation.labelling.services import parse_uuid, two_items
from annotation.models import PairComment, PairSkip, Study
from annotation.selectors import items_in_pool, not_in_pool
from common.errors import Conflict, InvalidInput


def _pair_on_the_page(study: Study, user, item_a_id, item_b_id) -> tuple[int, int]:
    """The canonical pair, if ``user`` may label pairs in ``study`` and both items are in its
    pool (the checks of an answer, but the target: one may skip or comment at any time)."""
    require(user, study, Action.VIEW)
    if study.mode == Study.Mode.GROUPS:
        raise InvalidInput("This study collects groups only, not pairs.")
    pair = two_items(item_a_id, item_b_id)
    refused = not_in_pool(pair, items_in_pool(study=study, item_ids=pair))
    if refused:
        raise InvalidInput(refused)
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
        pair_queue.forget(study_id=study.pk, user_id=user.pk)
    return skip, created


def pair_comment(
    *, study: Study, user, item_a_id: int, item_b_id: int, text: str, client_id
) -> tuple[PairComment, bool]:
    """A note on a pair for the study's reviewers; idempotent on ``client_id``."""
    client_id = parse_uuid(client_id)
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
