"""Member attributes (cohorts): the study's admins define them (a name and its values, and
whether to ask each member once on their first visit), give members their values (the members
page, the set-up API's ``attributes``), and members answer the attributes they are asked once.
Only the study's admins read a member's values; a member never sees another's. Definitions are
audited as study changes, values as membership changes (``member_audit.py``)."""

from __future__ import annotations

from django.db import transaction

from annotation.access import Action, require
from annotation.models import (
    MAX_ATTRIBUTES,
    MAX_NAME,
    MAX_VALUES,
    MemberAttribute,
    Membership,
    Study,
)
from annotation.models.cohorts import attributes_to_ask
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.errors import InvalidInput, NotAllowed
from common.text import text_problem

ONLY_ADMINS = "Only an admin of the study can change member attributes."


def _word(value, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{what} is text.")
    value = " ".join(value.split())
    problem = text_problem(value)
    if problem:
        raise InvalidInput(f"{what} {problem}.")
    if not value:
        raise InvalidInput(f"{what} is empty.")
    if len(value) > MAX_NAME:
        raise InvalidInput(f"{what} is at most {MAX_NAME} characters.")
    return value


def values_parse(values) -> list[str]:
    """The values of an attribute: a list, or text separated by commas; distinct, in order."""
    if isinstance(values, str):
        values = [v for v in values.split(",") if v.strip()]
    if not isinstance(values, list | tuple):
        raise InvalidInput("The values are a list (or text separated by commas).")
    found: list[str] = []
    for value in values:
        value = _word(value, "A value")
        if value not in found:
            found.append(value)
    if len(found) < 2:
        raise InvalidInput("An attribute needs at least two values.")
    if len(found) > MAX_VALUES:
        raise InvalidInput(f"An attribute has at most {MAX_VALUES} values.")
    return found


@transaction.atomic
def attribute_define(*, user, study: Study, name, values, ask: bool = False) -> MemberAttribute:
    """Define an attribute, or change the values and the question of an existing one (members
    whose value is no longer allowed lose it)."""
    require(user, study, Action.MANAGE, ONLY_ADMINS)
    name, values = _word(name, "The attribute's name"), values_parse(values)
    attribute = MemberAttribute.objects.select_for_update().filter(study=study, name=name).first()
    if attribute is None:
        if MemberAttribute.objects.filter(study=study).count() >= MAX_ATTRIBUTES:
            raise InvalidInput(f"A study has at most {MAX_ATTRIBUTES} member attributes.")
        attribute = MemberAttribute.objects.create(
            study=study, name=name, values=values, ask=bool(ask)
        )
    else:
        attribute.values, attribute.ask = values, bool(ask)
        attribute.save(update_fields=["values", "ask"])
        for membership in Membership.objects.select_for_update().filter(study=study):
            if (membership.attributes or {}).get(name) not in (None, *values):
                membership.attributes = {
                    k: v for k, v in membership.attributes.items() if k != name
                }
                membership.save(update_fields=["attributes"])
    audit_record(
        action=AuditAction.STUDY_CHANGE,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"member_attribute": name, "values": values, "ask": bool(ask)},
    )
    return attribute


@transaction.atomic
def attribute_delete(*, user, study: Study, name: str) -> None:
    """Remove an attribute and every member's value of it."""
    require(user, study, Action.MANAGE, ONLY_ADMINS)
    deleted, _ = MemberAttribute.objects.filter(study=study, name=name).delete()
    if not deleted:
        raise InvalidInput(f"The study has no member attribute {name!r}.")
    for membership in Membership.objects.select_for_update().filter(study=study):
        if name in (membership.attributes or {}):
            membership.attributes = {k: v for k, v in membership.attributes.items() if k != name}
            membership.save(update_fields=["attributes"])
    audit_record(
        action=AuditAction.STUDY_CHANGE,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"member_attribute": name, "deleted": True},
    )


def attributes_checked(study_id: int, sent, *, only=None) -> dict:
    """``sent`` ({name: value}; a value of None or "" clears it) checked against the study's
    attributes (``only``: the names that may be set); the changes as {name: value or None}."""
    if not isinstance(sent, dict):
        raise InvalidInput("attributes is an object of {attribute: value}.")
    known = {a.name: a for a in MemberAttribute.objects.filter(study_id=study_id)}
    changes: dict[str, str | None] = {}
    for name, value in sent.items():
        attribute = known.get(name)
        if attribute is None or (only is not None and name not in only):
            raise InvalidInput(f"The study has no member attribute {name!r} to set.")
        if value in (None, ""):
            changes[name] = None
        elif value not in attribute.values:
            allowed = ", ".join(attribute.values)
            raise InvalidInput(f"{name} is one of {allowed} (not {value!r}).")
        else:
            changes[name] = value
    return changes


def _apply(membership: Membership, changes: dict) -> Membership:
    values = dict(membership.attributes or {})
    for name, value in changes.items():
        if value is None:
            values.pop(name, None)
        else:
            values[name] = value
    if values != (membership.attributes or {}):
        membership.attributes = values
        membership.save(update_fields=["attributes"])
    return membership


@transaction.atomic
def member_attributes_set(*, user, membership: Membership, attributes) -> Membership:
    """An admin gives a member values (``attributes_checked``)."""
    require(user, membership.study_id, Action.MANAGE, ONLY_ADMINS)
    changes = attributes_checked(membership.study_id, attributes)
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    return _apply(membership, changes)


@transaction.atomic
def own_attributes_answer(*, user, study: Study, answers) -> Membership:
    """A member answers the attributes they are asked (once: a value given is not changed
    here; admins change it on the members page)."""
    require(user, study, Action.VIEW)
    membership = Membership.objects.select_for_update().filter(study=study, user=user).first()
    if membership is None:
        raise NotAllowed("Only the study's members answer its questions.")
    asked = {a.name for a in attributes_to_ask(study.pk, membership.attributes)}
    changes = attributes_checked(study.pk, answers, only=asked)
    return _apply(membership, {k: v for k, v in changes.items() if v is not None})


def study_attributes(*, study: Study) -> list[MemberAttribute]:
    return list(MemberAttribute.objects.filter(study=study))
