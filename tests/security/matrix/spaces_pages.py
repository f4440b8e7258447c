"""Matrix rows of the embedding-space pages (uploads of vectors, records and texts): Django
staff only."""

from __future__ import annotations

from django.urls import reverse

from ..conftest import World
from .policies import STAFF_GATE, STAFF_PAGE, Row, record_study, statuses


def record_space(world: World) -> int:
    """Study A's space as a record space (``record_study``)."""
    record_study(world)
    return world.study_a.space_id


ROWS: dict[str, Row] = {
    "spaces:list": Row(lambda w: reverse("spaces:list"), {"get": STAFF_PAGE}, STAFF_GATE),
    "spaces:upload": Row(
        lambda w: reverse("spaces:upload"),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        STAFF_GATE,
    ),
    "spaces:import": Row(
        lambda w: reverse("spaces:import", args=[w.embedding_import.pk]),
        {"get": STAFF_PAGE},
        STAFF_GATE,
    ),
    "spaces:import-status": Row(
        lambda w: reverse("spaces:import-status", args=[w.embedding_import.pk]),
        {"get": STAFF_PAGE},
        STAFF_GATE,
    ),
    "spaces:records-upload": Row(
        lambda w: reverse("spaces:records-upload"),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        STAFF_GATE,
    ),
    "spaces:records-columns": Row(
        lambda w: reverse("spaces:records-columns", args=[w.records_import.pk]),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        STAFF_GATE,
    ),
    "spaces:records-shown": Row(
        lambda w: reverse("spaces:records-shown", args=[record_space(w)]),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 302)},
        STAFF_GATE,
    ),
    "spaces:texts-upload": Row(
        lambda w: reverse("spaces:texts-upload"),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        STAFF_GATE,
    ),
}
