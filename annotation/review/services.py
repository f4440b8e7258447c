"""Writes of the adjudication page and API: a reviewer's decision on a pair, optionally also a
gold pair, and taking a decision back.

Every write calls :func:`annotation.hooks.feedback_changed` inside its transaction: the fit
reads adjudicated labels in place of the raw answers (``annotation/review/fit.py``), so a
decision is new data for the next refit. Each is in the audit log (``adjudication.set``,
``adjudication.remove``).
"""

from __future__ import annotations

from django.db import transaction

from annotation.access import Action, require
from annotation.events import study_event
from annotation.hooks import feedback_changed
from annotation.models import (
    Adjudication,
    GoldPair,
    Label,
    PairJudgment,
    Study,
    WebhookEvent,
    canonical_pair,
)
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.errors import InvalidInput, NotFound

DECISIONS = (Label.COMPARABLE, Label.INCOMPARABLE)
REFUSED = "Only reviewers and admins of this study can resolve disagreements."
REFUSED_REVIEW = "Only reviewers and admins of this study can review it."


def _answered_pair(study: Study, item_a_id: int, item_b_id: int) -> tuple[int, int]:
    if int(item_a_id) == int(item_b_id):
        raise InvalidInput("item_a and item_b must be two different items.")
    pair = canonical_pair(int(item_a_id), int(item_b_id))
    if not PairJudgment.objects.filter(study=study, item_a_id=pair[0], item_b_id=pair[1]).exists():
        raise InvalidInput("Nobody answered this pair in this study: there is nothing to resolve.")
    return pair


@transaction.atomic
def adjudicate(
    *, study: Study, user, item_a_id: int, item_b_id: int, label: str, gold: bool = False
) -> Adjudication:
    """Settle the pair on ``label`` (comparable or incomparable); reviewers and admins. A pair
    decided before gets the new decision (a new row). ``gold``: the pair also becomes a gold
    pair with that label — admins only, as every gold pair (``annotation.access``)."""
    require(user, study, Action.REVIEW, REFUSED)
    if label not in DECISIONS:
        raise InvalidInput("An adjudicated label is comparable or incomparable.")
    if gold:
        require(user, study, Action.MANAGE, "Only admins of the study set gold pairs.")
    Study.objects.select_for_update().filter(pk=study.pk).first()  # one decision at a time
    a, b = _answered_pair(study, item_a_id, item_b_id)
    Adjudication.objects.filter(study=study, item_a_id=a, item_b_id=b).delete()
    decision = Adjudication.objects.create(
        study=study, item_a_id=a, item_b_id=b, label=label, decided_by=user
    )
    if gold:  # the model's rule (same space) runs on save
        GoldPair.objects.update_or_create(
            study=study, item_a_id=a, item_b_id=b, defaults={"label": label}
        )
    audit_record(
        action=AuditAction.ADJUDICATION_SET,
        actor=user,
        target=decision,
        study_id=study.pk,
        detail={"item_a": a, "item_b": b, "label": label, "gold": gold},
    )
    feedback_changed(study_id=study.pk)
    study_event(
        study_id=study.pk,
        event=WebhookEvent.DISAGREEMENT_RESOLVED,
        data=lambda: {
            "item_a": decision.item_a.key,
            "item_b": decision.item_b.key,
            "label": label,
            "decided_by": user.get_username(),
            "gold": bool(gold),
        },
    )
    return decision


@transaction.atomic
def adjudication_remove(*, study: Study, user, item_a_id: int, item_b_id: int) -> None:
    """Take the pair's decision back: the fit reads its raw answers again."""
    require(user, study, Action.REVIEW, REFUSED)
    a, b = canonical_pair(int(item_a_id), int(item_b_id))
    deleted, _ = Adjudication.objects.filter(study=study, item_a_id=a, item_b_id=b).delete()
    if not deleted:
        raise NotFound("This pair has no adjudicated label.")
    audit_record(
        action=AuditAction.ADJUDICATION_REMOVE,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"item_a": a, "item_b": b},
    )
    feedback_changed(study_id=study.pk)
