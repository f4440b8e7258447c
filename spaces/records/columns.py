"""A record space's columns: the roles guessed for an uploaded table, the table's column
order, and which columns annotators see (``hidden_columns``, chosen at creation and changed
later from the space's "columns shown" page)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingSpace, first_record


def numeric_columns(frame: pd.DataFrame) -> list[str]:
    """Columns whose every value reads as a finite number (text cells included), not booleans."""
    found = []
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_bool_dtype(column):
            continue
        raw = column.map(lambda v: v.strip() if isinstance(v, str) else v)
        values = pd.to_numeric(raw, errors="coerce")
        if (
            values.notna().all()
            and len(values)
            and bool(pd.Series(values).abs().lt(float("inf")).all())
        ):
            found.append(name)
    return found


LABEL_NAMES = {"label", "labels", "target", "class", "y", "income", "outcome", "decision"}
KEY_NAMES = {"id", "key", "name", "uid", "uuid", "record_id"}
KEY_TOKENS = {"id", "key", "uid", "uuid"}
LABEL_TOKENS = {"label", "target", "outcome", "decision"}  # not "class": work_class is no label


def name_tokens(name: str) -> list[str]:
    """A column name's words, lower case: ``applicantID`` and ``applicant_id`` → applicant, id."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    return [t for t in re.split(r"[^0-9A-Za-z]+", spaced.lower()) if t]


def guess_label(frame: pd.DataFrame) -> str:
    """A column named like a label (``income``, ``class``, or a last word such as target or
    outcome: ``credit_outcome``); else the
    last column when it has exactly two values (tables put the outcome last: Adult's income,
    German credit's credit); else none."""
    for name in frame.columns:
        tokens = name_tokens(name)
        if str(name).lower() in LABEL_NAMES or (tokens and tokens[-1] in LABEL_TOKENS):
            return name
    if len(frame.columns) > 1 and frame[frame.columns[-1]].astype(str).nunique() == 2:
        return frame.columns[-1]
    return ""


def guess_key(frame: pd.DataFrame, label: str) -> str:
    """A unique column named like a key (``id``, ``name``, ``applicant_id``, ``customerID``)."""
    for name in frame.columns:
        tokens = name_tokens(name)
        named = str(name).lower() in KEY_NAMES or (tokens and tokens[-1] in KEY_TOKENS)
        if name != label and named and frame[name].astype(str).is_unique:
            return name
    return ""


NEAR_UNIQUE = 0.95  # a share of distinct values above which a column looks like an id


def column_flags(frame: pd.DataFrame, numeric: set[str]) -> dict[str, str]:
    """Columns worth a second look, with the reason: one value in every row read (it adds
    nothing to φ), or nearly every row a value of its own (an id or free text, not a trait;
    for numbers: whole numbers all distinct). Needs 10 rows at least."""
    flags: dict[str, str] = {}
    if len(frame) < 10:
        return flags
    for name in frame.columns:
        text = frame[name].astype(str).str.strip()
        distinct = text.nunique()
        if distinct == 1:
            flags[name] = f"constant: {text.iloc[0]!r} in every row read; it adds nothing to φ"
        elif name in numeric:
            whole = text.str.fullmatch(r"-?[0-9]+").all()
            if whole and distinct == len(frame):
                flags[name] = "a whole number of its own in every row read: an id, or an amount?"
        elif distinct >= NEAR_UNIQUE * len(frame):
            flags[name] = (
                f"near-unique: {distinct:,} distinct values in {len(frame):,} rows "
                "(an id or free text?)"
            )
    return flags


def guess_roles(frame: pd.DataFrame) -> dict:
    """A default choice of columns: numbers → numeric, few distinct values → categorical, the
    label (``guess_label``) and the key (``guess_key``) → excluded, anything else (free text,
    ids) → excluded, and so is a text column flagged by ``column_flags`` (constant, near-unique;
    a flagged column of numbers keeps its role: amounts are often all distinct).
    ``frame``: the table's first rows (the upload's head), never more than the web request
    reads. ``flags``: the reason per flagged column."""
    numeric = set(numeric_columns(frame))
    label = guess_label(frame)
    key = guess_key(frame, label)
    flags = column_flags(frame, numeric)
    roles = {}
    limit = max(20, min(100, len(frame) // 2))
    for name in frame.columns:
        if name in (label, key) or name in flags and name not in numeric:
            roles[name] = "excluded"
        elif name in numeric:
            roles[name] = "numeric"
        elif frame[name].astype(str).nunique() <= limit:
            roles[name] = "categorical"
        else:
            roles[name] = "excluded"
    return {"roles": roles, "label_column": label, "key_column": key, "flags": flags}


def hidden_columns_check(
    columns: Sequence[str], label_column: str, hidden_columns: Sequence[str] | None
) -> list[str]:
    """The columns hidden from annotators: ``hidden_columns`` (each one of the table's
    ``columns``, in the table's order), or by default the label column alone."""
    if hidden_columns is None:
        return [label_column] if label_column else []
    if isinstance(hidden_columns, str):
        raise EmbeddingFormatError("hidden_columns is a list of column names")
    columns = [str(c) for c in columns]
    unknown = sorted(set(hidden_columns) - set(columns))
    if unknown:
        raise EmbeddingFormatError(f"no column {unknown[0]!r} to hide")
    return [c for c in columns if c in set(hidden_columns)]


def record_columns(space: EmbeddingSpace, record: dict | None = None) -> list[str]:
    """The columns of a record space's table (the fields every record keeps), in an order that
    does not depend on the database: φ's columns as its feature map lists them, then the
    excluded ones (the label among them), then the rest by name. (PostgreSQL's JSONB does not
    keep a record's key order, so the stored records cannot give the table's.) ``record``: the
    space's ``first_record`` when the caller has read it already."""
    payload = first_record(space.pk) if record is None else record
    spec = space.feature_map or {}
    declared = [f["column"] for f in spec.get("features", [])] + list(spec.get("excluded", []))
    first = [c for c in dict.fromkeys(declared) if c in payload]
    return first + sorted(str(c) for c in payload if c not in set(first))


def record_hidden_columns_set(space: EmbeddingSpace, hidden: Sequence[str]) -> list[str]:
    """Change which columns of a record space annotators do not see, after its creation.

    ``hidden`` must name columns of the space's table. Saving the space forgets the facts of
    every study drawn from it, so the pair queues are chosen again and no queued pair keeps
    showing a column that is now hidden (``annotation.facts``). φ and Σ do not change: what
    annotators see is not what the metric reads. Returns the hidden columns in table order.
    """
    if space.kind != EmbeddingSpace.Kind.RECORDS:
        raise EmbeddingFormatError("only a record space has columns to hide")
    if isinstance(hidden, str):
        raise EmbeddingFormatError("hidden columns are a list of column names")
    columns = record_columns(space)
    unknown = sorted(set(hidden) - set(columns))
    if unknown:
        raise EmbeddingFormatError(f"no column {unknown[0]!r} to hide")
    space.hidden_columns = [c for c in columns if c in set(hidden)]
    space.save(update_fields=["hidden_columns"])
    return space.hidden_columns
