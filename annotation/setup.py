"""Writes of study set-up: settings, duplicate, archive, item pool, candidate and gold pairs,
members and invitations. Study admins for their studies, staff for all (``annotation.access``);
new studies: staff. Every write is one transaction, audited, and changes nothing on an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from accounts.invitations import find_user, invitation_path, invited_account_create
from annotation.access import Action, require
from annotation.facts import study_changed
from annotation.models import CandidatePair, GoldPair, Membership, PairJudgment, Study
from annotation.selectors import pool_items
from annotation.setup_files import PairRow
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.access import is_staff, require_staff
from common.errors import Conflict, InvalidInput, NotAllowed
from common.iterables import batched
from spaces.models import Item

Role = Membership.Role
SHOWN_UNKNOWN = 20
# The settings a study form edits (and a duplicate copies).
STUDY_FIELDS = [
    "name",
    "instructions",
    "mode",
    "space",
    "pool",
    "strategy",
    "overlap",
    "gold_rate",
    "target_per_annotator",
    "stop_at_target",
    "is_active",
]


def _unknown(keys: list[str], what: str) -> InvalidInput:
    shown = ", ".join(repr(k) for k in keys[:SHOWN_UNKNOWN])
    more = f" and {len(keys) - SHOWN_UNKNOWN} more" if len(keys) > SHOWN_UNKNOWN else ""
    return InvalidInput(f"{len(keys)} unknown key(s) {what}: {shown}{more}. Nothing was changed.")


def _check_settings(data: dict) -> None:
    if not str(data.get("name") or "").strip():
        raise InvalidInput("A study needs a name.")
    if not 0 <= float(data.get("gold_rate", 0)) <= 1:
        raise InvalidInput("The gold rate is between 0 and 1.")
    if int(data.get("overlap", 1)) < 1:
        raise InvalidInput("Overlap k is at least 1.")
    if int(data.get("target_per_annotator", 1)) < 1:
        raise InvalidInput("The target is at least 1 answer.")
    if data.get("pool") == Study.Pool.TAGS and not data.get("tags"):
        raise InvalidInput("Choose at least one tag for a pool of items with given tags.")


def _has_data(study: Study) -> bool:
    return (
        PairJudgment.objects.filter(study=study).exists()
        or study.groups.exists()
        or GoldPair.objects.filter(study=study).exists()
        or CandidatePair.objects.filter(study=study).exists()
        or study.pool_keys.exists()
    )


def _snapshot(study: Study) -> dict:
    values = {f: getattr(study, f) for f in STUDY_FIELDS if f != "space"}
    values["space"] = study.space_id
    values["tags"] = sorted(study.pool_tags.values_list("name", flat=True)) if study.pk else []
    return values


@transaction.atomic
def study_save(*, user, data: dict, study: Study | None = None) -> Study:
    """Create (staff) or change (the study's admins) a study from a form's cleaned data:
    ``STUDY_FIELDS`` plus ``tags`` (Tag objects, for the ``tags`` pool). The space of a study
    that already has answers, groups, gold or candidate pairs or a key list cannot change."""
    _check_settings(data)
    tags = list(data.get("tags") or [])
    if study is None:
        require_staff(user, "Only staff create studies.")
        before = None
        study = Study()
    else:
        require(user, study, Action.MANAGE, "Only an admin of the study can change it.")
        study = Study.objects.select_for_update().get(pk=study.pk)
        before = _snapshot(study)
        if data["space"].pk != study.space_id and _has_data(study):
            raise InvalidInput(
                "The embedding space cannot change: the study already has items, pairs or answers "
                "on its space. Duplicate the study instead."
            )
    for field in STUDY_FIELDS:
        setattr(study, field, data[field])
    if study.archived_at is not None and study.is_active:
        raise InvalidInput("An archived study stays closed; restore it first.")
    if Study.objects.filter(name=study.name).exclude(pk=study.pk).exists():
        raise Conflict(f"A study named {study.name!r} already exists.")
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError:
        raise Conflict(f"A study named {study.name!r} already exists.") from None
    study.pool_tags.set(tags if study.pool == Study.Pool.TAGS else [])
    after = _snapshot(study)
    if before is None:
        audit_record(
            action=AuditAction.STUDY_CREATE,
            actor=user,
            target=study,
            study_id=study.pk,
            detail={"settings": _jsonable(after)},
        )
    else:
        changes = {
            k: [_jsonable(before[k]), _jsonable(after[k])] for k in after if before[k] != after[k]
        }
        if changes:
            if "pool" in changes or "tags" in changes or "space" in changes:
                Study.objects.filter(pk=study.pk).update(pool_revision=F("pool_revision") + 1)
            audit_record(
                action=AuditAction.STUDY_CHANGE,
                actor=user,
                target=study,
                study_id=study.pk,
                detail={"changes": changes},
            )
    study.refresh_from_db()
    return study


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)


@transaction.atomic
def study_duplicate(*, user, study: Study, name: str) -> Study:
    """A new, open study with the same settings, pool, gold and candidate pairs; no answers,
    groups or members (the duplicating admin becomes its admin)."""
    require(user, study, Action.MANAGE, "Only an admin of the study can duplicate it.")
    name = (name or "").strip()
    if not name:
        raise InvalidInput("The copy needs a name.")
    if len(name) > 200:
        raise InvalidInput("A study name has at most 200 characters.")
    if Study.objects.filter(name=name).exists():
        raise Conflict(f"A study named {name!r} already exists.")
    copy = Study.objects.create(
        **{f: getattr(study, f) for f in STUDY_FIELDS if f not in ("name", "is_active")},
        name=name,
        is_active=True,
    )
    copy.pool_tags.set(study.pool_tags.all())
    copy.pool_keys.set(study.pool_keys.all())
    GoldPair.objects.bulk_create(
        GoldPair(study=copy, item_a_id=a, item_b_id=b, label=label)
        for a, b, label in study.gold_pairs.values_list("item_a_id", "item_b_id", "label")
    )
    CandidatePair.objects.bulk_create(
        CandidatePair(study=copy, item_a_id=a, item_b_id=b)
        for a, b in study.candidate_pairs.values_list("item_a_id", "item_b_id")
    )
    if not is_staff(user):
        Membership.objects.create(study=copy, user=user, role=Role.ADMIN)
    audit_record(
        action=AuditAction.STUDY_CREATE,
        actor=user,
        target=copy,
        study_id=copy.pk,
        detail={"duplicate_of": study.pk},
    )
    return copy


@transaction.atomic
def study_archive(*, user, study: Study, archive: bool) -> Study:
    """Archive (closed, off the study lists; data kept) or restore (listed again, still closed)."""
    require(user, study, Action.MANAGE, "Only an admin of the study can archive it.")
    study = Study.objects.select_for_update().get(pk=study.pk)
    if archive == (study.archived_at is not None):
        return study
    study.archived_at = timezone.now() if archive else None
    if archive:
        study.is_active = False
    study.save(update_fields=["archived_at", "is_active"])
    audit_record(
        action=AuditAction.STUDY_ARCHIVE,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"archived": archive},
    )
    return study


# --- Items and pairs ----------------------------------------------------------------------------


def _items_by_key(queryset, keys) -> dict[str, Item]:
    found: dict[str, Item] = {}
    for chunk in batched(list(dict.fromkeys(keys)), 500):
        found.update({item.key: item for item in queryset.filter(key__in=chunk)})
    return found


@transaction.atomic
def pool_upload(*, user, study: Study, keys: list[str], replace: bool = False) -> dict:
    """Define (``replace``) or extend the study's item pool by item keys of its space.

    Unknown keys are all listed and nothing changes. The study's pool becomes ``keys``. A
    replacement may not drop items of gold or candidate pairs."""
    require(user, study, Action.MANAGE, "Only an admin of the study can change its items.")
    study = Study.objects.select_for_update().select_related("space").get(pk=study.pk)
    found = _items_by_key(Item.objects.filter(space_id=study.space_id), keys)
    unknown = [k for k in keys if k not in found]
    if unknown:
        raise _unknown(unknown, f"(not in the space {study.space.name!r})")
    ids = {item.pk for item in found.values()}
    through = Study.pool_keys.through
    already = set()
    if study.pool == Study.Pool.KEYS and not replace:
        already = set(through.objects.filter(study_id=study.pk).values_list("item_id", flat=True))
    if replace or study.pool != Study.Pool.KEYS:
        needed = _paired_items(study)
        dropped = needed - ids
        if dropped:
            keys_dropped = sorted(Item.objects.filter(pk__in=dropped).values_list("key", flat=True))
            raise InvalidInput(
                f"{len(keys_dropped)} item(s) of gold or candidate pairs would leave the pool: "
                f"{', '.join(keys_dropped[:SHOWN_UNKNOWN])}. Nothing was changed."
            )
        through.objects.filter(study_id=study.pk).delete()
    new = ids - already
    through.objects.bulk_create(
        [through(study_id=study.pk, item_id=i) for i in sorted(new)], batch_size=1000
    )
    study.pool = Study.Pool.KEYS
    study.pool_revision = F("pool_revision") + 1
    study.save(update_fields=["pool", "pool_revision"])
    study.pool_tags.clear()
    size = through.objects.filter(study_id=study.pk).count()
    audit_record(
        action=AuditAction.STUDY_POOL,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"keys": len(keys), "added": len(new), "replace": replace, "pool": size},
    )
    return {"keys": len(keys), "added": len(new), "pool": size}


def _paired_items(study: Study) -> set[int]:
    ids: set[int] = set()
    for model in (GoldPair, CandidatePair):
        for a, b in model.objects.filter(study=study).values_list("item_a_id", "item_b_id"):
            ids.update((a, b))
    return ids


@dataclass(frozen=True)
class ResolvedPair:
    line: int
    item_a: Item
    item_b: Item
    label: str
    state: str = "new"  # new | changed | same (gold pairs already there)


def pairs_resolve(*, study: Study, rows: list[PairRow]) -> list[ResolvedPair]:
    """Every key of every row checked against the study's pool; InvalidInput listing the
    unknown ones. Duplicate pairs: the last row wins. Pairs come out canonical."""
    keys = [k for row in rows for k in (row.key_a, row.key_b)]
    found = _items_by_key(pool_items(study=study), keys)
    unknown = list(dict.fromkeys(k for k in keys if k not in found))
    if unknown:
        raise _unknown(unknown, "(not in this study's item pool)")
    pairs: dict[tuple[int, int], ResolvedPair] = {}
    for row in rows:
        a, b = found[row.key_a], found[row.key_b]
        if a.pk == b.pk:
            raise InvalidInput(f"Line {row.line}: a pair needs two different items.")
        if a.pk > b.pk:
            a, b = b, a
        pairs[(a.pk, b.pk)] = ResolvedPair(row.line, a, b, row.label)
    existing = {
        (a, b): label
        for a, b, label in GoldPair.objects.filter(study=study).values_list(
            "item_a_id", "item_b_id", "label"
        )
    }
    out = []
    for pair, resolved in pairs.items():
        if pair in existing:
            state = "same" if existing[pair] == resolved.label else "changed"
            resolved = ResolvedPair(
                resolved.line, resolved.item_a, resolved.item_b, resolved.label, state
            )
        out.append(resolved)
    return out


@transaction.atomic
def candidate_pairs_upload(
    *, user, study: Study, rows: list[PairRow], replace: bool = False
) -> dict:
    """Store candidate pairs (all keys in the pool, else nothing); ``replace`` drops the old."""
    require(user, study, Action.MANAGE, "Only an admin of the study can change its pairs.")
    study = Study.objects.select_for_update().get(pk=study.pk)  # the current pool
    pairs = pairs_resolve(study=study, rows=rows)
    if replace:
        CandidatePair.objects.filter(study=study).delete()
    have = set(CandidatePair.objects.filter(study=study).values_list("item_a_id", "item_b_id"))
    new = [p for p in pairs if (p.item_a.pk, p.item_b.pk) not in have]
    CandidatePair.objects.bulk_create(
        [CandidatePair(study=study, item_a=p.item_a, item_b=p.item_b) for p in new],
        batch_size=1000,
    )
    study_changed(study.pk)  # bulk writes send no signals: the pair queues choose again
    total = CandidatePair.objects.filter(study=study).count()
    audit_record(
        action=AuditAction.STUDY_PAIRS,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"rows": len(rows), "added": len(new), "replace": replace, "total": total},
    )
    return {"rows": len(rows), "added": len(new), "total": total}


@transaction.atomic
def gold_pairs_upload(*, user, study: Study, rows: list[PairRow]) -> dict:
    """Create or relabel gold pairs (all keys in the pool, else nothing)."""
    require(user, study, Action.MANAGE, "Only admins of the study set gold pairs.")
    study = Study.objects.select_for_update().get(pk=study.pk)  # the current pool
    pairs = pairs_resolve(study=study, rows=rows)
    new = [p for p in pairs if p.state == "new"]
    changed = [p for p in pairs if p.state == "changed"]
    for pair in new:  # the model's rule runs on every save (space, pool)
        gold = GoldPair(study=study, item_a=pair.item_a, item_b=pair.item_b, label=pair.label)
        try:
            gold.full_clean(validate_unique=False, validate_constraints=False)
        except ValidationError as error:
            raise InvalidInput(f"Line {pair.line}: {' '.join(error.messages)}") from None
    GoldPair.objects.bulk_create(
        [GoldPair(study=study, item_a=p.item_a, item_b=p.item_b, label=p.label) for p in new]
    )
    for pair in changed:
        GoldPair.objects.filter(study=study, item_a=pair.item_a, item_b=pair.item_b).update(
            label=pair.label
        )
    study_changed(study.pk)  # bulk writes send no signals: the cached gold pairs
    audit_record(
        action=AuditAction.STUDY_GOLD,
        actor=user,
        target=study,
        study_id=study.pk,
        detail={"rows": len(rows), "added": len(new), "relabelled": len(changed)},
    )
    return {"rows": len(rows), "added": len(new), "relabelled": len(changed)}


# --- Members ------------------------------------------------------------------------------------


def _role(role: str) -> str:
    if role not in Role.values:
        raise InvalidInput(f"The role is one of {', '.join(Role.values)}.")
    return role


def _target(target) -> int | None:
    if target in (None, ""):
        return None
    try:
        target = int(target)
    except (TypeError, ValueError):
        raise InvalidInput("The target is a whole number of answers.") from None
    if target < 1:
        raise InvalidInput("The target is at least 1 answer.")
    return target


@transaction.atomic
def member_add(*, user, study: Study, who: str, role: str, target=None) -> Membership:
    """Add an existing person (by username or e-mail) with a role."""
    require(user, study, Action.MANAGE, "Only an admin of the study can add members.")
    role, target = _role(role), _target(target)
    person = find_user(who)
    if person is None:
        raise InvalidInput(f"Nobody is called {who.strip()!r}; invite them instead.")
    if Membership.objects.filter(study=study, user=person).exists():
        raise Conflict(f"{person.username} is already a member of this study.")
    return Membership.objects.create(study=study, user=person, role=role, target=target)


@dataclass(frozen=True)
class Invitation:
    membership: Membership
    path: str  # the invitation link's path (uidb64/token)
    emailed: bool
    email_error: str = ""


@transaction.atomic
def member_invite(
    *, user, study: Study, username: str, email: str, role: str, link_for, target=None
) -> Invitation:
    """Create an account without a password, make it a member, and e-mail the invitation link
    (``link_for(uidb64, token)`` → absolute URL) when an address is given."""
    require(user, study, Action.MANAGE, "Only an admin of the study can invite people.")
    role, target = _role(role), _target(target)
    username, email = (username or "").strip(), (email or "").strip()
    person = invited_account_create(username=username, email=email)
    membership = Membership.objects.create(study=study, user=person, role=role, target=target)
    uid, token = invitation_path(person)
    link = link_for(uid, token)
    audit_record(
        action=AuditAction.MEMBERSHIP_INVITE,
        actor=user,
        target=membership,
        study_id=study.pk,
        detail={"user_id": person.pk, "username": username, "role": role, "emailed": bool(email)},
    )
    emailed, problem = False, ""
    if email:
        try:
            send_mail(
                subject=f"You are invited to the study {study.name!r} on fairmetric",
                message=(
                    f"{user.get_username()} invited you to take part in {study.name!r} as "
                    f"{role}.\n\nChoose your password here (the link works once, for "
                    f"{settings.INVITATION_DAYS} days):\n{link}\n\nYour username: {username}\n"
                ),
                from_email=settings.DEFAULT_FROM_EMAIL,
                recipient_list=[email],
            )
            emailed = True
        except (OSError, ValueError) as error:  # SMTP down: the admin still has the link
            problem = str(error)[:200]
    return Invitation(membership, link, emailed, problem)


def _other_admins(membership: Membership) -> bool:
    return (
        Membership.objects.filter(study_id=membership.study_id, role=Role.ADMIN)
        .exclude(pk=membership.pk)
        .exists()
    )


@transaction.atomic
def member_change(*, user, membership: Membership, role: str, target=None) -> Membership:
    """Change a member's role and target override (empty target: the study's)."""
    require(user, membership.study_id, Action.MANAGE, "Only an admin of the study can do this.")
    role, target = _role(role), _target(target)
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    if (
        membership.user_id == user.pk
        and membership.role == Role.ADMIN
        and role != Role.ADMIN
        and not is_staff(user)
        and not _other_admins(membership)
    ):
        raise NotAllowed("You are the study's only admin; make someone else admin first.")
    membership.role, membership.target = role, target
    membership.save(update_fields=["role", "target"])
    return membership


@transaction.atomic
def member_remove(*, user, membership: Membership) -> None:
    """Remove a member; their answers and groups stay in the study."""
    require(user, membership.study_id, Action.MANAGE, "Only an admin of the study can do this.")
    if membership.user_id == user.pk and not is_staff(user) and not _other_admins(membership):
        raise NotAllowed("You are the study's only admin; make someone else admin first.")
    membership.delete()


def memberships_of(study: Study, pk) -> Membership:
    """A membership of the study by id (NotFound-free: None)."""
    return Membership.objects.filter(study=study, pk=pk).select_related("user").first()
