"""The data a refit fits: snapshots of a study's judgments and groups up to a watermark, how far
its data goes, and which studies have data newer than their versions.

Snapshots are a handful of queries returning numpy arrays (``values_list``), never a query per
judgment or group. ``judgment_snapshot`` reads every judgment with SQL joins;
``judgment_snapshot_cached`` (the refit's) keeps the study's raw judgments up to its last refit in
the worker's cache (``learning/refits/cache.py``) and reads only the newer ones, then applies the
exclusions, gold labels and adjudications in numpy, to the same result. The cached rows are
trusted only when, with the new ones, their count and checksum (``_row_check``: a sum over rows
of their id, items, label, annotator and gold flag) equal the database's, one aggregate up to the
watermark: a deleted, changed or out-of-order answer makes the refit read everything again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db.models import Case, Count, F, IntegerField, Max, OuterRef, Subquery, Sum, Value, When
from django.db.models.functions import Coalesce, Mod

from annotation.models import (
    Adjudication,
    ComparableGroup,
    GoldPair,
    Label,
    LabelCode,
    PairJudgment,
    Study,
    StudyCounter,
)
from annotation.review.fit import adjudication_mark, fit_arrays, fit_rows, pair_keys
from learning.models import MetricVersion, StudyLearningSettings
from learning.refits import cache

LABEL_CODES = {label.value: LabelCode.of(label) for label in Label}
CHECK_MOD = 65521  # each field of a row's checksum is taken modulo this prime
RAW_FIELDS = ("id", "item_a_id", "item_b_id", "item_a__row", "item_b__row", "label")
RAW_FIELDS += ("annotator_id", "is_gold")
RAW_KEYS = ("id", "item_a", "item_b", "row_a", "row_b", "label", "annotator", "gold_flag")
DELTA_SHARE = 0.05  # the newer rows' file is merged into the base file beyond this share of it


@dataclass(frozen=True)
class DataMarks:
    """How far a study's data goes: highest judgment id, judgments up to it, group revision,
    and which adjudicated labels there are (``annotation/review/fit.py``; "" when none)."""

    judgment_watermark: int
    judgment_count: int
    group_watermark: int
    adjudications: str = ""


@dataclass(frozen=True)
class JudgmentSnapshot:
    """Judgments with id <= watermark, as parallel arrays (one row per answer)."""

    ids: np.ndarray  # int64
    item_a: np.ndarray  # item ids (canonical a < b)
    item_b: np.ndarray
    row_a: np.ndarray  # row indices into the study's embedding matrix
    row_b: np.ndarray
    label: np.ndarray  # annotation.models.LabelCode
    annotator: np.ndarray  # user id, -1 for imported answers
    gold: np.ndarray | None = None  # LabelCode of the gold pair's answer, -1 when not gold

    def __len__(self) -> int:
        return int(self.ids.size)


@dataclass(frozen=True)
class GroupSnapshot:
    """Comparable groups as a list of row-index arrays (each of size >= 2)."""

    rows: list[np.ndarray]
    creators: int  # distinct creators


def excluded_annotator_ids(*, learning_settings: StudyLearningSettings) -> list[int]:
    return sorted(learning_settings.excluded_annotators.values_list("id", flat=True))


def _row_check():
    """A judgment's checksum term in SQL (``_row_check_numpy`` is the same in numpy)."""
    code = Case(
        *(When(label=value, then=Value(int(code) + 1)) for value, code in LABEL_CODES.items()),
        default=Value(0),
        output_field=IntegerField(),
    )
    gold = Case(When(is_gold=True, then=Value(11)), default=Value(0), output_field=IntegerField())
    return (
        Mod(F("id"), CHECK_MOD) * code
        + Mod(F("item_a_id"), CHECK_MOD) * 3
        + Mod(F("item_b_id"), CHECK_MOD) * 5
        + Mod(Coalesce(F("annotator_id"), Value(0)), CHECK_MOD) * 7
        + gold
    )


def _row_check_numpy(raw: dict[str, np.ndarray]) -> int:
    m = CHECK_MOD
    terms = (raw["id"] % m) * (raw["label"].astype(np.int64) + 1) + (raw["item_a"] % m) * 3
    terms += (raw["item_b"] % m) * 5 + (np.maximum(raw["annotator"], 0) % m) * 7
    return int(np.sum(terms + 11 * raw["gold_flag"].astype(np.int64), dtype=np.int64))


def _checksum(study_id: int, upto: int) -> tuple[int, int]:
    """The count and checksum (``_row_check``) of the study's judgments up to ``upto``: one
    aggregate, computed by the database."""
    agg = PairJudgment.objects.filter(study_id=study_id, id__lte=upto).aggregate(
        n=Count("id"), check=Sum(_row_check())
    )
    return int(agg["n"] or 0), int(agg["check"] or 0)


