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
    # --- the set-up API (admins of the study; staff create studies)
    Bad(
        "api-studies",
        "a study without a space",
        "post",
        lambda w: reverse("api-studies"),
        400,
        "space",
        {"name": "no space"},
        role="su",
    ),
    Bad(
        "api-studies",
        "a name already taken",
        "post",
        lambda w: reverse("api-studies"),
        409,
        "already exists",
        lambda w: {"name": w.study_a.name, "space": w.study_a.space_id},
        role="su",
    ),
    Bad(
        "api-study",
        "overlap 0",
        "patch",
        lambda w: reverse("api-study", args=[A(w)]),
        400,
        "Overlap k is between 1 and",
        {"overlap": 0},
        role="adm_a",
    ),
    Bad(
        "api-study",
        "overlap past the column (32,768)",
        "patch",
        lambda w: reverse("api-study", args=[A(w)]),
        400,
        "Overlap k is between 1 and",
        {"overlap": 32768},
        role="adm_a",
    ),
    Bad(
        "api-study",
        "a target past the column (2**31)",
        "patch",
        lambda w: reverse("api-study", args=[A(w)]),
        400,
        "The target is between 1 and",
        {"target_per_annotator": 2**31},
        role="adm_a",
    ),
    Bad(
        "api-study-pool",
        "unknown keys",
        "post",
        lambda w: reverse("api-study-pool", args=[A(w)]),
        400,
        "2 unknown key(s)",
        {"keys": ["w001", "nope", "nor-this"]},
        role="adm_a",
    ),
    Bad(
        "api-study-candidate-pairs",
        "a pair of one key",
        "post",
        lambda w: reverse("api-study-candidate-pairs", args=[A(w)]),
        400,
        "pair 1: expected two keys",
        {"pairs": [["w001"], ["w002", "w003"]]},
        role="adm_a",
    ),
    Bad(
        "api-study-gold-pairs",
        "a label that is no label",
        "post",
        lambda w: reverse("api-study-gold-pairs", args=[A(w)]),
        400,
        "maybe",
        {"pairs": [["w001", "w002", "maybe"]]},
        role="adm_a",
    ),
    Bad(
        "api-study-members",
        "nobody to add or invite",
        "post",
        lambda w: reverse("api-study-members", args=[A(w)]),
        400,
        "Give a user to add, or a username or e-mail to invite",
        {"role": "annotator"},
        role="adm_a",
    ),
    Bad(
        "api-study-members",
        "a target past the column (2**31)",
        "post",
        lambda w: reverse("api-study-members", args=[A(w)]),
        400,
        "less than or equal to 1000000",
        {"username": "newcomer", "target": 2**31},
        role="adm_a",
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
    (
        "api-items",
        "a non-finite number (age:>inf, >nan, >1e309): matches nothing, no 500",
        "tests.annotation.test_outside_input::"
        "test_a_non_finite_number_in_the_item_search_matches_nothing",
    ),
]

# Taking no input beyond authentication (covered by the authorization matrix).
NO_INPUT: set[str] = set()
