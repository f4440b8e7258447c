"""Bad inputs of the annotation pages: a study's page, labelling, groups and the review
page's filters."""

from __future__ import annotations

from django.urls import reverse

from .cases import A, B, Bad

CASES: list[Bad] = [
    # --- Pages --------------------------------------------------------------------------------
    Bad(
        "annotation:study-detail",
        "unknown study",
        "get",
        lambda w: reverse("annotation:study-detail", args=[999_999]),
        404,
        "Not found",
    ),
    Bad(
        "annotation:label",
        "another study",
        "get",
        lambda w: reverse("annotation:label", args=[B(w)]),
        404,
        "Not found",
    ),
    Bad(
        "annotation:groups",
        "unknown study",
        "get",
        lambda w: reverse("annotation:groups", args=[999_999]),
        404,
        "Not found",
    ),
    Bad(
        "annotation:review",
        "filter 'before' not a number",
        "get",
        lambda w: reverse("annotation:review", args=[A(w)]) + "?before=yesterday",
        400,
        "Enter a whole number",
        role="rev_a",
    ),
    Bad(
        "annotation:review",
        "unknown label filter",
        "get",
        lambda w: reverse("annotation:review", args=[A(w)]) + "?label=maybe",
        400,
        "Select a valid choice",
        role="rev_a",
    ),
]

# (endpoint, bad input, the test that covers it)
ELSEWHERE: list[tuple[str, str, str]] = []

# Taking no input beyond authentication (covered by the authorization matrix).
NO_INPUT = {"annotation:study-done", "annotation:study-list"}
