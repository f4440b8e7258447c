"""The matrix's vocabulary: a ``Row`` (URL, the status each role gets per allowed method, the
gate that refuses before the method is looked at) and the common policies rows are made of."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..conftest import World

METHODS = ["get", "post", "put", "patch", "delete"]
NON_STAFF = ["ann_a", "ann_b", "rev_a", "adm_a"]


def statuses(anon, ann_a, ann_b, rev_a, adm_a, su) -> dict[str, int]:
    return {"anon": anon, "ann_a": ann_a, "ann_b": ann_b, "rev_a": rev_a, "adm_a": adm_a, "su": su}


# Who passes: the common policies (the status each role gets for an allowed method).
PUBLIC = statuses(200, 200, 200, 200, 200, 200)
LOGGED_IN = statuses(302, 200, 200, 200, 200, 200)
# One rule (annotation.access): outsiders of a study get 404, as for a study that does not exist;
# members whose role does not allow the action get 403.
MEMBER_PAGE = statuses(302, 200, 404, 200, 200, 200)
REVIEWER_PAGE = statuses(302, 403, 404, 200, 200, 200)
STAFF_PAGE = statuses(302, 403, 403, 403, 403, 200)
MEMBER_API = statuses(401, 200, 404, 200, 200, 200)
EXPORT_API = statuses(401, 403, 404, 200, 200, 200)

# Refused before the method is looked at (the rest get 405 for an unlisted method).
PAGE_GATE = {"anon": 302}
STAFF_GATE = {"anon": 302, **dict.fromkeys(NON_STAFF, 403)}
API_GATE = {"anon": 401}
# API views on a study check access before the method (DRF): outsiders, then reviewers' rights.
STUDY_API_GATE = {"anon": 401, "ann_b": 404}
EXPORT_STUDY_GATE = {"anon": 401, "ann_a": 403, "ann_b": 404}


@dataclass
class Row:
    url: Callable[[World], str]
    methods: dict[str, dict[str, int]]
    gate: dict[str, int] = field(default_factory=dict)
    body: Callable[[World, str], dict] | None = None  # the request body of a role
    fmt: str = "multipart"


def A(world: World) -> int:
    return world.study_a.pk


def record_study(world: World) -> int:
    """Study A, its space given a feature map (as a record space has)."""
    spec = {
        "format": "fairmetric.featuremap",
        "version": 1,
        "excluded": [],
        "features": [{"column": "age", "kind": "numeric", "mean": 40.0, "scale": 10.0}],
        "feature_names": ["age"],
    }
    type(world.study_a.space).objects.filter(pk=world.study_a.space_id).update(
        kind="records", feature_map=spec
    )
    return A(world)
