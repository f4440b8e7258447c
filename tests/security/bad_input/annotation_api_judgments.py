"""Bad inputs of the answer endpoints: POST/GET /api/studies/<id>/judgments/ and POST
/api/studies/<id>/judgments/batch/ (malformed and ambiguous JSON, wrong types, oversized bodies,
a study one is not a member of)."""

from __future__ import annotations

import json

from django.urls import reverse

from ..conftest import World
from .cases import A, B, Bad, raw


def judgments_url(w: World) -> str:
    return reverse("api-judgments", args=[A(w)])


def batch_url(w: World) -> str:
    return reverse("api-judgments-batch", args=[A(w)])


def good_judgment(w: World, **change) -> dict:
    body = {
        "item_a": w.items[4].pk,
        "item_b": w.items[5].pk,
        "label": "comparable",
        "client_id": "6f1c7a52-5a49-4a4e-9b8e-3f5d2a9b1c01",
    }
    return {**body, **change}


CASES: list[Bad] = [
    # --- POST /api/studies/<id>/judgments/batch/ (per-answer problems: ELSEWHERE) -------------
    Bad(
        "api-judgments-batch",
        "oversized batch (51 answers; JUDGMENT_BATCH_MAX is 50)",
        "post",
        batch_url,
        400,
        "at most 50 answers per request",
        lambda w: {
            "answers": [
                good_judgment(w, client_id=f"6f1c7a52-5a49-4a4e-9b8e-{n:012d}") for n in range(51)
            ]
        },
    ),
    Bad(
        "api-judgments-batch",
        "answers is not a list",
        "post",
        batch_url,
        400,
        "must be a non-empty list of answers",
        lambda w: {"answers": good_judgment(w)},
    ),
    Bad(
        "api-judgments-batch",
        "no answers",
        "post",
        batch_url,
        400,
        "must be a non-empty list of answers",
        lambda w: {"answers": []},
    ),
    Bad(
        "api-judgments-batch",
        "a single answer, not a batch",
        "post",
        batch_url,
        400,
        "nothing else",
        lambda w: good_judgment(w),
    ),
    Bad(
        "api-judgments-batch",
        "body is a JSON array",
        "post",
        batch_url,
        400,
        "nothing else",
        raw("[1, 2]"),
    ),
    Bad(
        "api-judgments-batch",
        "body over 256 KB",
        "post",
        batch_url,
        413,
        "Request body too large",
        lambda w: {"answers": [good_judgment(w, label="x" * 300_000)]},
    ),
    # --- POST /api/studies/<id>/judgments/ ----------------------------------------------------
    Bad(
        "api-judgments",
        "body is a JSON array",
        "post",
        judgments_url,
        400,
        "Expected a dictionary",
        raw("[1, 2]"),
    ),
    Bad(
        "api-judgments",
        "body is a JSON string",
        "post",
        judgments_url,
        400,
        "Expected a dictionary",
        raw('"comparable"'),
    ),
    Bad("api-judgments", "empty body", "post", judgments_url, 400, "This field is required", b""),
    # reasons (annotation/reasons.py): the shape by the serializer, the fields by the service
    Bad(
        "api-judgments",
        "reasons is a string, not a list",
        "post",
        judgments_url,
        400,
        "Expected a list of items",
        lambda w: good_judgment(w, reasons="age"),
    ),
    Bad(
        "api-judgments",
        "six reasons (at most 5)",
        "post",
        judgments_url,
        400,
        "no more than 5 elements",
        lambda w: good_judgment(w, reasons=list("abcdef")),
    ),
    Bad(
        "api-judgments",
        "a reason that is not text",
        "post",
        judgments_url,
        400,
        "Not a valid string",
        lambda w: good_judgment(w, reasons=[{"field": "age"}]),
    ),
    Bad(
        "api-judgments",
        "a reason with an unsure answer",
        "post",
        judgments_url,
        400,
        "reasons go with comparable or incomparable answers only",
        lambda w: good_judgment(w, label="unsure", reasons=["age"]),
    ),
    Bad(
        "api-judgments",
        "reasons in a study of words (no fields)",
        "post",
        judgments_url,
        400,
        "this study's items have none",
        lambda w: good_judgment(w, reasons=["age"]),
    ),
    Bad(
        "api-judgments",
        "truncated JSON",
        "post",
        judgments_url,
        400,
        "JSON parse error",
        raw('{"item_a": 1, "item_b":'),
    ),
    Bad(
        "api-judgments",
        "duplicate keys",
        "post",
        judgments_url,
        400,
        "duplicate key 'label'",
        lambda w: raw(json.dumps(good_judgment(w))[:-1] + ', "label": "incomparable"}'),
    ),
    Bad(
        "api-judgments",
        "NaN as an id",
        "post",
        judgments_url,
        400,
        "JSON parse error",
        lambda w: raw(
            json.dumps(good_judgment(w), allow_nan=True).replace(str(w.items[4].pk), "NaN", 1)
        ),
    ),
    Bad(
        "api-judgments",
        "Infinity as elapsed_ms",
        "post",
        judgments_url,
        400,
        "JSON parse error",
        lambda w: raw(json.dumps(good_judgment(w, elapsed_ms=float("inf")), allow_nan=True)),
    ),
    Bad(
        "api-judgments",
        "not UTF-8",
        "post",
        judgments_url,
        400,
        "JSON parse error",
        b'{"label": "\xff\xfe"}',
    ),
    Bad(
        "api-judgments",
        "id beyond a bigint",
        "post",
        judgments_url,
        400,
        "less than or equal to",
        lambda w: good_judgment(w, item_a=2**70),
    ),
    Bad(
        "api-judgments",
        "id as a float",
        "post",
        judgments_url,
        400,
        "A valid integer is required",
        lambda w: good_judgment(w, item_a=1.5),
    ),
    Bad(
        "api-judgments",
        "id as a boolean",
        "post",
        judgments_url,
        400,
        "A valid integer is required",
        lambda w: good_judgment(w, item_b=True),
    ),
    Bad(
        "api-judgments",
        "label as a list",
        "post",
        judgments_url,
        400,
        "label",
        lambda w: good_judgment(w, label=["comparable"]),
    ),
    Bad(
        "api-judgments",
        "client_id as a number",
        "post",
        judgments_url,
        400,
        "client_id",
        lambda w: good_judgment(w, client_id=5),
    ),
    Bad(
        "api-judgments",
        "elapsed_ms as text",
        "post",
        judgments_url,
        400,
        "elapsed_ms",
        lambda w: good_judgment(w, elapsed_ms="fast"),
    ),
    Bad(
        "api-judgments",
        "form-encoded, not JSON",
        "post",
        judgments_url,
        415,
        "Unsupported media type",
        raw("item_a=1"),
        "text/plain",
    ),
    Bad(
        "api-judgments",
        "unknown study",
        "post",
        lambda w: reverse("api-judgments", args=[999_999]),
        404,
        "No such study",
        good_judgment,
    ),
    Bad(
        "api-judgments",
        "another study (not a member)",
        "post",
        lambda w: reverse("api-judgments", args=[B(w)]),
        404,
        "No such study",
        good_judgment,
    ),
    # --- GET /api/studies/<id>/judgments/ -----------------------------------------------------
    Bad(
        "api-judgments",
        "limit not a number",
        "get",
        lambda w: judgments_url(w) + "?limit=ten",
        400,
        "must be an integer",
    ),
    Bad(
        "api-judgments",
        "limit zero",
        "get",
        lambda w: judgments_url(w) + "?limit=0",
        400,
        "between 1 and 200",
    ),
    Bad(
        "api-judgments",
        "negative before",
        "get",
        lambda w: judgments_url(w) + "?before=-3",
        400,
        "before",
    ),
]

