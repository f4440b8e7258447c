"""Bad inputs of the rest of the annotator's API around a pair: skips, comments, undoing
an answer (DELETE judgments/<ref>/), the next pair, item search and the study."""

from __future__ import annotations

from django.urls import reverse

from .cases import A, B, Bad

CASES: list[Bad] = [
    # --- POST /api/studies/<id>/skips/ and comments/ ------------------------------------------
    Bad(
        "api-skips",
        "the same item twice",
        "post",
        lambda w: reverse("api-skips", args=[A(w)]),
        400,
        "two different items",
        lambda w: {"item_a": w.items[2].pk, "item_b": w.items[2].pk},
    ),
    Bad(
        "api-skips",
        "an item of no pool",
        "post",
        lambda w: reverse("api-skips", args=[A(w)]),
        400,
        "not in this study's pool",
        lambda w: {"item_a": w.items[2].pk, "item_b": 999_999},
    ),
    Bad(
        "api-comments",
        "no text",
        "post",
        lambda w: reverse("api-comments", args=[A(w)]),
        400,
        "text",
        lambda w: {
            "item_a": w.items[2].pk,
            "item_b": w.items[3].pk,
            "text": "   ",
            "client_id": "6f1c7a52-5a49-4a4e-9b8e-3f5d2a9b1c02",
        },
    ),
    Bad(
        "api-comments",
        "text too long",
        "post",
        lambda w: reverse("api-comments", args=[A(w)]),
        400,
        "500 characters",
        lambda w: {
            "item_a": w.items[2].pk,
            "item_b": w.items[3].pk,
            "text": "x" * 501,
            "client_id": "6f1c7a52-5a49-4a4e-9b8e-3f5d2a9b1c03",
        },
    ),
    # --- DELETE /api/studies/<id>/judgments/<ref>/ (undo) -------------------------------------
    Bad(
        "api-judgment",
        "ref neither id nor uuid",
        "delete",
        lambda w: reverse("api-judgment", args=[A(w), "last-one"]),
        400,
        "must be a judgment id or a client_id",
    ),
    Bad(
        "api-judgment",
        "unknown id",
        "delete",
        lambda w: reverse("api-judgment", args=[A(w), 999_999]),
        404,
        "No such judgment",
    ),
    Bad(
        "api-judgment",
        "unknown client_id",
        "delete",
        lambda w: reverse("api-judgment", args=[A(w), "6f1c7a52-5a49-4a4e-9b8e-3f5d2a9b1c01"]),
        404,
        "No such judgment",
    ),
    Bad(
        "api-judgment",
        "another user's answer",
        "delete",
        lambda w: reverse("api-judgment", args=[A(w), w.judgment.pk]),
        403,
        "only undo your own",
        role="rev_a",
    ),
    Bad(
        "api-judgment",
        "A's answer through study B",
        "delete",
        lambda w: reverse("api-judgment", args=[B(w), w.judgment.pk]),
        404,
        "No such judgment",
        role="ann_b",
    ),
    # --- GET endpoints with query parameters --------------------------------------------------
    Bad(
        "api-next-pair",
        "too many held pairs",
        "get",
        lambda w: (
            reverse("api-next-pair", args=[A(w)])
            + "?exclude="
            + ",".join(f"{i}-{i + 1}" for i in range(1, 50))
        ),
        400,
        "at most 40",
    ),
    Bad(
        "api-items",
        "neither space nor study",
        "get",
        lambda w: reverse("api-items"),
        400,
        "give a space or a study",
    ),
    Bad(
        "api-items",
        "unknown space",
        "get",
        lambda w: reverse("api-items") + "?space=999999",
        404,
        "No such embedding space",
    ),
    Bad(
        "api-items",
        "study one is not in",
        "get",
        lambda w: reverse("api-items") + f"?study={B(w)}",
        404,
        "No such study",
    ),
    Bad(
        "api-items",
        "query over 255 characters",
        "get",
        lambda w: reverse("api-items") + f"?study={A(w)}&q=" + "x" * 256,
        400,
        "at most 255",
    ),
    Bad(
        "api-items",
        "limit not a number",
        "get",
        lambda w: reverse("api-items") + f"?study={A(w)}&limit=all",
        400,
        "must be an integer",
    ),
    Bad(
        "api-study",
        "unknown study",
        "get",
        lambda w: reverse("api-study", args=[999_999]),
        404,
        "No such study",
    ),
]

# (endpoint, bad input, the test that covers it)
ELSEWHERE = [
    (
        "api-judgment",
        "another annotator's answer",
        "tests.annotation.test_api::test_undo_by_id_or_client_id_only_for_ones_own",
    ),
    (
        "api-next-pair",
        "malformed exclude",
        "tests.annotation.test_api::test_next_pair_rejects_a_malformed_exclude",
    ),
    (
        "api-items",
        "a space of no study of the user",
        "tests.annotation.test_api_groups::test_item_search_needs_membership",
    ),
]

# Taking no input beyond authentication (covered by the authorization matrix).
NO_INPUT = {"api-studies"}
