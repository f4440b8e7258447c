"""Matrix rows of the export API (reviewers and admins of a study) and the learning pages
(dashboards, WEAT, drift, versions; publishing and the learning settings are for study admins
and superusers)."""

from __future__ import annotations

from django.urls import reverse

from ..conftest import WEAT_WORDS, own_weat_test
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


def weat_test_of_a(world) -> int:
    """The test of study A's own suite (``conftest.own_weat_test``, made again if deleted)."""
    return own_weat_test(world.study_a).pk


def weat_form(world, role: str) -> dict:
    """A valid new test, named after the role (names are unique in a study)."""
    words = {key: "\n".join(value) for key, value in WEAT_WORDS.items()}
    names = {"x_name": "X", "y_name": "Y", "a_name": "A", "b_name": "B"}
    return {"name": f"test of {role}", "kind": "unfair", "action": "save", **names, **words}


def weat_body(world, role: str) -> dict:
    return {"name": f"api test of {role}", "kind": "meaningful", **WEAT_WORDS}


def publish_body(world, role: str) -> dict:
    return {"reason": f"security matrix, {role}"}


ADMIN_PAGE = statuses(302, 403, 404, 403, 200, 200)
ADMIN_POST = statuses(302, 403, 404, 403, 302, 302)

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
    "api-version-publish": Row(  # study admins (membership) and superusers
        lambda w: reverse("api-version-publish", args=[w.other_version.pk]),
        {"post": statuses(401, 403, 404, 403, 200, 200)},
        API_GATE,
        body=publish_body,
        fmt="json",
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
    "learning:study-weat-new": Row(  # the study's admins (membership) and superusers
        lambda w: reverse("learning:study-weat-new", args=[A(w)]),
        {"get": ADMIN_PAGE, "post": ADMIN_POST},
        PAGE_GATE,
        body=weat_form,
    ),
    "learning:study-weat-test-edit": Row(
        lambda w: reverse("learning:study-weat-test-edit", args=[A(w), weat_test_of_a(w)]),
        {"get": ADMIN_PAGE, "post": ADMIN_POST},
        PAGE_GATE,
        body=lambda w, role: weat_form(w, role) | {"name": "mine"},
    ),
    "learning:study-weat-test-delete": Row(
        lambda w: reverse("learning:study-weat-test-delete", args=[A(w), weat_test_of_a(w)]),
        {"post": ADMIN_POST},
        PAGE_GATE,
    ),
    "api-weat-tests": Row(
        lambda w: reverse("api-weat-tests", args=[A(w)]),
        {"get": EXPORT_API, "post": statuses(401, 403, 404, 403, 201, 201)},
        EXPORT_STUDY_GATE,
        body=weat_body,
        fmt="json",
    ),
    "api-weat-test": Row(
        lambda w: reverse("api-weat-test", args=[A(w), weat_test_of_a(w)]),
        {"get": EXPORT_API, "delete": statuses(401, 403, 404, 403, 204, 204)},
        EXPORT_STUDY_GATE,
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
        body=publish_body,  # the version was never judged: publishing it needs a reason
    ),
    # Cohorts (issue 37): the study's admins only.
    "learning:study-cohorts": Row(
        lambda w: reverse("learning:study-cohorts", args=[A(w)]),
        {
            "get": statuses(302, 403, 404, 403, 200, 200),
            "post": statuses(302, 403, 404, 403, 302, 302),
        },
        PAGE_GATE,
        body=lambda w, r: {"action": "fit"},
    ),
    "api-cohorts": Row(
        lambda w: reverse("api-cohorts", args=[A(w)]),
        {"get": statuses(401, 403, 404, 403, 200, 200)},
        {"anon": 401, "ann_a": 403, "ann_b": 404, "rev_a": 403},
    ),
}
