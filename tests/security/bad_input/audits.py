"""Bad inputs of the audit room: its API (reviewer or admin of A) and its pages."""

from __future__ import annotations

import io

import pandas as pd
from django.urls import reverse

from ..matrix.audits import audit_of
from .cases import A, B, Bad, upload


def scores(text: str, name: str = "scores.csv", **fields):
    return lambda w: {"predictions": upload(name, text.encode()), **fields}


def parquet(table: pd.DataFrame, **fields):
    def body(w):
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        return {"predictions": upload("scores.parquet", buffer.getvalue()), **fields}

    return body


GOOD = "key,score\n" + "".join(f"w{i:03d},{i / 20}\n" for i in range(20))

CASES: list[Bad] = [
    # --- API ------------------------------------------------------------------------------------
    Bad(
        "api-audits",
        "unknown keys",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        400,
        "2 unknown key(s) (not in this study's item pool): 'nope', 'zzz'",
        scores("key,score\nnope,0.1\nzzz,0.2\nw000,0.3\n"),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "no score column",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        400,
        "missing: score",
        scores("key,prediction\nw000,0.1\n"),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "a score that is not a number",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        400,
        "the score must be a finite number (row 2 has 'high')",
        scores("key,score\nw000,0.1\nw001,high\n"),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "k out of range",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        400,
        "k must be a finite number between 1 and 50",
        scores(GOOD, k="500"),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "another study's version",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        400,
        "is not a ready metric version of this study",
        lambda w: scores(GOOD, version=str(w.version_b.pk))(w),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "not a CSV or Parquet file",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        400,
        "cannot tell the format of 'scores.xlsx'",
        scores(GOOD, name="scores.xlsx"),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "no file",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        400,
        "Upload the model's scores as predictions",
        {"k": "3"},
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "a JSON body",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        415,
        "Unsupported media type",
        {"k": 3},
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "a Parquet file too big to audit (its footer's rows x the space's dimension and k)",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        413,
        "(AUDIT_MAX_DECODED_MB = 768 MB of points and neighbour pairs in the worker)",
        parquet(pd.DataFrame({"key": [f"n{i}" for i in range(200_000)], "score": 0.5}), k="50"),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "one key repeated 100,000 times (refused from the head)",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        400,
        "A key appears more than once (rows 1, 2, 3, 4, 5 and 995 more): 'w000'",
        parquet(pd.DataFrame({"key": ["w000"] * 100_000, "score": 0.5})),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "another study",
        "get",
        lambda w: reverse("api-audits", args=[B(w)]),
        404,
        "No such study",
        role="rev_a",
    ),
    Bad(
        "api-audits",
        "a negative delta",
        "post",
        lambda w: reverse("api-audits", args=[A(w)]),
        400,
        "delta must be a finite number between 0 and",
        scores(GOOD, delta="-1"),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "api-counterfactuals",
        "twins of a study of words",
        "get",
        lambda w: reverse("api-counterfactuals", args=[A(w)]) + "?columns=sex",
        400,
        "Counterfactual twins need a study of records.",
        role="rev_a",
    ),
    Bad(
        "api-counterfactuals",
        "no columns named or declared",
        "get",
        lambda w: reverse("api-counterfactuals", args=[A(w)]),
        400,
        "Name the columns (?columns=sex,race) or declare",
        role="rev_a",
    ),
    Bad(
        "learning:audit-sensitive",
        "columns of a study of words",
        "post",
        lambda w: reverse("learning:audit-sensitive", args=[A(w)]),
        400,
        "Counterfactual twins need a study of records.",
        {"column": ["sex"]},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "api-audit",
        "unknown audit",
        "get",
        lambda w: reverse("api-audit", args=[A(w), 999_999]),
        404,
        "No such audit in this study",
        role="rev_a",
    ),
    Bad(
        "api-audit-violations",
        "a field the records do not have",
        "get",
        lambda w: reverse("api-audit-violations", args=[A(w), audit_of(w)]) + "?differs=sex",
        400,
        "Unknown field 'sex'",
        role="rev_a",
    ),
    # --- pages ----------------------------------------------------------------------------------
    Bad(
        "learning:audits",
        "unknown keys",
        "post",
        lambda w: reverse("learning:audits", args=[A(w)]),
        400,
        "1 unknown key(s) (not in this study&#x27;s item pool)",
        scores("key,score\nnope,0.1\nw000,0.3\n"),
        "multipart",
        role="rev_a",
    ),
    Bad(
        "learning:audit-detail",
        "unknown audit",
        "get",
        lambda w: reverse("learning:audit-detail", args=[A(w), 999_999]),
        404,
        "Not found",
        role="rev_a",
    ),
    Bad(
        "learning:audit-detail",
        "a filter on an unknown field",
        "get",
        lambda w: reverse("learning:audit-detail", args=[A(w), audit_of(w)]) + "?field=sex&value=x",
        400,
        "Unknown field",
        role="rev_a",
    ),
    Bad(
        "learning:audit-compare",
        "ids not numbers",
        "get",
        lambda w: reverse("learning:audit-compare", args=[A(w)]) + "?a=one&b=two",
        404,
        "Not found",
        role="rev_a",
    ),
    Bad(
        "learning:audit-ask",
        "a violation of no audit",
        "post",
        lambda w: reverse("learning:audit-ask", args=[A(w), audit_of(w)]),
        400,
        "Violation(s) 999999 are not in this audit.",
        {"violation": ["999999"]},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "learning:audit-ask",
        "nothing chosen",
        "post",
        lambda w: reverse("learning:audit-ask", args=[A(w), audit_of(w)]),
        400,
        "Choose at least one violation",
        {},
        "multipart",
        role="adm_a",
    ),
]

# (endpoint, bad input, the test that covers it)
ELSEWHERE = [
    (
        "api-audits",
        "files over MAX_TABLE_MB or AUDIT_MAX_ROWS, duplicate keys, empty keys and decisions",
        "tests.learning.audits.test_services::test_bad_files_get_a_clear_error_and_write_nothing",
    ),
    (
        "api-audits",
        "an audit more than the user's or the study's limit in flight (429, Retry-After)",
        "tests.security.test_audit_limits::test_every_role_that_may_audit_gets_429_past_its_limit",
    ),
    (
        "learning:audits",
        "an audit more than the limit in flight (the form's error, 429, Retry-After)",
        "tests.learning.audits.test_bounds::test_the_api_answers_429_with_retry_after_and_the_page_a_form_error",
    ),
    (
        "api-audits",
        "a row past the head the request reads (the worker fails the audit naming the row)",
        "tests.learning.audits.test_bounds::test_the_request_reads_the_head_and_the_worker_every_row",
    ),
    (
        "learning:audits",
        "an annotator's upload",
        "tests.learning.audits.test_services::test_annotators_may_not_audit",
    ),
    (
        "api-audits",
        "a twin whose original has no score in the file",
        "tests.learning.audits.test_twins::test_a_twin_without_its_original_is_refused",
    ),
    (
        "api-counterfactuals",
        "an unknown column, a column of more than 50 values, empty columns (a record study); "
        "more twins than AUDIT_MAX_ROWS (test_twins_beyond_what_an_audit_reads_are_refused)",
        "tests.learning.audits.test_twins::test_bad_requests_are_400_with_the_reason",
    ),
    (
        "learning:audit-sensitive",
        "a reviewer, an unknown column, a column of many values (a record study)",
        "tests.learning.audits.test_twins::test_declaring_sensitive_columns_is_for_admins_and_checked",
    ),
]

NO_INPUT: set[str] = set()