# (endpoint, bad input, the test that covers it)
ELSEWHERE = [
    (
        "api-judgments-batch",
        "malformed answers (not an object, bad label, bad client_id, unknown item) next to good "
        "ones: 200, an error result for each bad one, the good ones stored",
        "tests.annotation.test_batch::test_mixed_good_and_bad_answers_are_settled_one_by_one",
    ),
    (
        "api-judgments",
        "malformed JSON; body over 8 KB (413)",
        "tests.annotation.test_api::test_malformed_json_and_oversized_bodies_are_refused",
    ),
    (
        "api-judgments",
        "unknown item, same item twice, bad label/client_id/elapsed_ms, "
        "wrong types, missing fields, item of another space",
        "tests.annotation.test_api::test_bad_judgments_answer_4xx_with_a_message_and_store_nothing",
    ),
    (
        "api-judgments",
        "client_id reused for another answer (409)",
        "tests.annotation.test_api::test_reusing_a_client_id_for_another_answer_is_409",
    ),
    (
        "api-judgments",
        "closed study",
        "tests.annotation.test_api::test_closed_study_refuses_answers",
    ),
    (
        "api-judgments",
        "an answer beyond the target of a study that stops there",
        "tests.annotation.test_views::test_reaching_the_target_leads_to_the_completion_page",
    ),
]

NO_INPUT: set[str] = set()