def study_data_marks(*, study_id: int) -> DataMarks:
    """Three queries: the judgment id watermark with its count, the group revision, the
    adjudications' mark."""
    agg = PairJudgment.objects.filter(study_id=study_id).aggregate(top=Max("id"), n=Count("id"))
    revision = (
        StudyCounter.objects.filter(study_id=study_id).values_list("group_revision", flat=True)
    ).first()
    return DataMarks(
        judgment_watermark=int(agg["top"] or 0),
        judgment_count=int(agg["n"] or 0),
        group_watermark=int(revision or 0),
        adjudications=adjudication_mark(study_id=study_id),
    )


def judgment_snapshot(
    *, study_id: int, watermark: int, excluded_annotators: list[int]
) -> JudgmentSnapshot:
    """All judgments of the study with id <= watermark, with the gold label of answers to gold
    pairs that still exist; an adjudicated pair's answers replaced by its adjudicated label
    (``annotation/review/fit.py: fit_rows``, two queries)."""
    gold_label = GoldPair.objects.filter(
        study_id=study_id, item_a=OuterRef("item_a"), item_b=OuterRef("item_b")
    ).values("label")[:1]
    queryset = PairJudgment.objects.filter(study_id=study_id, id__lte=watermark)
    if excluded_annotators:
        queryset = queryset.exclude(annotator_id__in=excluded_annotators)
    gold = Case(When(is_gold=True, then=Subquery(gold_label)))
    rows = fit_rows(queryset, study_id=study_id, gold=gold)
    if not rows:
        empty = np.empty(0, dtype=np.int64)
        return JudgmentSnapshot(empty, empty, empty, empty, empty, empty, empty, empty)
    ids, item_a, item_b, row_a, row_b, labels, annotators, gold = zip(*rows, strict=True)
    codes = np.fromiter((LABEL_CODES[x] for x in labels), dtype=np.int8, count=len(labels))
    return JudgmentSnapshot(
        ids=np.asarray(ids, dtype=np.int64),
        item_a=np.asarray(item_a, dtype=np.int64),
        item_b=np.asarray(item_b, dtype=np.int64),
        row_a=np.asarray(row_a, dtype=np.int64),
        row_b=np.asarray(row_b, dtype=np.int64),
        label=codes,
        annotator=np.asarray([-1 if a is None else a for a in annotators], dtype=np.int64),
        gold=np.fromiter((LABEL_CODES.get(g, -1) for g in gold), dtype=np.int8, count=len(gold)),
    )


def _raw_read(study_id: int, after: int, upto: int) -> dict[str, np.ndarray]:
    """The study's judgments with ``after < id <= upto`` as raw arrays, in id order (one query;
    ``gold_flag``: answered as a gold pair)."""
    rows = list(
        PairJudgment.objects.filter(study_id=study_id, id__gt=after, id__lte=upto)
        .order_by("id")
        .values_list(*RAW_FIELDS)
    )
    ids, item_a, item_b, row_a, row_b, labels, annotators, gold = (
        zip(*rows, strict=True) if rows else ((),) * 8
    )
    return {
        "id": np.asarray(ids, dtype=np.int64),
        "item_a": np.asarray(item_a, dtype=np.int64),
        "item_b": np.asarray(item_b, dtype=np.int64),
        "row_a": np.asarray(row_a, dtype=np.int64),
        "row_b": np.asarray(row_b, dtype=np.int64),
        "label": np.fromiter((LABEL_CODES[x] for x in labels), dtype=np.int8, count=len(labels)),
        "annotator": np.fromiter(
            (-1 if a is None else a for a in annotators), dtype=np.int64, count=len(annotators)
        ),
        "gold_flag": np.asarray(gold, dtype=bool),
    }


@dataclass(frozen=True)
class RawRead:
    """A study's raw judgment rows up to ``upto`` (``RAW_KEYS``, in id order), how they were
    read, how many came from the database this time, their checksum (``_row_check_numpy``) and
    the cache's base file: its rows and watermark."""

    rows: dict[str, np.ndarray]
    how: str
    new: int
    check: int
    in_base: int
    base_upto: int
    upto: int


