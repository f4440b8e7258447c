"""Bad inputs of publishing a metric version (admin of A): the version page's form and
``POST /api/versions/{id}/publish/`` — a version that is not informative without a reason, a
reason that is not storable text, unknown fields, other studies' versions."""

from __future__ import annotations

from django.urls import reverse

from .cases import Bad

CASES: list[Bad] = [
    Bad(
        "learning:version-publish",
        "a version never judged, no reason",
        "post",
        lambda w: reverse("learning:version-publish", args=[w.other_version.pk]),
        400,
        "Publishing it needs a reason",
        {"reason": "  "},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "api-version-publish",
        "a version never judged, no reason",
        "post",
        lambda w: reverse("api-version-publish", args=[w.other_version.pk]),
        409,
        "cannot tell yet",
        {},
        role="adm_a",
    ),
    Bad(
        "api-version-publish",
        "a reason that is not text",
        "post",
        lambda w: reverse("api-version-publish", args=[w.other_version.pk]),
        400,
        "The reason must be text.",
        {"reason": ["a"]},
        role="adm_a",
    ),
    Bad(
        "api-version-publish",
        "a reason over 1,000 characters",
        "post",
        lambda w: reverse("api-version-publish", args=[w.other_version.pk]),
        400,
        "longer than 1000 characters",
        {"reason": "x" * 1001},
        role="adm_a",
    ),
    Bad(
        "api-version-publish",
        "an unknown field",
        "post",
        lambda w: reverse("api-version-publish", args=[w.other_version.pk]),
        400,
        "Unknown field(s): force",
        {"force": True},
        role="adm_a",
    ),
    Bad(
        "api-version-publish",
        "a body that is not an object",
        "post",
        lambda w: reverse("api-version-publish", args=[w.other_version.pk]),
        400,
        "The body must be a JSON object",
        [1, 2],
        role="adm_a",
    ),
    Bad(
        "api-version-publish",
        "another study's version",
        "post",
        lambda w: reverse("api-version-publish", args=[w.version_b.pk]),
        404,
        "No such study",
        {"reason": "x"},
        role="adm_a",
    ),
    Bad(
        "api-version-publish",
        "unknown version",
        "post",
        lambda w: reverse("api-version-publish", args=[999_999]),
        404,
        "No MetricVersion",
        {"reason": "x"},
        role="adm_a",
    ),
]

ELSEWHERE = [
    (
        "api-version-publish",
        "a reviewer (403), an outsider (404), no token (401), a reason not text (400)",
        "tests.learning.test_publish_validity::test_the_publish_endpoint",
    ),
]

NO_INPUT: set[str] = set()
