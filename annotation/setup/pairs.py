"""Candidate and gold pairs: uploads by item keys (checked against the pool, previewed) and one
gold pair at a time (``gold_pair_set``)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q

from annotation.access import Action, require
from annotation.facts import study_changed
from annotation.models import CandidatePair, GoldPair, Label, Study, canonical_pair
from annotation.selectors import items_in_pool, not_in_pool, pool_items
from annotation.setup.files import PairRow
from annotation.setup.pool import items_by_key, unknown_keys
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.errors import InvalidInput
from spaces.models import Item


@dataclass(frozen=True)
class ResolvedPair:
    line: int
    item_a: Item
    item_b: Item
    label: str
    state: str = "new"  # new | changed | same (gold pairs already there)
    swapped: bool = False  # the file named item_b first (pairs are stored canonically)

    @property
    def keys(self) -> tuple[str, str]:
        """The two keys in the file's order (a preview shows what the file said)."""
        a, b = self.item_a.key, self.item_b.key
        return (b, a) if self.swapped else (a, b)


def pairs_resolve(*, study: Study, rows: list[PairRow]) -> list[ResolvedPair]:
    """Every key of every row checked against the study's pool; InvalidInput listing the
    unknown ones. Duplicate pairs: the last row wins. Pairs come out canonical."""
    keys = [k for row in rows for k in (row.key_a, row.key_b)]
    found = items_by_key(pool_items(study=study), keys)
    unknown = list(dict.fromkeys(k for k in keys if k not in found))
    if unknown:
        raise unknown_keys(unknown, "(not in this study's item pool)")
    pairs: dict[tuple[int, int], ResolvedPair] = {}
    for row in rows:
        a, b = found[row.key_a], found[row.key_b]
        if a.pk == b.pk:
            raise InvalidInput(f"Line {row.line}: a pair needs two different items.")
        swapped = a.pk > b.pk
        if swapped:
            a, b = b, a
        pairs[(a.pk, b.pk)] = ResolvedPair(row.line, a, b, row.label, swapped=swapped)
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
                resolved.line,
                resolved.item_a,
                resolved.item_b,
                resolved.label,
                state,
                resolved.swapped,
            )
        out.append(resolved)
    return out


@transaction.atomic
def candidate_pairs_upload(
    *, user, study: Study, rows: list[PairRow], replace: bool = False, priority: int = 0
) -> dict:
    """Store candidate pairs (all keys in the pool, else nothing); ``replace`` drops the old.
    ``priority``: offered before pairs of lower priority (pairs already there are raised to it)."""
    require(user, study, Action.MANAGE, "Only an admin of the study can change its pairs.")
    study = Study.objects.select_for_update().get(pk=study.pk)  # the current pool
    pairs = pairs_resolve(study=study, rows=rows)
    if replace:
        CandidatePair.objects.filter(study=study).delete()
    have = set(CandidatePair.objects.filter(study=study).values_list("item_a_id", "item_b_id"))
    new = [p for p in pairs if (p.item_a.pk, p.item_b.pk) not in have]
    CandidatePair.objects.bulk_create(
        [
            CandidatePair(study=study, item_a=p.item_a, item_b=p.item_b, priority=priority)
            for p in new
        ],
        batch_size=1000,
    )
    if priority:
        old = Q()
        for p in pairs:
            if (p.item_a.pk, p.item_b.pk) in have:
                old |= Q(item_a=p.item_a.pk, item_b=p.item_b.pk)
        if old:
            CandidatePair.objects.filter(old, study=study, priority__lt=priority).update(
                priority=priority
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


@transaction.atomic
def gold_pair_set(*, study: Study, user, item_a_id: int, item_b_id: int, label: str) -> GoldPair:
    """Set (create or change) a gold pair's known answer; study admins only."""
    require(user, study, Action.MANAGE, "Only admins of the study set gold pairs.")
    if label not in (Label.COMPARABLE, Label.INCOMPARABLE):
        raise InvalidInput("A gold pair's label is comparable or incomparable.")
    if int(item_a_id) == int(item_b_id):
        raise InvalidInput("item_a and item_b must be two different items.")
    pair = canonical_pair(int(item_a_id), int(item_b_id))
    refused = not_in_pool(pair, items_in_pool(study=study, item_ids=pair))
    if refused:
        raise InvalidInput(refused)
    gold, _ = GoldPair.objects.update_or_create(
        study=study, item_a_id=pair[0], item_b_id=pair[1], defaults={"label": label}
    )
    return gold