def _cached_rows(folder, space_id: int) -> RawRead | None:
    """The cached raw rows: the base file, plus the newer rows' file when it extends it."""
    base = cache.arrays_load(folder / "judgments.npz")
    if base is None or not {*RAW_KEYS, "meta"} <= base.keys():
        return None
    space, upto = (int(v) for v in base["meta"][:2])
    if space != space_id:
        return None
    rows, top = {k: base[k] for k in RAW_KEYS}, upto
    delta = cache.arrays_load(folder / "judgments-new.npz")
    extends = delta is not None and {*RAW_KEYS, "meta"} <= delta.keys()
    if extends and [int(v) for v in delta["meta"][:2]] == [space, upto]:  # extends this base
        rows = {k: np.concatenate([base[k], delta[k]]) for k in RAW_KEYS}
        top = int(delta["meta"][2])
    return RawRead(rows, "", 0, _row_check_numpy(rows), base["id"].size, upto, top)


def raw_judgments(study: Study, marks: DataMarks, held: RawRead | None = None) -> RawRead:
    """Every judgment of ``study`` up to the marks' watermark as raw rows, and how they were
    read ("cached + N new" or "full ..."): the cached rows (``held``, a worker's last read of
    the study, else the cache's files) plus the newer ones when their count and checksum equal
    the database's, else all rows again (module docstring). The rows since the base file go to
    a small second file until they reach ``DELTA_SHARE`` of it, so that a refit does not
    rewrite every row it keeps."""
    folder = cache.study_cache_dir(study)
    top = marks.judgment_watermark
    found = held if held is not None else _cached_rows(folder, study.space_id)
    in_base, base_upto = (found.in_base, found.base_upto) if found is not None else (0, 0)
    raw, how = None, "full"
    if found is not None and found.upto <= top:
        new = _raw_read(study.pk, found.upto, top)
        raw = {k: np.concatenate([found.rows[k], new[k]]) for k in RAW_KEYS}
        check, count = found.check + _row_check_numpy(new), new["id"].size
        how = f"cached + {count} new"
        if (raw["id"].size, check) != _checksum(study.pk, top):
            raw, how = None, "full (the cached answers changed)"
        elif count == 0:
            return RawRead(raw, how, 0, check, in_base, base_upto, top)
    if raw is None:
        raw = _raw_read(study.pk, 0, top)
        check, count = _row_check_numpy(raw), raw["id"].size
    if how.startswith("full") or raw["id"].size - in_base > DELTA_SHARE * max(in_base, 1):
        meta = np.asarray([study.space_id, top], dtype=np.int64)
        (folder / "judgments-new.npz").unlink(missing_ok=True)
        cache.arrays_save(folder / "judgments.npz", raw | {"meta": meta})
        in_base, base_upto = raw["id"].size, top
    else:  # the rows after the base file's, beside it
        meta = np.asarray([study.space_id, base_upto, top], dtype=np.int64)
        rows = {k: raw[k][in_base:] for k in RAW_KEYS}
        cache.arrays_save(folder / "judgments-new.npz", rows | {"meta": meta})
    return RawRead(raw, how, count, check, in_base, base_upto, top)


def gold_pairs(study_id: int) -> list[tuple]:
    """The study's gold pairs: (item a, item b, label) in id order."""
    return list(
        GoldPair.objects.filter(study_id=study_id)
        .order_by("id")
        .values_list("item_a", "item_b", "label")
    )


def snapshot_of_raw(
    raw: dict[str, np.ndarray], *, study_id: int, excluded_annotators: list[int], gold: list
) -> JudgmentSnapshot:
    """The snapshot of raw rows (``raw_judgments``): the exclusions, the ``gold`` pairs'
    labels (``gold_pairs``) and the adjudications applied in numpy."""
    keep = ~np.isin(raw["annotator"], np.asarray(excluded_annotators, dtype=np.int64))
    rows = {k: raw[k][keep] for k in RAW_KEYS if k != "gold_flag"}
    rows["gold"] = np.full(rows["id"].size, -1, dtype=np.int8)
    flagged = np.flatnonzero(raw["gold_flag"][keep])
    if flagged.size and gold:
        ga, gb, labels = (np.asarray(c) for c in zip(*gold, strict=True))
        top = max(
            int(ga.max()), int(gb.max()), int(rows["item_a"].max()), int(rows["item_b"].max())
        )
        keys = pair_keys(ga, gb, top)
        order = np.argsort(keys)
        at = pair_keys(rows["item_a"][flagged], rows["item_b"][flagged], top)
        pos = np.minimum(np.searchsorted(keys[order], at), keys.size - 1)
        hit = keys[order][pos] == at
        codes = np.asarray([LABEL_CODES[x] for x in labels], dtype=np.int8)[order]
        rows["gold"][flagged[hit]] = codes[pos[hit]]
    rows = fit_arrays(rows, study_id=study_id)
    fields = ("ids", "item_a", "item_b", "row_a", "row_b", "label", "annotator", "gold")
    keys = ("id", "item_a", "item_b", "row_a", "row_b", "label", "annotator", "gold")
    return JudgmentSnapshot(**{f: rows[k] for f, k in zip(fields, keys, strict=True)})


