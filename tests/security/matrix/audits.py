"""Matrix rows of the audit room: its API (reviewers and admins of a study, token or session)
and its pages (the same; asking the annotators is for the study's admins and superusers)."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from learning.models import AuditViolation, ModelAudit

from .policies import EXPORT_API, EXPORT_STUDY_GATE, PAGE_GATE, REVIEWER_PAGE, A, Row, statuses


def audit_of(world) -> int:
    """The done audit of study A the world made (``conftest.audit_create_done``)."""
    return ModelAudit.objects.get(study=world.study_a, name="matrix").pk


def violation_of(world) -> int:
    return AuditViolation.objects.get(audit_id=audit_of(world)).pk


def scores(world, role: str) -> dict:
    keys = [item.key for item in world.items[:20]]
    text = "key,score\n" + "".join(f"{k},{i / 20}\n" for i, k in enumerate(keys))
    return {"predictions": SimpleUploadedFile(f"{role}.csv", text.encode()), "k": "3"}


ROWS: dict[str, Row] = {
    "api-audits": Row(
        lambda w: reverse("api-audits", args=[A(w)]),
        {"get": EXPORT_API, "post": statuses(401, 403, 404, 201, 201, 201)},
        EXPORT_STUDY_GATE,
        body=scores,
    ),
    "api-audit": Row(
        lambda w: reverse("api-audit", args=[A(w), audit_of(w)]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "api-audit-violations": Row(
        lambda w: reverse("api-audit-violations", args=[A(w), audit_of(w)]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "learning:audits": Row(
        lambda w: reverse("learning:audits", args=[A(w)]),
        {"get": REVIEWER_PAGE, "post": statuses(302, 403, 404, 302, 302, 302)},
        PAGE_GATE,
        body=scores,
    ),
    "learning:audit-detail": Row(
        lambda w: reverse("learning:audit-detail", args=[A(w), audit_of(w)]),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:audit-compare": Row(
        lambda w: (
            reverse("learning:audit-compare", args=[A(w)]) + f"?a={audit_of(w)}&b={audit_of(w)}"
        ),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    # study A holds words: past the gate, the twins answer 400 (they need records)
    "api-counterfactuals": Row(
        lambda w: reverse("api-counterfactuals", args=[A(w)]) + "?columns=sex",
        {"get": statuses(401, 403, 404, 400, 400, 400)},
        EXPORT_STUDY_GATE,
    ),
    "learning:audit-sensitive": Row(  # the study's admins and superusers (400: words, no columns)
        lambda w: reverse("learning:audit-sensitive", args=[A(w)]),
        {"post": statuses(302, 403, 404, 403, 400, 400)},
        PAGE_GATE,
        body=lambda w, r: {"column": ["sex"]},
    ),
    "learning:audit-ask": Row(  # the study's admins (membership) and superusers
        lambda w: reverse("learning:audit-ask", args=[A(w), audit_of(w)]),
        {"post": statuses(302, 403, 404, 403, 302, 302)},
        PAGE_GATE,
        body=lambda w, r: {"violation": [violation_of(w)]},
    ),
}
