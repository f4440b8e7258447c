"""Bad inputs of the adjudication page and API: decisions that are not comparable or
incomparable, pairs nobody answered, unknown filters."""

from __future__ import annotations

from django.urls import reverse

from .cases import A, Bad


def page(w) -> str:
    return reverse("annotation:adjudication", args=[A(w)])


def api(w) -> str:
    return reverse("api-adjudications", args=[A(w)])


def answered(w, label="comparable") -> dict:
    return {"item_a": w.items[0].pk, "item_b": w.items[1].pk, "label": label}


def unanswered(w) -> dict:
    return {"item_a": w.items[5].pk, "item_b": w.items[6].pk, "label": "comparable"}


CASES: list[Bad] = [
    # --- the page -----------------------------------------------------------------------------
    Bad(
        "annotation:adjudication",
        "decision 'unsure'",
        "post",
        page,
        400,
        "Select a valid choice",
        lambda w: answered(w, "unsure"),
        content_type="multipart",
        role="rev_a",
    ),
    Bad(
        "annotation:adjudication",
        "a pair nobody answered",
        "post",
        page,
        400,
        "Nobody answered this pair",
        unanswered,
        content_type="multipart",
        role="rev_a",
    ),
    Bad(
        "annotation:adjudication",
        "unknown agreement filter",
        "get",
        lambda w: page(w) + "?agreement=maybe",
        400,
        "Select a valid choice",
        role="rev_a",
    ),
    Bad(
        "annotation:adjudication",
        "annotator filter not a person who answered",
        "get",
        lambda w: page(w) + "?annotator=999999",
        400,
        "Select a valid choice",
        role="rev_a",
    ),
    Bad(
        "annotation:adjudication",
        "a pair nobody answered, asked for",
        "get",
        lambda w: page(w) + f"?pair={w.items[5].pk}-{w.items[6].pk}",
        404,
        "Nobody answered this pair",
        role="rev_a",
    ),
    # --- the API ------------------------------------------------------------------------------
    Bad(
        "api-adjudications",
        "decision 'unsure'",
        "post",
        api,
        400,
        "label",
        lambda w: answered(w, "unsure"),
        role="rev_a",
    ),
    Bad(
        "api-adjudications",
        "the same item twice",
        "post",
        api,
        400,
        "two different items",
        lambda w: {"item_a": w.items[0].pk, "item_b": w.items[0].pk, "label": "comparable"},
        role="rev_a",
    ),
    Bad(
        "api-adjudications",
        "a pair nobody answered",
        "post",
        api,
        400,
        "Nobody answered this pair",
        unanswered,
        role="rev_a",
    ),
    Bad(
        "api-adjudications",
        "gold by a reviewer",
        "post",
        api,
        403,
        "Only admins of the study set gold pairs",
        lambda w: answered(w) | {"gold": True},
        role="rev_a",
    ),
    Bad(
        "api-adjudications",
        "item id not a number",
        "post",
        api,
        400,
        "item_a",
        lambda w: {"item_a": "one", "item_b": w.items[1].pk, "label": "comparable"},
        role="rev_a",
    ),
    Bad(
        "api-disagreements",
        "unknown agreement filter",
        "get",
        lambda w: reverse("api-disagreements", args=[A(w)]) + "?agreement=maybe",
        400,
        "must be one of",
        role="rev_a",
    ),
    Bad(
        "api-disagreements",
        "limit out of range",
        "get",
        lambda w: reverse("api-disagreements", args=[A(w)]) + "?limit=0",
        400,
        "between 1 and 1000",
        role="rev_a",
    ),
]

ELSEWHERE: list[tuple[str, str, str]] = []
NO_INPUT: set[str] = set()
