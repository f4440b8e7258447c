"""Matrix rows of the annotation API (/api/studies/…, /api/items/): members answer, undo
their own answers and keep groups; reviewers and admins resolve disagreements; outsiders of a
study get 404."""

from __future__ import annotations

import uuid

from django.urls import reverse

from annotation.models import Membership

from ..conftest import World
from .policies import (
    API_GATE,
    EXPORT_API,
    EXPORT_STUDY_GATE,
    MEMBER_API,
    STUDY_API_GATE,
    A,
    Row,
    statuses,
)

# The set-up API: admins of the study and staff; reviewers and annotators of A 403, others 404.
SETUP_API = statuses(401, 403, 404, 403, 200, 200)
SETUP_API_GATE = {"anon": 401, "ann_a": 403, "ann_b": 404, "rev_a": 403}


def _ann_a_member(world: World) -> int:
    return Membership.objects.get(study=world.study_a, user=world.users["ann_a"]).pk


def judgment_body(world: World, role: str) -> dict:
    return {
        "item_a": world.items[2].pk,
        "item_b": world.items[3].pk,
        "label": "comparable",
        "client_id": str(uuid.uuid4()),
    }


ROWS: dict[str, Row] = {
    "api-studies": Row(
        lambda w: reverse("api-studies"),
        {
            "get": statuses(401, 200, 200, 200, 200, 200),
            "post": statuses(401, 403, 403, 403, 403, 201),  # staff create studies
        },
        API_GATE,
        body=lambda w, r: {"name": f"API study {r}", "space": w.study_a.space_id, "mode": "pairs"},
        fmt="json",
    ),
    "api-study": Row(
        lambda w: reverse("api-study", args=[A(w)]),
        {"get": MEMBER_API, "patch": SETUP_API},
        STUDY_API_GATE,
        body=lambda w, r: {"target_per_annotator": 7},
        fmt="json",
    ),
    "api-study-pool": Row(
        lambda w: reverse("api-study-pool", args=[A(w)]),
        {"post": SETUP_API},
        SETUP_API_GATE,
        body=lambda w, r: {"keys": [w.items[0].key, w.items[1].key]},
        fmt="json",
    ),
    "api-study-candidate-pairs": Row(
        lambda w: reverse("api-study-candidate-pairs", args=[A(w)]),
        {"post": SETUP_API},
        SETUP_API_GATE,
        body=lambda w, r: {"pairs": [[w.items[10].key, w.items[11].key]]},
        fmt="json",
    ),
    "api-study-gold-pairs": Row(
        lambda w: reverse("api-study-gold-pairs", args=[A(w)]),
        {"post": SETUP_API},
        SETUP_API_GATE,
        body=lambda w, r: {"pairs": [[w.items[12].key, w.items[13].key, "comparable"]]},
        fmt="json",
    ),
    "api-study-members": Row(
        lambda w: reverse("api-study-members", args=[A(w)]),
        {"post": statuses(401, 403, 404, 403, 201, 201)},
        SETUP_API_GATE,
        body=lambda w, r: {"username": f"invited_by_{r}", "role": "annotator"},
        fmt="json",
    ),
    "api-next-pair": Row(
        lambda w: reverse("api-next-pair", args=[A(w)]), {"get": MEMBER_API}, STUDY_API_GATE
    ),
    "api-judgments": Row(
        lambda w: reverse("api-judgments", args=[A(w)]),
        {"get": MEMBER_API, "post": statuses(401, 201, 404, 201, 201, 201)},
        STUDY_API_GATE,
        body=judgment_body,
        fmt="json",
    ),
    "api-judgments-batch": Row(  # 200 with one result per answer (each stored on its own)
        lambda w: reverse("api-judgments-batch", args=[A(w)]),
        {"post": statuses(401, 200, 404, 200, 200, 200)},
        STUDY_API_GATE,
        body=lambda w, r: {"answers": [judgment_body(w, r)]},
        fmt="json",
    ),
    "api-skips": Row(
        lambda w: reverse("api-skips", args=[A(w)]),
        {"post": statuses(401, 201, 404, 201, 201, 201)},
        STUDY_API_GATE,
        body=lambda w, r: {"item_a": w.items[7].pk, "item_b": w.items[8].pk},
        fmt="json",
    ),
    "api-comments": Row(
        lambda w: reverse("api-comments", args=[A(w)]),
        {"post": statuses(401, 201, 404, 201, 201, 201)},
        STUDY_API_GATE,
        body=lambda w, r: {
            "item_a": w.items[7].pk,
            "item_b": w.items[8].pk,
            "text": f"note by {r}",
            "client_id": str(uuid.uuid4()),
        },
        fmt="json",
    ),
    "api-judgment": Row(  # undo: only one's own answer
        lambda w: reverse("api-judgment", args=[A(w), w.judgment.pk]),
        {"delete": statuses(401, 204, 404, 403, 403, 403)},
        STUDY_API_GATE,
    ),
    "api-groups": Row(
        lambda w: reverse("api-groups", args=[A(w)]),
        {"get": MEMBER_API, "post": statuses(401, 201, 404, 201, 201, 201)},
        STUDY_API_GATE,
        body=lambda w, r: {"name": f"group of {r}", "members": [w.items[5].pk, w.items[6].pk]},
        fmt="json",
    ),
    "api-group": Row(  # the creator (ann_a) and reviewers/admins may edit
        lambda w: reverse("api-group", args=[A(w), w.group.pk]),
        {"get": MEMBER_API, "patch": MEMBER_API},
        STUDY_API_GATE,
        body=lambda w, r: {"name": f"renamed by {r}"},
        fmt="json",
    ),
    "api-suggestions": Row(
        lambda w: reverse("api-suggestions", args=[A(w)]), {"get": MEMBER_API}, STUDY_API_GATE
    ),
    "api-disagreements": Row(  # reviewers and admins
        lambda w: reverse("api-disagreements", args=[A(w)]), {"get": EXPORT_API}, EXPORT_STUDY_GATE
    ),
    "api-adjudications": Row(
        lambda w: reverse("api-adjudications", args=[A(w)]),
        {"post": statuses(401, 403, 404, 201, 201, 201)},
        EXPORT_STUDY_GATE,
        body=lambda w, r: {"item_a": w.items[1].pk, "item_b": w.items[0].pk, "label": "comparable"},
        fmt="json",
    ),
    "api-items": Row(
        lambda w: reverse("api-items") + f"?study={A(w)}&q=w", {"get": MEMBER_API}, API_GATE
    ),
    "api-study-member": Row(
        lambda w: reverse("api-study-member", args=[A(w), _ann_a_member(w)]),
        {"patch": SETUP_API},
        SETUP_API_GATE,
        body=lambda w, r: {"target": 7},
        fmt="json",
    ),
    "api-study-member-attributes": Row(
        lambda w: reverse("api-study-member-attributes", args=[A(w)]),
        {"get": SETUP_API, "post": statuses(401, 403, 404, 403, 201, 201)},
        SETUP_API_GATE,
        body=lambda w, r: {"name": f"region of {r}", "values": ["EU", "US"]},
        fmt="json",
    ),
}
