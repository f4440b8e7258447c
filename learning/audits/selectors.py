"""Reads of the audit room: a study's audits, an audit's violations filtered and paged, the
annotators' answers on them, and what two audits share.

A violation the annotators answered is **confirmed** when more of them said "comparable" (the
people the metric learned from agree the pair should be treated alike: the model's gap is a
real violation) and **disowned** when more said "incomparable" (the metric was wrong to call
them close: the next version learns that, as from any answer); otherwise undecided.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db.models import Q, QuerySet, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from annotation.models import PairJudgment, Study
from common.errors import InvalidInput, NotFound
from learning.models import AuditViolation, MetricVersion, ModelAudit
from spaces.models import first_record

PAGE_SIZE = 50
VERDICTS = ("confirmed", "disowned", "undecided")


def study_audits(*, study: Study) -> QuerySet[ModelAudit]:
    return ModelAudit.objects.filter(study=study).select_related("version", "created_by")


def audit_get(*, study: Study, audit_id) -> ModelAudit:
    audit = (
        ModelAudit.objects.select_related("study__space", "version")
        .filter(study=study, pk=audit_id)
        .first()
    )
    if audit is None:
        raise NotFound("No such audit in this study.")
    return audit


def record_fields(audit: ModelAudit) -> list[str]:
    """The fields a record of the audit's space has (empty for words and texts)."""
    space = audit.study.space
    if not space.feature_map:
        return []
    return [f for f in first_record(space.pk) if f not in set(space.hidden_columns or [])]


@dataclass(frozen=True)
class Filters:
    field: str = ""
    value: str = ""
    differs: str = ""
    asked: str = ""  # "", "asked", "not-asked"
    order: str = ""  # "": worst first (the Lipschitz constant demanded); "gap": largest gap first

    @property
    def active(self) -> bool:
        return bool(self.field or self.differs or self.asked)


def filters_from(params, fields: list[str]) -> Filters:
    """Filters from query parameters; a field that is not one of ``fields`` is refused."""
    chosen = Filters(
        field=(params.get("field") or "").strip(),
        value=(params.get("value") or "").strip(),
        differs=(params.get("differs") or "").strip(),
        asked=(params.get("asked") or "").strip(),
        order=(params.get("order") or "").strip(),
    )
    for name in (chosen.field, chosen.differs):
        if name and name not in fields:
            raise InvalidInput(
                f"Unknown field {name[:60]!r}; the records have {', '.join(fields)}."
            )
    if chosen.asked not in ("", "asked", "not-asked"):
        raise InvalidInput("asked must be 'asked' or 'not-asked'.")
    if chosen.order not in ("", "gap"):
        raise InvalidInput("order must be 'gap' (or empty: worst first).")
    return chosen


def violations_filtered(*, audit: ModelAudit, filters: Filters) -> QuerySet[AuditViolation]:
    rows = AuditViolation.objects.filter(audit=audit)
    if filters.field:
        # The key is looked up in each side's JSON (the item's payload across its foreign key,
        # a new record's own fields), as text: numbers match as the page shows them.
        sides = ("item_a__payload", "item_b__payload", "record_a", "record_b")
        rows = rows.annotate(
            **{
                f"field_{n}": Cast(KeyTextTransform(filters.field, side), TextField())
                for n, side in enumerate(sides)
            }
        ).filter(
            Q(field_0=filters.value)
            | Q(field_1=filters.value)
            | Q(field_2=filters.value)
            | Q(field_3=filters.value)
        )
    if filters.differs:
        rows = rows.filter(differing__contains=f",{filters.differs},")
    if filters.asked == "asked":
        rows = rows.filter(asked_at__isnull=False)
    elif filters.asked == "not-asked":
        rows = rows.filter(asked_at__isnull=True)
    order = ("-gap", "rank") if filters.order == "gap" else ("rank",)
    return rows.select_related("item_a", "item_b").order_by(*order)


@dataclass
class Answers:
    counts: Counter = field(default_factory=Counter)
    last_id: int = 0

    @property
    def verdict(self) -> str:
        yes, no = self.counts["comparable"], self.counts["incomparable"]
        if yes > no:
            return "confirmed"
        if no > yes:
            return "disowned"
        return "undecided"

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def answers_for(*, study_id: int, violations) -> dict[int, Answers]:
    """The study's answers on each violation's pair (violation id → Answers; unanswered pairs
    are left out)."""
    pairs = {
        (v.item_a_id, v.item_b_id): v.pk
        for v in violations
        if v.item_a_id is not None and v.item_b_id is not None
    }
    if not pairs:
        return {}
    found: dict[int, Answers] = {}
    a_ids = {a for a, _ in pairs}
    b_ids = {b for _, b in pairs}
    rows = PairJudgment.objects.filter(
        study_id=study_id, item_a_id__in=a_ids, item_b_id__in=b_ids
    ).values_list("item_a_id", "item_b_id", "label", "id")
    for a, b, label, pk in rows:
        violation = pairs.get((a, b))
        if violation is None:
            continue
        answers = found.setdefault(violation, Answers())
        answers.counts[label] += 1
        answers.last_id = max(answers.last_id, pk)
    return found


@dataclass(frozen=True)
class Loop:
    """The closed loop at a glance: asked violations, answered ones by verdict, and the newest
    metric version that learned from every answer so far (None: not yet)."""

    asked: int
    answered: int
    verdicts: dict
    learned_by: MetricVersion | None
    last_answer: int


def audit_loop(*, audit: ModelAudit) -> Loop:
    asked = list(audit.violations.filter(asked_at__isnull=False).only("id", "item_a", "item_b"))
    answers = answers_for(study_id=audit.study_id, violations=asked)
    verdicts = Counter(a.verdict for a in answers.values())
    last = max((a.last_id for a in answers.values()), default=0)
    learned = None
    if last:
        learned = (
            MetricVersion.objects.ready()
            .filter(study_id=audit.study_id, judgment_watermark__gte=last)
            .order_by("id")
            .first()
        )
    return Loop(
        asked=len(asked),
        answered=len(answers),
        verdicts={v: verdicts.get(v, 0) for v in VERDICTS},
        learned_by=learned,
        last_answer=last,
    )


def audit_overlap(first: ModelAudit, second: ModelAudit) -> dict:
    """How many stored violating pairs (by keys) the two audits share."""

    def pairs(audit):
        rows = audit.violations.values_list("key_a", "key_b")
        return {tuple(sorted(p)) for p in rows}

    a, b = pairs(first), pairs(second)
    return {"both": len(a & b), "only_first": len(a - b), "only_second": len(b - a)}
