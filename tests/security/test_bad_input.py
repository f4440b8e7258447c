"""The bad-input catalog: every API endpoint, form and import path × the bad inputs it can get.

Each row of ``CATALOG`` sends one bad request and expects a 4xx answer whose body carries a
readable message, with no row written anywhere (every model of annotation, learning, auth and
audit is counted before and after). ``COMMANDS`` does the same for the management commands
(one ``CommandError`` line). Cases tested elsewhere are listed in ``COVERED_ELSEWHERE`` with the
test that covers them (checked to exist), so this file is the one index of bad inputs; every
endpoint of the authorization matrix must appear in one of the two lists.

Policy: malformed or ambiguous JSON (syntax errors, duplicate keys, NaN/Infinity) → 400;
wrong types and out-of-range values → 400 naming the field; bodies over the endpoint's limit
→ 413 (API) or 400 (forms over DATA_UPLOAD_MAX_MEMORY_SIZE); unsupported media types → 415;
unknown ids → 404; a study one is not a member of, and its objects → 404, as for a study that does
not exist (annotation.access); another user's private objects → 404.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.urls import reverse

from .conftest import World
from .test_authorization_matrix import MATRIX


def A(w: World) -> int:
    return w.study_a.pk


def B(w: World) -> int:
    return w.study_b.pk


def judgments_url(w):
    return reverse("api-judgments", args=[A(w)])


def batch_url(w):
    return reverse("api-judgments-batch", args=[A(w)])


def groups_url(w):
    return reverse("api-groups", args=[A(w)])


def good_judgment(w, **change) -> dict:
    body = {
        "item_a": w.items[4].pk,
        "item_b": w.items[5].pk,
        "label": "comparable",
        "client_id": "6f1c7a52-5a49-4a4e-9b8e-3f5d2a9b1c01",
    }
    return {**body, **change}


@dataclass(frozen=True)
class Bad:
    endpoint: str  # a key of the authorization matrix
    what: str
    method: str
    url: Callable[[World], str]
    status: int
    message: str
    body: Callable[[World], object] | bytes | str | None = None
    content_type: str = "application/json"
    role: str = "ann_a"


def upload(name: str, content: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content)


def raw(text: str) -> bytes:
    return text.encode()


CATALOG: list[Bad] = [
    # --- POST /api/studies/<id>/judgments/batch/ (per-answer problems: COVERED_ELSEWHERE) ------
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
    # --- POST /api/studies/<id>/judgments/ ---------------------------------------------------
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
    # --- GET /api/studies/<id>/judgments/ ----------------------------------------------------
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
    # --- DELETE /api/studies/<id>/judgments/<ref>/ -------------------------------------------
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
    # --- /api/studies/<id>/groups/ -----------------------------------------------------------
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
    # --- GET endpoints with query parameters -------------------------------------------------
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
    # --- Export API (reviewer of A) ----------------------------------------------------------
    Bad(
        "api-version",
        "unknown version",
        "get",
        lambda w: reverse("api-version", args=[999_999]),
        404,
        "No MetricVersion",
        role="rev_a",
    ),
    Bad(
        "api-version",
        "another study's version",
        "get",
        lambda w: reverse("api-version", args=[w.version_b.pk]),
        404,
        "No such study",
        role="rev_a",
    ),
    Bad(
        "api-version-sigma",
        "another study's Sigma",
        "get",
        lambda w: reverse("api-version-sigma", args=[w.version_b.pk, "npy"]),
        404,
        "No such study",
        role="rev_a",
    ),
    Bad(
        "api-published",
        "another study",
        "get",
        lambda w: reverse("api-published", args=[B(w), "face"]),
        404,
        "No such study",
        role="rev_a",
    ),
    Bad(
        "api-published-sigma",
        "unknown study",
        "get",
        lambda w: reverse("api-published-sigma", args=[999_999, "face", "npy"]),
        404,
        "No such study",
        role="rev_a",
    ),
    Bad(
        "api-export-judgments",
        "unknown format",
        "get",
        lambda w: reverse("api-export-judgments", args=[A(w), "xml"]),
        404,
        "Unknown format 'xml'",
        role="rev_a",
    ),
    Bad(
        "api-export-groups",
        "another study",
        "get",
        lambda w: reverse("api-export-groups", args=[B(w), "csv"]),
        404,
        "No such study",
        role="rev_a",
    ),
    # --- Pages -------------------------------------------------------------------------------
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
    Bad(
        "learning:study-dashboard",
        "unknown study",
        "get",
        lambda w: reverse("learning:study-dashboard", args=[999_999]),
        404,
        "Not found",
        role="rev_a",
    ),
    Bad(
        "learning:study-dashboard-status",
        "unknown study",
        "get",
        lambda w: reverse("learning:study-dashboard-status", args=[999_999]),
        404,
        "Not found",
        role="rev_a",
    ),
    Bad(
        "learning:study-weat",
        "another study",
        "get",
        lambda w: reverse("learning:study-weat", args=[B(w)]),
        404,
        "No such study",
        role="rev_a",
    ),
    Bad(
        "learning:study-weat-test",
        "a test of no suite of the study",
        "get",
        lambda w: reverse("learning:study-weat-test", args=[B(w), w.weat_test.pk]),
        404,
        "Not found",
        role="su",
    ),
    Bad(
        "learning:study-drift",
        "unknown study",
        "get",
        lambda w: reverse("learning:study-drift", args=[999_999]),
        404,
        "Not found",
        role="rev_a",
    ),
    Bad(
        "learning:version-compare",
        "ids not numbers",
        "get",
        lambda w: reverse("learning:version-compare") + "?a=first&b=second",
        404,
        "Give the versions to compare",
        role="rev_a",
    ),
    Bad(
        "learning:version-compare",
        "one version missing",
        "get",
        lambda w: reverse("learning:version-compare") + f"?a={w.version.pk}",
        404,
        "Give the versions to compare",
        role="rev_a",
    ),
    Bad(
        "learning:version-compare",
        "a version of another study",
        "get",
        lambda w: reverse("learning:version-compare") + f"?a={w.version.pk}&b={w.version_b.pk}",
        404,
        "No such study",
        role="rev_a",
    ),
    Bad(
        "learning:version-detail",
        "unknown version",
        "get",
        lambda w: reverse("learning:version-detail", args=[999_999]),
        404,
        "Not found",
        role="rev_a",
    ),
    Bad(
        "learning:version-publish",
        "another study's version",
        "post",
        lambda w: reverse("learning:version-publish", args=[w.version_b.pk]),
        404,
        "No such study",
        {},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "learning:version-publish",
        "unknown version",
        "post",
        lambda w: reverse("learning:version-publish", args=[999_999]),
        404,
        "Not found",
        {},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "accounts:tokens",
        "no name",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "Give the token a name",
        {},
        "multipart",
        role="rev_a",  # only those who may export create tokens
    ),
    Bad(
        "accounts:tokens",
        "blank name",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "Give the token a name",
        {"name": "   "},
        "multipart",
        role="rev_a",  # only those who may export create tokens
    ),
    Bad(
        "accounts:tokens",
        "name over 100 characters",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "at most 100 characters",
        {"name": "n" * 101},
        "multipart",
        role="rev_a",  # only those who may export create tokens
    ),
    Bad(
        "accounts:tokens",
        "form body over 2 MB",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "Bad request",
        {"name": "n" * (3 * 1024 * 1024)},
        "multipart",
        role="rev_a",  # only those who may export create tokens
    ),
    Bad(
        "accounts:tokens",
        "an annotator only (could export nothing)",
        "post",
        lambda w: reverse("accounts:tokens"),
        403,
        "You review or administer no study",
        {"name": "job"},
        "multipart",
    ),
    Bad(
        "accounts:token-revoke",
        "unknown token",
        "post",
        lambda w: reverse("accounts:token-revoke", args=[999_999]),
        404,
        "No such token",
        {},
        "multipart",
    ),
    # --- study set-up pages (admins of the study; staff for a new study) --------------------
    Bad(
        "annotation:study-new",
        "gold rate over 1, overlap 0",
        "post",
        lambda w: reverse("annotation:study-new"),
        400,
        "between 0 and 1",
        {
            "name": "n",
            "mode": "pairs",
            "space": "1",
            "pool": "all",
            "strategy": "random",
            "overlap": "0",
            "gold_rate": "2",
            "target_per_annotator": "5",
        },
        "multipart",
        role="su",
    ),
    Bad(
        "annotation:study-new",
        "a taken name",
        "post",
        lambda w: reverse("annotation:study-new"),
        400,
        "already exists",
        lambda w: {
            "name": "Study A",
            "mode": "pairs",
            "space": w.study_a.space_id,
            "pool": "all",
            "strategy": "random",
            "overlap": "2",
            "gold_rate": "0",
            "target_per_annotator": "5",
        },
        "multipart",
        role="su",
    ),
    Bad(
        "annotation:study-settings",
        "no name, tags pool without tags",
        "post",
        lambda w: reverse("annotation:study-settings", args=[A(w)]),
        400,
        "Choose at least one tag",
        lambda w: {
            "name": "",
            "mode": "pairs",
            "space": w.study_a.space_id,
            "pool": "tags",
            "strategy": "random",
            "overlap": "2",
            "gold_rate": "0",
            "target_per_annotator": "5",
        },
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-items",
        "unknown keys",
        "post",
        lambda w: reverse("annotation:study-items", args=[A(w)]),
        400,
        "2 unknown key(s)",
        {"text": "w001\nnot-a-key\nnor-this"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-items",
        "neither file nor text",
        "post",
        lambda w: reverse("annotation:study-items", args=[A(w)]),
        400,
        "Choose a file or paste some lines",
        {},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-pairs",
        "three columns",
        "post",
        lambda w: reverse("annotation:study-pairs", args=[A(w)]),
        400,
        "expected 2 columns",
        {"text": "w001,w002,w003"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-gold",
        "a bad label",
        "post",
        lambda w: reverse("annotation:study-gold", args=[A(w)]),
        400,
        "the label must be comparable or incomparable",
        {"text": "w001,w002,maybe", "confirm": "1"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-gold",
        "a key of no item of the pool",
        "post",
        lambda w: reverse("annotation:study-gold", args=[A(w)]),
        400,
        "not in this study",
        {"text": "w001,ghost,comparable", "confirm": "1"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-members",
        "add someone unknown",
        "post",
        lambda w: reverse("annotation:study-members", args=[A(w)]),
        400,
        "invite them instead",
        {"action": "add", "add-who": "ghost", "add-role": "annotator"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-members",
        "invite with a bad e-mail and a taken username",
        "post",
        lambda w: reverse("annotation:study-members", args=[A(w)]),
        400,
        "Enter a valid email address",
        {
            "action": "invite",
            "invite-username": "x",
            "invite-email": "no",
            "invite-role": "annotator",
        },
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-members",
        "invite a taken username",
        "post",
        lambda w: reverse("annotation:study-members", args=[A(w)]),
        400,
        "is taken",
        {"action": "invite", "invite-username": "ann_b", "invite-role": "annotator"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-member",
        "an unknown role",
        "post",
        lambda w: reverse(
            "annotation:study-member", args=[A(w), w.users["ann_a"].memberships.get().pk]
        ),
        400,
        "Select a valid choice",
        {"role": "boss"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-member-remove",
        "another study's member",
        "post",
        lambda w: reverse(
            "annotation:study-member-remove", args=[A(w), w.users["ann_b"].memberships.get().pk]
        ),
        404,
        "No such member",
        {},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-duplicate",
        "no name",
        "post",
        lambda w: reverse("annotation:study-duplicate", args=[A(w)]),
        400,
        "Give the copy a name",
        {"name": ""},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:markdown-preview",
        "text over 100,000 characters",
        "post",
        lambda w: reverse("annotation:markdown-preview"),
        400,
        "too long",
        {"text": "x" * 100_001},
        "multipart",
    ),
    Bad(
        "accounts:invitation",
        "a forged link",
        "get",
        lambda w: reverse("accounts:invitation", args=["MQ", "abc-def"]),
        200,
        "does not work",
        role="anon",
    ),
    Bad(
        "spaces:upload",
        "no file",
        "post",
        lambda w: reverse("spaces:upload"),
        400,
        "This field is required",
        {"name": "s", "format": "auto"},
        "multipart",
        role="su",
    ),
    Bad(
        "spaces:upload",
        "negative limit",
        "post",
        lambda w: reverse("spaces:upload"),
        400,
        "greater than or equal to",
        {"name": "s", "format": "auto", "limit": "-1"},
        "multipart",
        role="su",
    ),
    Bad(
        "spaces:upload",
        "unknown format",
        "post",
        lambda w: reverse("spaces:upload"),
        400,
        "Select a valid choice",
        {"name": "s", "format": "exe"},
        "multipart",
        role="su",
    ),
    Bad(
        "spaces:records-upload",
        "malformed CSV row",
        "post",
        lambda w: reverse("spaces:records-upload"),
        400,
        "line 3: 3 fields where the header has 2",
        lambda w: {"name": "r", "file": upload("t.csv", b"a,b\n1,2\n1,2,3\n")},
        "multipart",
        role="su",
    ),
    Bad(
        "spaces:records-upload",
        "empty file",
        "post",
        lambda w: reverse("spaces:records-upload"),
        400,
        "The submitted file is empty",
        lambda w: {"name": "r", "file": upload("t.csv", b"")},
        "multipart",
        role="su",
    ),
    Bad(
        "spaces:records-upload",
        "not UTF-8",
        "post",
        lambda w: reverse("spaces:records-upload"),
        400,
        "line 2: the file is not UTF-8 text",
        lambda w: {"name": "r", "file": upload("t.csv", b"a\ncaf\xe9\n")},
        "multipart",
        role="su",
    ),
    Bad(
        "spaces:records-columns",
        "unknown column for the label",
        "post",
        lambda w: reverse("spaces:records-columns", args=[w.records_import.pk]),
        400,
        "Select a valid choice",
        {"role_0": "numeric", "role_1": "categorical", "label_column": "income"},
        "multipart",
        role="su",
    ),
    Bad(
        "spaces:records-columns",
        "a text column declared numeric",
        "post",
        lambda w: reverse("spaces:records-columns", args=[w.records_import.pk]),
        400,
        "column &#x27;sex&#x27;, row 1: &#x27;F&#x27; is not a number",
        {"role_0": "numeric", "role_1": "numeric"},
        "multipart",
        role="su",
    ),
    Bad(
        "spaces:records-columns",
        "unknown upload",
        "get",
        lambda w: reverse("spaces:records-columns", args=[999_999]),
        404,
        "Not found",
        role="su",
    ),
    Bad(
        "spaces:records-shown",
        "unknown space",
        "post",
        lambda w: reverse("spaces:records-shown", args=[999_999]),
        404,
        "Not found",
        {"shown_0": "on"},
        "multipart",
        role="su",
    ),
    Bad(
        "spaces:records-shown",
        "a word space has no columns to show",
        "get",
        lambda w: reverse("spaces:records-shown", args=[w.study_a.space_id]),
        404,
        "Not found",
        role="su",
    ),
    Bad(
        "spaces:texts-upload",
        "no file",
        "post",
        lambda w: reverse("spaces:texts-upload"),
        400,
        "This field is required",
        {"name": "t", "text_column": "text"},
        "multipart",
        role="su",
    ),
    Bad(
        "api-feature-map",
        "a space of vectors (no feature map)",
        "get",
        lambda w: reverse("api-feature-map", args=[A(w)]),
        404,
        "only record spaces have a feature map",
        role="rev_a",
    ),
    Bad(
        "api-feature-map",
        "another study",
        "get",
        lambda w: reverse("api-feature-map", args=[B(w)]),
        404,
        "No such study",
        role="rev_a",
    ),
    Bad(
        "spaces:import",
        "unknown import",
        "get",
        lambda w: reverse("spaces:import", args=[999_999]),
        404,
        "Not found",
        role="su",
    ),
    Bad(
        "spaces:import-status",
        "unknown import",
        "get",
        lambda w: reverse("spaces:import-status", args=[999_999]),
        404,
        "Not found",
        role="su",
    ),
    Bad(
        "accounts:login",
        "username over 150 characters",
        "post",
        lambda w: reverse("accounts:login"),
        200,
        "Please enter a correct username",
        {"username": "u" * 5000, "password": "p"},
        "multipart",
        role="anon",
    ),
]

# (endpoint or import path, bad input, the test that covers it)
COVERED_ELSEWHERE = [
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
    (
        "annotation:study-items",
        "a file that is not UTF-8",
        "tests.annotation.test_setup_pages::test_upload_pages_show_unknown_keys_and_write_nothing",
    ),
    (
        "annotation:study-gold",
        "a key of another space (service, model form, Django admin)",
        "tests.annotation.test_setup::test_a_cross_space_gold_pair_is_refused_by_the_django_admin",
    ),
    (
        "api-judgment",
        "another annotator's answer",
        "tests.annotation.test_api::test_undo_by_id_or_client_id_only_for_ones_own",
    ),
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
        "api-version-sigma",
        "unknown method, unknown format, nothing published",
        "tests.learning.test_export::test_missing_published_unknown_method_and_format_are_404",
    ),
    (
        "api-published",
        "unknown method",
        "tests.learning.test_export::test_missing_published_unknown_method_and_format_are_404",
    ),
    (
        "api-export-judgments",
        "annotator (not a reviewer)",
        "tests.learning.test_export::test_annotators_cannot_export_judgments",
    ),
    (
        "accounts:token-revoke",
        "another user's token",
        "tests.learning.test_export::test_a_user_cannot_revoke_someone_elses_token",
    ),
    (
        "learning:version-publish",
        "a failed version",
        "tests.learning.test_permissions_pages::"
        "test_publishing_a_failed_version_is_refused_with_a_message",
    ),
    (
        "spaces:upload",
        "unreadable files, NaN/inf vectors, mixed dimensions",
        "tests.spaces.test_space_upload::test_a_bad_file_is_a_form_error_and_nothing_is_stored",
    ),
    (
        "spaces:upload",
        "a file over MAX_UPLOAD_MB",
        "tests.spaces.test_space_upload::test_files_over_the_size_limit_are_refused",
    ),
    (
        "spaces:upload",
        "a body over the limit, refused unread",
        "tests.spaces.test_space_upload::test_a_huge_body_is_refused_before_it_is_read",
    ),
    (
        "spaces:records-upload",
        "malformed CSV/Parquet, empty, header only, non-UTF-8, duplicate column, unknown format",
        "tests.spaces.test_table_uploads::test_bad_record_files_are_form_errors_and_leave_nothing",
    ),
    (
        "spaces:records-upload",
        "a file over MAX_TABLE_MB (form error) and a body refused unread (413)",
        "tests.spaces.test_table_uploads::test_too_large_table_is_refused_unread",
    ),
    (
        "spaces:records-columns",
        "unknown column, bad roles, label or key inside φ, nothing to embed",
        "tests.spaces.test_table_uploads::"
        "test_bad_column_choices_keep_the_upload_and_create_nothing",
    ),
    (
        "spaces:texts-upload",
        "JSONL with a bad line, not objects, blank text, unknown column, duplicate key, non-UTF-8",
        "tests.spaces.test_table_uploads::test_bad_text_files_are_form_errors_and_leave_nothing",
    ),
    (
        "spaces:texts-upload",
        "the optional extra missing",
        "tests.spaces.test_table_uploads::test_text_upload_says_plainly_when_the_extra_is_missing",
    ),
    (
        "spaces:upload",
        "a space name already taken",
        "tests.spaces.test_space_upload::test_a_taken_name_is_a_form_error",
    ),
    ("accounts:login", "wrong password", "tests.test_auth::test_wrong_password_shows_a_form_error"),
    (
        "accounts:login",
        "repeated failures (429)",
        "tests.security.test_rate_limits::test_failed_logins_lock_the_username_from_that_address",
    ),
    (
        "import_embeddings",
        "NaN/inf, mixed dimensions, duplicate keys, bad headers, empty keys",
        "tests.spaces.test_import_embeddings::"
        "test_bad_text_input_names_the_line_and_stores_nothing",
    ),
    (
        "import_embeddings",
        "binary NaN and duplicate keys",
        "tests.spaces.test_import_embeddings::test_binary_nan_and_duplicate_name_the_record",
    ),
    (
        "import_embeddings",
        "npy: inf, wrong shape, short vocabulary, not a .npy",
        "tests.spaces.test_import_embeddings::test_npy_problems",
    ),
    (
        "import_embeddings",
        "csv: ragged rows, text values, duplicate keys",
        "tests.spaces.test_import_embeddings::test_csv_problems",
    ),
    (
        "import_embeddings",
        "one CommandError line",
        "tests.spaces.test_import_embeddings::test_command_turns_bad_input_into_one_command_error",
    ),
    (
        "import_feedback",
        "unknown keys/labels, self pairs, bad JSON, duplicates, undecodable",
        "tests.annotation.test_feedback_import::test_bad_feedback_names_the_line_and_stores_nothing",
    ),
    (
        "import_feedback",
        "empty or unknown files",
        "tests.annotation.test_feedback_import::test_empty_or_unknown_files_are_rejected",
    ),
    (
        "create_demo_users",
        "run without DEBUG",
        "tests.test_auth::test_demo_users_are_refused_without_debug",
    ),
]

# Endpoints that take no input beyond authentication (covered by the authorization matrix).
NO_INPUT = {
    "home",
    "healthz",
    "accounts:logout",
    "schema",
    "api-docs",
    "api-studies",
    "annotation:study-list",
    "spaces:list",
    "annotation:study-done",
    "annotation:study-archive",
}


# Rate-limit counters count attempts, refused ones included (a login attempt is counted before
# its password is checked: audit.limits), so they are not "written" data.
NOT_DATA = {"audit.RateLimit"}


def _row_counts() -> dict[str, int]:
    return {
        model._meta.label: model.objects.count()
        for label in ("spaces", "annotation", "learning", "auth", "audit", "authtoken")
        for model in apps.get_app_config(label).get_models()
        if model._meta.label not in NOT_DATA
    }


def _send(world: World, case: Bad):
    client = world.client(case.role)
    url = case.url(world)
    if case.method == "get":
        return client.get(url)
    body = case.body(world) if callable(case.body) else case.body
    if case.content_type == "multipart":
        return getattr(client, case.method)(url, body or {})
    if not isinstance(body, bytes | str):
        body = json.dumps(body)
    return getattr(client, case.method)(url, body, content_type=case.content_type)


@pytest.mark.parametrize("case", CATALOG, ids=[f"{c.endpoint}: {c.what}" for c in CATALOG])
def test_bad_input_is_refused_with_a_message_and_nothing_written(world, case):
    before = _row_counts()
    response = _send(world, case)
    text = response.content.decode("utf-8", "replace")
    assert response.status_code == case.status, text[:500]
    assert case.message in text, text[:1000]
    assert "Traceback" not in text
    assert _row_counts() == before


def test_every_endpoint_is_in_the_catalog():
    listed = {c.endpoint for c in CATALOG} | {e for e, _, _ in COVERED_ELSEWHERE}
    missing = set(MATRIX) - listed - NO_INPUT
    assert not missing, f"endpoints with no bad-input case: {sorted(missing)}"


@pytest.mark.parametrize("reference", sorted({t for _, _, t in COVERED_ELSEWHERE}))
def test_referenced_tests_exist(reference):
    module, name = reference.split("::")
    assert callable(getattr(importlib.import_module(module), name, None)), reference


# --- Import paths: management commands ---------------------------------------------------------

COMMANDS = [
    (
        "import_feedback",
        "unknown study",
        lambda w, tmp: [str(tmp / "f.csv"), "--study", "nope"],
        "no study named 'nope'",
    ),
    (
        "import_feedback",
        "missing file",
        lambda w, tmp: [str(tmp / "absent.csv"), "--study", str(A(w))],
        "absent.csv",
    ),
    (
        "import_feedback",
        "pairs of another space's keys",
        lambda w, tmp: [str(tmp / "f.csv"), "--study", str(A(w))],
        "unknown key 'zzz'",
    ),
    (
        "import_embeddings",
        "missing file",
        lambda w, tmp: [str(tmp / "absent.txt"), "--name", "x"],
        "absent.txt",
    ),
    (
        "import_embeddings",
        "a space name already taken",
        lambda w, tmp: [str(tmp / "v.txt"), "--name", w.study_a.space.name],
        "already",
    ),
    (
        "reproduce_weat_table",
        "unknown study",
        lambda w, tmp: ["--study", "nope"],
        "no study named 'nope'",
    ),
    (
        "reproduce_weat_table",
        "k not integers",
        lambda w, tmp: ["--study", "Study A", "--k", "a,b"],
        "--k must be comma-separated integers",
    ),
    (
        "reproduce_weat_table",
        "unknown suite",
        lambda w, tmp: ["--study", "Study A", "--suite", "none"],
        "has no WEAT suite 'none'",
    ),
    (
        "reproduce_weat_table",
        "no permutations",
        lambda w, tmp: ["--study", "Study A", "--permutations", "0"],
        "at least 1",
    ),
]


@pytest.mark.parametrize(
    ("command", "what", "args", "message"), COMMANDS, ids=[f"{c[0]}: {c[1]}" for c in COMMANDS]
)
def test_commands_refuse_bad_input_with_one_line(world, tmp_path, command, what, args, message):
    (tmp_path / "f.csv").write_text("key_a,key_b,label\nw000,zzz,comparable\n")
    (tmp_path / "v.txt").write_text("a 1 2\nb 3 4\n")
    before = _row_counts()
    with pytest.raises(CommandError, match=message) as info:
        call_command(command, *args(world, tmp_path))
    assert "\n" not in str(info.value)
    assert _row_counts() == before
