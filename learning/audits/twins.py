"""Counterfactual twins: each record of a study's pool with one sensitive column changed, for the
team's model to score, and the audit's figures on them.

* A record study's admins declare its **sensitive columns** (:func:`sensitive_columns_set`,
  ``learning.models.AuditSettings``).
* ``GET /api/studies/{id}/counterfactuals.csv?columns=sex,race`` (:func:`counterfactual_plan`,
  :func:`counterfactual_rows`): for every item of the pool and each listed column, one row per
  other value the column takes in the pool: ``key`` (``{of}~{column}={value}``, :func:`twin_key`),
  ``of`` (the original's key), ``column``, ``value``, then every shown field of the record with
  that value changed — a file the model scores as it is.
* An audit whose scores include such keys (their fields may be left out: the key says what they
  are) keeps those rows apart from the neighbour search (:class:`TwinCollector`, called by
  ``learning.audits.inputs.predictions_read``: the hook); the worker reports per column the
  share of pairs whose scores differ by more than δ, the mean and largest change, the decision
  flips, with intervals, and the worst twins (:func:`twin_summary`;
  numbers: ``learning.core.fairness.counterfactual.twin_figures``).

A key of the pool is always the item, never a twin; a key is a twin when it is ``{of}~{column}=
{value}`` for a field ``column`` of the records and an ``of`` in the pool (else it is a new
record, or unknown); a twin whose original has no score in the file is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db.models import TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from annotation.access import Action, require
from annotation.models import Study
from annotation.selectors import pool_items
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.errors import InvalidInput
from learning.core.fairness.counterfactual import twin_figures
from learning.models import AuditSettings
from spaces.models import first_record

SEP, EQ = "~", "="
HEAD = ("key", "of", "column", "value")
MAX_VALUES = 50  # distinct values a sensitive column may take
MAX_COLUMNS = 10
WORST = 20  # twins listed per column
DEFAULT_DELTA = 0.01
COLUMNS_REFUSED = "Only admins of the study can declare its sensitive columns."


def twin_key(of: str, column: str, value: str) -> str:
    return f"{of}{SEP}{column}{EQ}{value}"


def parse_twin_key(key: str, fields, pool) -> tuple[str, str, str] | None:
    """``(of, column, value)`` when ``key`` is ``{of}~{column}={value}`` for a column among
    ``fields`` and an ``of`` in ``pool``; else None."""
    for column in fields:
        at = key.rfind(f"{SEP}{column}{EQ}")
        if at > 0 and key[:at] in pool:
            value = key[at + len(column) + 2 :]
            if value:
                return key[:at], column, value
    return None


def twin_original(key: str, column: str, value: str) -> str:
    """The original's key in a twin's key (the inverse of :func:`twin_key`)."""
    return key[: len(key) - len(column) - len(value) - 2]


def record_columns(study: Study) -> list[str]:
    """The fields of a record study's records that reviewers see (empty for other studies)."""
    space = study.space
    if not space.feature_map:
        return []
    hidden = set(space.hidden_columns or [])
    return [f for f in first_record(space.pk) if f not in hidden]


def sensitive_columns(study: Study) -> list[str]:
    found = AuditSettings.objects.filter(study=study).values_list("sensitive_columns", flat=True)
    return list(found.first() or [])


def column_values(study: Study, column: str, limit: int = MAX_VALUES + 1) -> list[str]:
    """The distinct values (as text, sorted) ``column`` takes in the study's pool, at most
    ``limit``."""
    text = Cast(KeyTextTransform(column, "payload"), TextField())
    rows = (
        pool_items(study=study)
        .annotate(value=text)
        .filter(value__isnull=False)
        .order_by("value")
        .values_list("value", flat=True)
        .distinct()
    )
    return list(rows[:limit])