def judgment_snapshot_cached(
    *, study: Study, marks: DataMarks, excluded_annotators: list[int]
) -> tuple[JudgmentSnapshot, str]:
    """``judgment_snapshot`` up to ``marks``' watermark, reading only the judgments newer than
    the study's cached ones (module docstring); and how the judgments were read."""
    raw = raw_judgments(study, marks)
    shot = snapshot_of_raw(
        raw.rows,
        study_id=study.pk,
        excluded_annotators=excluded_annotators,
        gold=gold_pairs(study.pk),
    )
    return shot, raw.how


def group_snapshot(*, study_id: int, excluded_annotators: list[int]) -> GroupSnapshot:
    """The study's comparable groups as row arrays (one query over the membership table)."""
    through = ComparableGroup.members.through
    queryset = through.objects.filter(comparablegroup__study_id=study_id)
    if excluded_annotators:
        queryset = queryset.exclude(comparablegroup__created_by_id__in=excluded_annotators)
    pairs = np.asarray(
        list(
            queryset.values_list(
                "comparablegroup_id", "item__row", "comparablegroup__created_by_id"
            )
        ),
        dtype=object,
    )
    if pairs.size == 0:
        return GroupSnapshot(rows=[], creators=0)
    group_ids = pairs[:, 0].astype(np.int64)
    item_rows = pairs[:, 1].astype(np.int64)
    creators = {c for c in pairs[:, 2] if c is not None}
    order = np.argsort(group_ids, kind="stable")
    group_ids, item_rows = group_ids[order], item_rows[order]
    starts = np.flatnonzero(np.r_[True, group_ids[1:] != group_ids[:-1]])
    groups = [g for g in np.split(item_rows, starts[1:]) if g.size >= 2]
    return GroupSnapshot(rows=groups, creators=len(creators))


def _adjudications_changed() -> set[int]:
    """Studies whose adjudications' mark differs from the one their newest live version was
    fitted with (a decision made, changed or taken back since): two queries."""
    current = {
        row["study_id"]: f"{row['n']}:{row['top']}"
        for row in Adjudication.objects.values("study_id").annotate(n=Count("id"), top=Max("id"))
    }
    newest = (
        MetricVersion.objects.filter(transient=False, cohort="")
        .exclude(status=MetricVersion.Status.FITTING)
        .values("study_id")
        .annotate(top=Max("id"))
        .values_list("top", flat=True)
    )
    fitted = dict(
        MetricVersion.objects.filter(pk__in=list(newest)).values_list(
            "study_id", "parameters__adjudications"
        )
    )
    return {
        study_id
        for study_id in set(current) | set(fitted)
        if current.get(study_id, "") != (fitted.get(study_id) or "")
    }


def study_ids_with_newer_data() -> list[int]:
    """Studies whose judgments, groups or adjudications go past every live version (six
    queries).

    Compared per study against the highest watermarks of its live versions; a study with data
    and no version at all is included. Judgment counts catch answers that committed out of id
    order or were deleted; the adjudications' mark a decision made, changed or taken back after
    the newest version (``annotation/review/fit.py: adjudication_mark``).
    """
    judgments = {
        row["study_id"]: (row["top"], row["n"])
        for row in PairJudgment.objects.values("study_id").annotate(top=Max("id"), n=Count("id"))
    }
    revisions = dict(
        StudyCounter.objects.filter(group_revision__gt=0).values_list("study_id", "group_revision")
    )
    versions = (
        # A "fitting" row may be an orphan of a killed worker: it does not count as done.
        MetricVersion.objects.filter(transient=False)
        .exclude(status=MetricVersion.Status.FITTING)
        .values("study_id")
        .annotate(jw=Max("judgment_watermark"), gw=Max("group_watermark"))
    )
    marks = {row["study_id"]: (row["jw"], row["gw"]) for row in versions}
    counts = {
        (study, jw): n
        for study, jw, n in MetricVersion.objects.filter(
            status=MetricVersion.Status.READY, cohort=""
        )
        .order_by("id")  # the latest version at a watermark wins
        .values_list("study_id", "judgment_watermark", "counts__judgments_total")
    }
    stale = []
    decided = _adjudications_changed() & set(judgments)  # (decisions are on answered pairs)
    for study_id in set(judgments) | set(revisions):
        top, n = judgments.get(study_id, (0, 0))
        jw, gw = marks.get(study_id, (0, 0))
        counted = counts.get((study_id, top))
        recounted = counted is not None and int(counted) != n
        if top > jw or revisions.get(study_id, 0) > gw or recounted or study_id in decided:
            stale.append(study_id)
    return sorted(stale)
