"""The worker's cohort fits: after a pooled refit of a study with member attributes, for each
attribute whose values have enough answers, each cohort's metric, the equal-cohort metric and
the figures that compare them (``learning/cohorts/fits.py``, ``compare.py``), stored as a
``CohortReport`` per attribute.

``cohort_refit`` holds the study's refit lease (a refit retires the ``fitting`` rows of any
fit it did not start), reads the answers of the newest pooled EXPLORE version (its watermark,
its repeat policy, its excluded annotators) and does nothing when a report for the same pooled
version and the same members' values exists. A study without member attributes costs one
indexed query (``cohorts_wanted``) and gets nothing else: its versions are the same.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from threadpoolctl import threadpool_limits

from annotation.labelling.strategies import control_only
from annotation.models import MemberAttribute, Membership, Study
from learning.cohorts import compare, fits
from learning.models import CohortReport, MetricVersion
from learning.refits import fitting, scheduling, snapshots
from learning.refits.newitems import pairs_subset
from learning.refits.pairs import pair_data
from learning.versions import selectors, sigmas, storage
from spaces.models import Item
from spaces.records.featuremap import field_blocks, field_levels

logger = logging.getLogger(__name__)
MIN_COHORT_ANSWERS = 100  # a cohort's answers before it gets a metric of its own


@dataclass
class Outcome:
    study_id: int
    outcome: str  # "busy", "nothing to do", "fitted"
    reports: list[int]
    retry_in: float = 0.0


def cohorts_wanted(study_id: int) -> bool:
    """Whether the study has member attributes (then a pooled refit queues the cohorts')."""
    return MemberAttribute.objects.filter(study_id=study_id).exists()


def cohort_refit(*, study_id: int) -> Outcome:
    """Fit the cohorts of every attribute of the study (module docstring)."""
    if not cohorts_wanted(study_id):
        return Outcome(study_id, "nothing to do", [])
    pooled = selectors.version_latest_ready(study_id=study_id, method=MetricVersion.Method.EXPLORE)
    if pooled is None:
        return Outcome(study_id, "nothing to do", [])
    token = scheduling.lease_claim(study_id=study_id)
    if token is None:
        remaining = scheduling.lease_remaining(study_id=study_id)
        return Outcome(study_id, "busy", [], retry_in=min(max(1.0, remaining), 30.0))
    try:
        with (
            scheduling.LeaseKeeper(study_id, token),
            threadpool_limits(settings.LEARNING_BLAS_THREADS),
        ):
            reports = _claimed(study_id, pooled)
    finally:
        scheduling.lease_return(study_id=study_id, token=token)
    return Outcome(study_id, "fitted" if reports else "nothing to do", reports)


def _claimed(study_id: int, pooled: MetricVersion) -> list[int]:
    study = Study.objects.select_related("space").get(pk=study_id)
    learning = selectors.learning_settings_get(study_id=study_id)
    values = dict(Membership.objects.filter(study=study).values_list("user_id", "attributes"))
    todo = []
    for attribute in MemberAttribute.objects.filter(study=study):
        assignment = {u: (a or {}).get(attribute.name) for u, a in values.items()}
        key = _key(pooled, attribute, assignment, learning)
        if not CohortReport.objects.filter(study=study, attribute=attribute.name, key=key).exists():
            todo.append((attribute, assignment, key))
    if not todo:
        return []
    excluded = [int(a) for a in (pooled.parameters or {}).get("excluded_annotators") or []]
    policy = (pooled.parameters or {}).get("repeat_policy", learning.repeat_policy)
    shot = snapshots.judgment_snapshot(
        study_id=study_id, watermark=pooled.judgment_watermark, excluded_annotators=excluded
    )
    pairs = pair_data(shot, policy=policy, validation_share=learning.validation_share)
    done = []
    for attribute, assignment, key in todo:
        found = attribute_compare(study, pooled, learning, pairs, attribute, assignment)
        try:
            with transaction.atomic():
                report = CohortReport.objects.create(
                    study=study,
                    attribute=attribute.name,
                    key=key,
                    judgment_watermark=pooled.judgment_watermark,
                    figures=found,
                )
        except IntegrityError:  # a redelivered task stored it first
            continue
        done.append(report.pk)
    return done


def _key(pooled, attribute, assignment: dict, learning) -> str:
    payload = json.dumps(
        {
            "pooled": pooled.pk,
            "values": attribute.values,
            "members": sorted((u, v) for u, v in assignment.items() if v),
            "reliability": learning.weight_by_reliability,
            "bound": learning.explore_max_eigenvalue,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:64]


def attribute_compare(study, pooled, learning, pairs, attribute, assignment: dict) -> dict:
    """One attribute's cohorts: their versions and the figures (the report's JSON)."""
    members = [sum(1 for v in assignment.values() if v == value) for value in attribute.values]
    base = {"attribute": attribute.name, "pooled_version": pooled.pk, "status": "waiting"}
    if pairs.annotator is None:
        return base | {
            "values": _values(attribute, members, np.zeros(len(attribute.values), int)),
            "needs": "a repeat policy that keeps each answer (not 'majority': one per pair)",
        }
    index = {v: i for i, v in enumerate(attribute.values)}
    of_user = {u: index[v] for u, v in assignment.items() if v in index}
    codes = np.array([of_user.get(int(a), -1) for a in pairs.annotator], dtype=np.int64)
    answers = np.bincount(codes[codes >= 0], minlength=len(attribute.values))
    enough = [
        i
        for i in range(len(attribute.values))
        if answers[i] >= MIN_COHORT_ANSWERS and fitting.explore_shortfall_of(pairs.y[codes == i]).ok
    ]
    values = _values(attribute, members, answers)
    if len(enough) < 2:
        return base | {
            "values": values,
            "needs": f"two values with at least {MIN_COHORT_ANSWERS} answers each (both "
            "labels among them)",
        }
    codes = np.where(np.isin(codes, enough), codes, -1)
    make_up = {
        "attribute": attribute.name,
        "cohorts": [{k: row[k] for k in ("value", "members", "answers")} for row in values],
        "pooled_version": pooled.pk,
    }
    common = {"attribute": attribute.name, "make_up": make_up}
    fitted = {}
    for i in enough:
        name = attribute.values[i]
        fitted[name] = fits.cohort_fit(
            study, pooled, learning, pairs, codes == i, value=name, **common
        )
    equal = fits.equal_fit(study, pooled, learning, pairs, codes, **common)
    for row in values:
        found = fitted.get(row["value"])
        if found is not None and found.version is not None:
            row |= {"version": found.version.pk, "verdict": found.version.verdict}
    return (
        base
        | _figures(study, pooled, pairs, codes, attribute, fitted, equal)
        | {
            "values": values,
            "status": "ready",
            "needs": "",
        }
    )


def _values(attribute, members: list[int], answers) -> list[dict]:
    return [
        {"value": v, "members": int(m), "answers": int(n), "version": None, "verdict": ""}
        for v, m, n in zip(attribute.values, members, answers, strict=True)
    ]


def _figures(study, pooled, pairs, codes, attribute, fitted, equal) -> dict:
    read, uniform = study.space.vectors, control_only(study.strategy)
    ok = {name: f for name, f in fitted.items() if f.version is not None}
    held = {
        name: compare.Held(
            pairs_subset(pairs, codes == attribute.values.index(name)), read, uniform
        )
        for name in ok
    }
    kept = storage.fold_fits_load(pooled)
    fold_sets = {name: f.folds.fits for name, f in ok.items()}
    if equal.version is not None:
        fold_sets["equal"] = equal.folds.fits
    if kept is not None:
        fold_sets["pooled"] = kept[0]
    out = {
        "equal_version": None if equal.version is None else equal.version.pk,
        "equal_verdict": "" if equal.version is None else equal.version.verdict,
        "cross": compare.cross_table(held, fold_sets),
        "equal_vs_pooled": (
            compare.better_than(held, fold_sets["equal"], fold_sets["pooled"])
            if "equal" in fold_sets and "pooled" in fold_sets
            else []
        ),
        "pooled_prior": (pooled.parameters or {}).get("prior", ""),
    }
    sigma = np.asarray(sigmas.sigma_of(pooled))
    largest = sorted(ok, key=lambda n: -int(np.sum(codes == attribute.values.index(n))))[:2]
    spec = study.space.feature_map
    names, starts = field_blocks(spec)
    if not names or sigma.shape[0] != len((spec or {}).get("feature_names", [])):
        names = []
    between = [attribute.values.index(n) for n in largest]
    differ = compare.differ_test(
        pairs, read, sigma, codes, between, (names, starts, field_levels(spec))
    )
    differ["between"] = largest
    differ["fields_fitted"] = []
    if len(largest) == 2 and names:
        differ["fields_fitted"] = compare.fields_between(
            ok[largest[0]].sigma, ok[largest[1]].sigma, names, starts, field_levels(spec)
        )
    out["differ"] = differ
    out["pairs"] = _named(
        study, compare.disagreements(pairs, read, {n: f.sigma for n, f in ok.items()})
    )
    return out


def _named(study, rows: list[dict]) -> list[dict]:
    wanted = {r["row_a"] for r in rows} | {r["row_b"] for r in rows}
    items = dict(
        Item.objects.filter(space_id=study.space_id, row__in=wanted).values_list("row", "id")
    )
    keys = dict(Item.objects.filter(pk__in=items.values()).values_list("id", "key"))
    for row in rows:
        row["item_a"], row["item_b"] = items.get(row["row_a"]), items.get(row["row_b"])
        row["key_a"], row["key_b"] = keys.get(row["item_a"], ""), keys.get(row["item_b"], "")
    return rows