def _columns_checked(study: Study, columns: list[str]) -> dict[str, list[str]]:
    fields = record_columns(study)
    if not fields:
        raise InvalidInput("Counterfactual twins need a study of records.")
    unknown = [c for c in columns if c not in fields]
    if unknown:
        raise InvalidInput(
            f"Unknown column {unknown[0][:60]!r}; the records have {', '.join(fields)}."
        )
    if len(columns) > MAX_COLUMNS:
        raise InvalidInput(f"At most {MAX_COLUMNS} columns.")
    values = {}
    for column in columns:
        found = column_values(study, column)
        if len(found) > MAX_VALUES:
            raise InvalidInput(
                f"Column {column!r} takes more than {MAX_VALUES} values in the pool: a sensitive "
                "column is categorical (sex, race), not a number or a name."
            )
        if len(found) < 2:
            raise InvalidInput(f"Column {column!r} takes one value in the pool: it has no twins.")
        values[column] = found
    return values


def sensitive_columns_set(*, user, study: Study, columns: list[str]) -> list[str]:
    """Declare the study's sensitive columns (admins; audited); each a categorical field."""
    require(user, study, Action.MANAGE, COLUMNS_REFUSED)
    columns = list(dict.fromkeys(c.strip() for c in columns if c and c.strip()))
    _columns_checked(study, columns)
    AuditSettings.objects.update_or_create(study=study, defaults={"sensitive_columns": columns})
    audit_record(
        action=AuditAction.STUDY_CHANGE,
        target=study,
        actor=user,
        study_id=study.pk,
        detail={"sensitive_columns": columns},
    )
    return columns


@dataclass(frozen=True)
class Plan:
    columns: dict[str, list[str]]  # column → its values in the pool
    fields: list[str]  # the record fields written after the head

    @property
    def header(self) -> list[str]:
        return [*HEAD, *self.fields]


def counterfactual_plan(*, study: Study, columns: str | None) -> Plan:
    """The checked request: ``columns`` as ``sex,race`` (empty: the declared ones), each a field
    of the records with at most MAX_VALUES values, the file at most ``AUDIT_MAX_ROWS`` rows
    (an audit reads no more)."""
    chosen = [c.strip() for c in (columns or "").split(",") if c.strip()]
    if not chosen:
        chosen = sensitive_columns(study)
    if not chosen:
        raise InvalidInput(
            "Name the columns (?columns=sex,race) or declare the study's sensitive columns first."
        )
    values = _columns_checked(study, list(dict.fromkeys(chosen)))
    rows = pool_items(study=study).count() * sum(len(v) - 1 for v in values.values())
    if rows > settings.AUDIT_MAX_ROWS:
        raise InvalidInput(
            f"The twins of these columns would be {rows:,} rows; an audit reads at most "
            f"{settings.AUDIT_MAX_ROWS:,} (AUDIT_MAX_ROWS): ask for fewer columns."
        )
    fields = [f for f in record_columns(study) if f not in HEAD]
    return Plan(columns=values, fields=fields)


def counterfactual_rows(*, study: Study, plan: Plan):
    """The twins of every pool item, item by item in row order (constant memory)."""
    items = pool_items(study=study).order_by("row").values_list("key", "payload")
    for key, payload in items.iterator(chunk_size=2000):
        record = payload if isinstance(payload, dict) else {}
        base = {f: record.get(f, "") for f in plan.fields}
        for column, values in plan.columns.items():
            own = record.get(column)
            own = None if own is None else str(own)
            for value in values:
                if value == own:
                    continue
                row = dict(base)
                if column in row:
                    row[column] = value
                row.update(key=twin_key(key, column, value), of=key, column=column, value=value)
                yield row


