"""Bad inputs of a study's webhooks page (admins of the study): a URL the app does not send to,
an unknown event, a webhook of no such id."""

from __future__ import annotations

from django.urls import reverse

from .cases import A, Bad

CASES: list[Bad] = [
    Bad(
        "annotation:study-webhooks",
        "a URL of the app's own network",
        "post",
        lambda w: reverse("annotation:study-webhooks", args=[A(w)]),
        400,
        "internal address",
        {"url": "http://169.254.169.254/latest/meta-data", "events": ["audit.done"]},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-webhooks",
        "a URL that is not http(s)",
        "post",
        lambda w: reverse("annotation:study-webhooks", args=[A(w)]),
        400,
        "Enter a valid URL",
        {"url": "javascript:alert(1)", "events": ["audit.done"]},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-webhooks",
        "an unknown event",
        "post",
        lambda w: reverse("annotation:study-webhooks", args=[A(w)]),
        400,
        "Select a valid choice",
        {"url": "https://93.184.216.34/hook", "events": ["everything"]},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-webhook",
        "a webhook of no such id",
        "post",
        lambda w: reverse("annotation:study-webhook", args=[A(w), 999999]),
        404,
        "No such webhook",
        {"action": "test"},
        "multipart",
        role="adm_a",
    ),
]

ELSEWHERE = [
    (
        "annotation:study-webhook",
        "an unknown action",
        "tests.annotation.test_webhooks::test_a_paused_webhook_keeps_its_deliveries_until_resumed",
    ),
]
NO_INPUT: set[str] = set()
