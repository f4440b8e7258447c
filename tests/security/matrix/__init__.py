"""The authorization matrix: every URL pattern × method × role, with the status each role gets.

One module per area, each a ``ROWS`` dict (URL name → ``Row``):

* ``site_and_accounts`` — home, health, API schema and docs, login/logout, invitations, tokens;
* ``annotation_api`` — /api/studies/… and /api/items/;
* ``annotation_pages`` — labelling, groups, review and the study set-up pages;
* ``spaces_pages`` — embedding-space uploads and sharing (staff only), and ``SPACE_USES``: every
  form field and API parameter that names a space, by role and by whom the space is shared with;
* ``learning_and_exports`` — the export API and the learning pages;
* ``audits`` — the audit API and pages.

``policies`` holds ``Row`` and the common policies (``MEMBER_PAGE``, ``STAFF_GATE``…). The tests
are in tests/security/test_authorization_matrix.py, which also fails on a URL pattern with no
row here; test_csrf, test_headers and test_hostile_input derive their cases from ``MATRIX``.
"""

from __future__ import annotations

from . import (
    annotation_api,
    annotation_pages,
    audits,
    learning_and_exports,
    site_and_accounts,
    spaces_pages,
)
from .policies import Row

AREAS = (
    site_and_accounts,
    annotation_api,
    annotation_pages,
    spaces_pages,
    learning_and_exports,
    audits,
)


def _merged() -> dict[str, Row]:
    matrix: dict[str, Row] = {}
    for area in AREAS:
        twice = set(matrix) & set(area.ROWS)
        assert not twice, f"{area.__name__} repeats matrix rows: {sorted(twice)}"
        matrix.update(area.ROWS)
    return matrix


MATRIX: dict[str, Row] = _merged()

__all__ = ["MATRIX", "Row"]