class TwinCollector:
    """The twin rows of a score file, gathered a chunk at a time while the worker reads it
    (``learning/audits/inputs.py``) and placed once every original's position is known: keys not
    in the pool of the form ``{of}~{column}={value}`` for a field of the records and an ``of`` in
    the pool. Each original must be scored in the same file (else InvalidInput naming the row)."""

    def __init__(self, study: Study):
        self.study = study
        self._fields: list[str] | None = None
        self.keys: list[str] = []
        self.of: list[str] = []
        self.columns: list[str] = []
        self.values: list[str] = []
        self.rows: list[int] = []
        self.scores: list[float] = []
        self.codes: list[int] = []

    def fields(self) -> list[str]:
        if self._fields is None:  # the declared sensitive columns tried first
            self._fields = list(
                dict.fromkeys([*sensitive_columns(self.study), *record_columns(self.study)])
            )
        return self._fields

    def candidates(self, keys) -> set[str]:
        """The originals ``keys`` could be twins of, to look up in the pool."""
        found = set()
        for key in keys:
            for column in self.fields():
                at = key.rfind(f"{SEP}{column}{EQ}")
                if at > 0:
                    found.add(key[:at])
        return found

    def take(self, keys, rows, scores, codes, pool: dict) -> np.ndarray:
        """Keep the twins among ``keys`` (``pool``: the pool's keys among them and their
        candidate originals); returns the mask of twin rows."""
        mask = np.zeros(len(keys), dtype=bool)
        for n, key in enumerate(keys):
            if SEP not in key or key in pool:
                continue
            parsed = parse_twin_key(key, self.fields(), pool)
            if parsed is None:
                continue  # a new record, or an unknown key
            mask[n] = True
            of, column, value = parsed
            self.keys.append(str(key))
            self.of.append(of)
            self.columns.append(column)
            self.values.append(value)
            self.rows.append(int(rows[n]))
            self.scores.append(float(scores[n]))
            self.codes.append(int(codes[n]))
        return mask

    def placed(self, position: dict, recode: np.ndarray, has_decision: bool):
        """The twins' scores with their originals as positions among the checked scores
        (``position``: a pool key's position); None without twins."""
        if not self.keys:
            return None
        for n, of in enumerate(self.of):
            if of not in position:
                raise InvalidInput(
                    f"Row {self.rows[n]}: twin {self.keys[n][:80]!r} needs its original's "
                    f"score: add a row for {of[:80]!r}."
                )
        names = sorted(set(self.columns))
        code = {c: i for i, c in enumerate(names)}
        codes = np.array(self.codes, dtype=np.int64)
        return TwinScores(
            keys=list(self.keys),
            of=np.array([position[of] for of in self.of], dtype=np.int64),
            column=np.array([code[c] for c in self.columns], dtype=np.int64),
            column_names=names,
            values=list(self.values),
            scores=np.array(self.scores, dtype=np.float64),
            decisions=recode[codes] if has_decision else None,
        )


@dataclass(frozen=True)
class TwinScores:
    """The checked twins of an audit's input (read with the scores in the worker): each twin's
    key, its original (a position in the scores), column (code into ``column_names``), value,
    score and decision code."""

    keys: list[str]
    of: np.ndarray
    column: np.ndarray
    column_names: list[str]
    values: list[str]
    scores: np.ndarray
    decisions: np.ndarray | None


def twin_summary(predictions, *, delta: float | None, n_boot: int) -> dict:
    """Per column the twin figures (``learning.core.fairness.counterfactual.TwinFigures.as_dict``) and
    its worst ``WORST`` twins, largest change first; {} without twins."""
    twins = predictions.twins
    if twins is None:
        return {}
    delta = DEFAULT_DELTA if delta is None else delta
    labels = predictions.decision_labels
    has_decisions = predictions.decisions is not None and twins.decisions is not None
    out = {}
    for code, name in enumerate(twins.column_names):
        chosen = np.flatnonzero(twins.column == code)
        of = twins.of[chosen]
        before, after = predictions.scores[of], twins.scores[chosen]
        figures = twin_figures(
            before,
            after,
            of,
            delta=delta,
            original_decisions=predictions.decisions[of] if has_decisions else None,
            twin_decisions=twins.decisions[chosen] if has_decisions else None,
            n_boot=n_boot,
        ).as_dict()
        change = np.abs(after - before)
        worst = []
        for m in np.argsort(-change, kind="stable")[:WORST]:
            t = int(chosen[m])
            worst.append(
                {
                    "key": twins.keys[t],
                    "of": twin_original(twins.keys[t], name, twins.values[t]),
                    "value": twins.values[t],
                    "score_of": float(before[m]),
                    "score_twin": float(after[m]),
                    "change": float(after[m] - before[m]),
                    "decision_of": labels[predictions.decisions[of[m]]] if has_decisions else "",
                    "decision_twin": labels[twins.decisions[t]] if has_decisions else "",
                }
            )
        out[name] = figures | {"worst": worst}
    return out
