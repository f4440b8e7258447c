"""Bad inputs of the comparable-group API: /api/studies/<id>/groups/, groups/<id>/ and
the member suggestions."""

from __future__ import annotations

from django.urls import reverse

from ..conftest import World
from .cases import A, Bad, raw


def groups_url(w: World) -> str:
    return reverse("api-groups", args=[A(w)])


CASES: list[Bad] = [
    # --- /api/studies/<id>/groups/ ------------------------------------------------------------
    Bad(
        "api-groups",
        "body is a JSON array",
        "post",
        groups_url,
        400,
        "Expected a dictionary",
        raw('["g"]'),
    ),
    Bad(
        "api-groups",
        "duplicate keys",
        "post",
        groups_url,
        400,
        "duplicate key 'name'",
        raw('{"name": "a", "name": "b"}'),
    ),
    Bad(
        "api-groups",
        "lone surrogate in the name",
        "post",
        groups_url,
        400,
        "not valid Unicode text",
        raw('{"name": "g\\ud800"}'),
    ),
    Bad(
        "api-groups",
        "NUL in the name",
        "post",
        groups_url,
        400,
        "contains a NUL character",
        raw('{"name": "g\\u0000"}'),
    ),
    Bad(
        "api-groups",
        "member id beyond a bigint",
        "post",
        groups_url,
        400,
        "less than or equal to",
        {"name": "g", "members": [2**64]},
    ),
    Bad(
        "api-groups",
        "too many members",
        "post",
        groups_url,
        400,
        "no more than",
        lambda w: {"name": "g", "members": list(range(1, 5002))},
    ),
    Bad(
        "api-groups",
        "body over 64 KB",
        "post",
        groups_url,
        413,
        "too large",
        lambda w: {"name": "g", "members": [1] * 30_000},
    ),
    Bad(
        "api-groups",
        "members of another space",
        "post",
        groups_url,
        400,
        "not in",
        lambda w: {"name": "g", "members": [w.items[0].pk, 10**9]},
    ),
    Bad(
        "api-group",
        "unknown group",
        "get",
        lambda w: reverse("api-group", args=[A(w), 999_999]),
        404,
        "No ComparableGroup",
    ),
    Bad(
        "api-group",
        "B's group through study A",
        "patch",
        lambda w: reverse("api-group", args=[A(w), w.group_b.pk]),
        404,
        "No ComparableGroup",
        {"name": "mine now"},
    ),
    Bad(
        "api-group",
        "A's group by a member of B",
        "patch",
        lambda w: reverse("api-group", args=[A(w), w.group.pk]),
        404,
        "No such study",
        {"name": "mine now"},
        role="ann_b",
    ),
    Bad(
        "api-group",
        "add is not a list",
        "patch",
        lambda w: reverse("api-group", args=[A(w), w.group.pk]),
        400,
        "add",
        {"add": "1,2"},
    ),
    Bad(
        "api-group",
        "name too long",
        "patch",
        lambda w: reverse("api-group", args=[A(w), w.group.pk]),
        400,
        "no more than 200",
        {"name": "g" * 201},
    ),
    Bad(
        "api-group",
        "malformed JSON",
        "patch",
        lambda w: reverse("api-group", args=[A(w), w.group.pk]),
        400,
        "JSON parse error",
        raw("{name: 1}"),
    ),
    Bad(
        "api-suggestions",
        "k zero",
        "get",
        lambda w: reverse("api-suggestions", args=[A(w)]) + "?k=0",
        400,
        "between 1 and 50",
    ),
    Bad(
        "api-suggestions",
        "members not ids",
        "get",
        lambda w: reverse("api-suggestions", args=[A(w)]) + "?members=a,b",
        400,
        "comma-separated item ids",
    ),
    Bad(
        "api-suggestions",
        "unknown group",
        "get",
        lambda w: reverse("api-suggestions", args=[A(w)]) + "?group=999999",
        404,
        "No ComparableGroup",
    ),
    Bad(
        "api-suggestions",
        "B's group",
        "get",
        lambda w: reverse("api-suggestions", args=[A(w)]) + f"?group={w.group_b.pk}",
        404,
        "No ComparableGroup",
    ),
]

# (endpoint, bad input, the test that covers it)
ELSEWHERE = [
    (
        "api-groups",
        "no name, empty/long name, member not an id or unknown, members as text",
        "tests.annotation.test_api_groups::test_bad_groups_are_refused",
    ),
    (
        "api-groups",
        "duplicate group name (409)",
        "tests.annotation.test_api_groups::test_duplicate_group_name_is_409",
    ),
    (
        "api-group",
        "another annotator's group",
        "tests.annotation.test_api_groups::test_groups_create_list_patch_and_history",
    ),
]

NO_INPUT: set[str] = set()
