"""The bad-input catalog: every API endpoint, form, page and management command × the bad
inputs it can get, one module per area:

* ``annotation_api_judgments`` — POST/GET judgments/ and judgments/batch/;
* ``annotation_api_pairs`` — skips, comments, undo, the next pair, item search, the study;
* ``annotation_api_groups`` — groups and member suggestions;
* ``annotation_pages`` — a study's pages and the review filters;
* ``review`` — the adjudication page and API;
* ``setup_pages`` — the study set-up pages;
* ``webhooks`` — a study's webhooks page;
* ``spaces_uploads`` — embedding-space uploads and import pages;
* ``learning_and_exports`` — the export API and the learning pages;
* ``publishing`` — publishing a version (its page's form and the API), a reason when not informative;
* ``audits`` — the audit API and pages;
* ``site_and_accounts`` — tokens, invitations, login (and the site's pages without input);
* ``commands`` — the management commands.

Each module has ``CASES`` (``Bad`` rows: one bad request, the 4xx answer and message it must
get; ``commands`` has ``COMMANDS`` instead), ``ELSEWHERE`` (cases tested elsewhere, with the
test that covers them, checked to exist) and ``NO_INPUT`` (endpoints and commands that take no
input). tests/security/test_bad_input.py runs them all and is the one index: every URL pattern
and every management command of ours must appear in one of the lists.

Policy: malformed or ambiguous JSON (syntax errors, duplicate keys, NaN/Infinity) → 400;
wrong types and out-of-range values → 400 naming the field; bodies over the endpoint's limit
→ 413 (API) or 400 (forms over DATA_UPLOAD_MAX_MEMORY_SIZE); unsupported media types → 415;
unknown ids → 404; a study one is not a member of, and its objects → 404, as for a study that does
not exist (annotation.access); another user's private objects → 404.
"""

from __future__ import annotations

from . import (
    annotation_api_groups,
    annotation_api_judgments,
    annotation_api_pairs,
    annotation_pages,
    audits,
    cohorts,
    commands,
    learning_and_exports,
    publishing,
    review,
    setup_pages,
    site_and_accounts,
    spaces_uploads,
    webhooks,
)
from .cases import Bad

AREAS = (
    annotation_api_judgments,
    annotation_api_pairs,
    annotation_api_groups,
    annotation_pages,
    review,
    setup_pages,
    webhooks,
    spaces_uploads,
    learning_and_exports,
    publishing,
    audits,
    cohorts,
    site_and_accounts,
    commands,
)

CATALOG: list[Bad] = [case for area in AREAS if area is not commands for case in area.CASES]
COMMANDS = commands.COMMANDS
# (endpoint, bad input, the test that covers it)
COVERED_ELSEWHERE: list[tuple[str, str, str]] = [row for area in AREAS for row in area.ELSEWHERE]
NO_INPUT: set[str] = set().union(*(area.NO_INPUT for area in AREAS))

__all__ = ["CATALOG", "COMMANDS", "COVERED_ELSEWHERE", "NO_INPUT", "Bad"]
