"""Matrix rows of the export API (reviewers and admins of a study) and the learning pages
(dashboards, WEAT, drift, versions; publishing and the learning settings are for study admins
and superusers)."""

from __future__ import annotations

from django.urls import reverse

from .policies import (
    API_GATE,
    EXPORT_API,
    EXPORT_STUDY_GATE,
    PAGE_GATE,
    REVIEWER_PAGE,
    A,
    Row,
    record_study,
    statuses,
)

ROWS: dict[str, Row] = {
    # --- export API (reviewers and admins)
    "api-feature-map": Row(
        lambda w: reverse("api-feature-map", args=[record_study(w)]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "api-version": Row(
        lambda w: reverse("api-version", args=[w.version.pk]), {"get": EXPORT_API}, API_GATE
    ),
    "api-version-sigma": Row(
        lambda w: reverse("api-version-sigma", args=[w.version.pk, "npy"]),
        {"get": EXPORT_API},
        API_GATE,
    ),
    "api-published": Row(
        lambda w: reverse("api-published", args=[A(w), "face"]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "api-published-sigma": Row(
        lambda w: reverse("api-published-sigma", args=[A(w), "face", "json"]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "api-export-judgments": Row(
        lambda w: reverse("api-export-judgments", args=[A(w), "csv"]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    "api-export-groups": Row(
        lambda w: reverse("api-export-groups", args=[A(w), "jsonl"]),
        {"get": EXPORT_API},
        EXPORT_STUDY_GATE,
    ),
    # --- learning pages
    "learning:study-dashboard": Row(
        lambda w: reverse("learning:study-dashboard", args=[A(w)]),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:study-dashboard-status": Row(
        lambda w: reverse("learning:study-dashboard-status", args=[A(w)]),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:study-weat": Row(
        lambda w: reverse("learning:study-weat", args=[A(w)]), {"get": REVIEWER_PAGE}, PAGE_GATE
    ),
    "learning:study-weat-test": Row(
        lambda w: reverse("learning:study-weat-test", args=[A(w), w.weat_test.pk]),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:study-learning-settings": Row(  # study admins (and staff) only
        lambda w: reverse("learning:study-learning-settings", args=[A(w)]),
        {
            "get": statuses(302, 403, 404, 403, 200, 200),
            "post": statuses(302, 403, 404, 403, 302, 302),
        },
        PAGE_GATE,
        body=lambda w, r: {
            "version_min_new_answers": "12",
            "version_min_minutes": "4",
            "debounce_seconds": "3",
            "drift_alarm_rate": "0.001",
            "face_components": "",
        },
    ),
    "learning:study-drift": Row(
        lambda w: reverse("learning:study-drift", args=[A(w)]), {"get": REVIEWER_PAGE}, PAGE_GATE
    ),
    "learning:version-compare": Row(
        lambda w: reverse("learning:version-compare") + f"?a={w.version.pk}&b={w.other_version.pk}",
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:version-detail": Row(
        lambda w: reverse("learning:version-detail", args=[w.version.pk]),
        {"get": REVIEWER_PAGE},
        PAGE_GATE,
    ),
    "learning:version-publish": Row(  # study admins (membership) and superusers
        lambda w: reverse("learning:version-publish", args=[w.other_version.pk]),
        {"post": statuses(302, 403, 404, 403, 302, 302)},
        PAGE_GATE,
    ),
}
