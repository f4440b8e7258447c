"""Reads of the cohorts' comparison: per member attribute of a study, its newest report
(``CohortReport``) in the shape of ``GET /api/studies/{id}/cohorts/`` and of the cohort page,
and the requests that queue a comparison or send its pairs back to the annotators."""

from __future__ import annotations

import logging

from celery import current_app
from django.db import transaction

from annotation.access import Action, require
from annotation.models import CandidatePair, MemberAttribute, Membership, Study
from annotation.setup.files import PairRow
from annotation.setup.pairs import candidate_pairs_upload
from common.errors import InvalidInput
from learning.models import CohortReport, MetricVersion

logger = logging.getLogger(__name__)
TASK = "learning.cohort_fit"
REFUSED = "Only an admin of the study can see its cohorts."


def cohorts_of(study: Study) -> list[dict]:
    """Per attribute (in definition order): the newest report's figures with the members'
    counts of today, and each value's version (None until it has one)."""
    reports = {}
    for report in CohortReport.objects.filter(study=study).order_by("-id"):
        reports.setdefault(report.attribute, report)
    values = list(Membership.objects.filter(study=study).values_list("attributes", flat=True))
    versions = {
        v.pk: v
        for v in MetricVersion.objects.filter(study=study)
        .exclude(cohort="")
        .only("id", "label", "verdict", "is_published", "cohort", "status")
    }
    found = []
    for attribute in MemberAttribute.objects.filter(study=study):
        report = reports.get(attribute.name)
        figures = dict(report.figures) if report else {"status": "waiting", "values": []}
        by_value = {row["value"]: row for row in figures.get("values") or []}
        rows = []
        for value in attribute.values:
            row = dict(by_value.get(value) or {"value": value, "answers": 0, "version": None})
            row["members"] = sum(1 for a in values if (a or {}).get(attribute.name) == value)
            row["version_row"] = versions.get(row.get("version"))
            rows.append(row)
        found.append(
            figures
            | {
                "name": attribute.name,
                "values": rows,
                "report": report,
                "equal_row": versions.get(figures.get("equal_version")),
                "differ": figures.get("differ") or {"p_value": None, "fields": []},
            }
        )
    return found


def api_shape(attributes: list[dict]) -> dict:
    """``cohorts_of`` as the API answers it (ids, not rows)."""
    out = []
    for a in attributes:
        differ = a["differ"]
        out.append(
            {
                "name": a["name"],
                "status": a.get("status", "waiting"),
                "needs": a.get("needs", ""),
                "values": [
                    {
                        "value": v["value"],
                        "members": v["members"],
                        "answers": v.get("answers", 0),
                        "version": v.get("version"),
                        "verdict": v.get("verdict", ""),
                    }
                    for v in a["values"]
                ],
                "equal_version": a.get("equal_version"),
                "pooled_version": a.get("pooled_version"),
                "differ": {
                    "p_value": differ.get("p_value"),
                    "annotators": differ.get("annotators"),
                    "smallest_p": differ.get("smallest_p"),
                    "between": differ.get("between", []),
                    "fields": differ.get("fields", []),
                    "fields_fitted": differ.get("fields_fitted", []),
                },
                "cross": a.get("cross", []),
                "equal_vs_pooled": a.get("equal_vs_pooled", []),
                "pairs": a.get("pairs", []),
                "computed_at": a["report"].created_at if a.get("report") else None,
            }
        )
    return {"attributes": out}


def cohorts_request(*, user, study: Study) -> bool:
    """Queue the study's cohort fits now (the members' values changed); True when sent."""
    require(user, study, Action.MANAGE, REFUSED)
    try:
        current_app.send_task(TASK, args=[study.pk], ignore_result=True)
    except Exception as exc:  # noqa: BLE001 - a down broker: the next refit queues it
        logger.warning("could not queue the cohorts of study %s: %s", study.pk, exc)
        return False
    return True


MAX_ASK = 50


def cohort_pairs_ask(*, user, study: Study, attribute: str, count: int = 10) -> dict:
    """The ``count`` pairs the cohorts' metrics disagree on most, as candidate pairs of the
    study (offered to annotators before the sampler's own choices)."""
    require(user, study, Action.MANAGE, REFUSED)
    report = CohortReport.objects.filter(study=study, attribute=attribute).order_by("-id").first()
    pairs = (report.figures.get("pairs") or []) if report else []
    rows = [
        PairRow(line=i, key_a=p["key_a"], key_b=p["key_b"])
        for i, p in enumerate(pairs[: max(1, min(count, MAX_ASK))], start=1)
        if p.get("key_a") and p.get("key_b")
    ]
    if not rows:
        raise InvalidInput("No pairs to ask about yet: the cohorts have no comparison.")
    with transaction.atomic():
        return candidate_pairs_upload(
            user=user, study=study, rows=rows, priority=CandidatePair.ASKED
        )
