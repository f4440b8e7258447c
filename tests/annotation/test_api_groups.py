"""The REST API of group curation: groups (create, list, edit, history), item search,
suggestions and the heterogeneity indicator."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from annotation.groups.selectors import item_prefix_queryset
from annotation.models import ComparableGroup
from learning.models import MetricVersion

from .factories import make_metric_version, make_space
from .test_api import url
from .test_services import refit_hooks


def test_groups_create_list_patch_and_history(
    study,
    annotator,
    other_annotator,
    reviewer,
    items,
    client_for,
    django_capture_on_commit_callbacks,
):
    client = client_for(annotator)
    with django_capture_on_commit_callbacks() as callbacks:
        created = client.post(
            url(study, "groups/"),
            {"name": "twins", "members": [items[0].pk, items[1].pk]},
            format="json",
        )
    assert created.status_code == 201
    assert len(refit_hooks(callbacks)) == 1
    gid = created.json()["id"]
    assert created.json()["size"] == 2
    patched = client.patch(
        url(study, f"groups/{gid}/"),
        {"name": "triplets", "add": [items[2].pk], "remove": [items[0].pk]},
        format="json",
    )
    assert patched.status_code == 200
    data = patched.json()
    assert data["name"] == "triplets"
    assert {m["id"] for m in data["members"]} == {items[1].pk, items[2].pk}
    assert [e["action"] for e in data["history"]][:3] == ["remove", "add", "rename"]  # newest first
    assert {e["revision"] for e in data["history"][:3]} == {data["revision"]}
    assert client_for(other_annotator).get(url(study, "groups/")).json() == []
    assert client_for(other_annotator).get(url(study, f"groups/{gid}/")).status_code == 404
    assert (
        client_for(other_annotator)
        .patch(url(study, f"groups/{gid}/"), {"add": [items[5].pk]}, format="json")
        .status_code
        == 404
    )
    assert [g["id"] for g in client_for(reviewer).get(url(study, "groups/")).json()] == [gid]
    assert (
        client_for(reviewer)
        .patch(url(study, f"groups/{gid}/"), {"add": [items[5].pk]}, format="json")
        .status_code
        == 200
    )
    assert ComparableGroup.objects.get().members.count() == 3


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "x" * 201},
        {"name": "g", "members": ["a"]},
        {"name": "g", "members": [10**9]},
        {"name": "g", "members": "1,2"},
    ],
)
def test_bad_groups_are_refused(study, annotator, client_for, body):
    response = client_for(annotator).post(url(study, "groups/"), body, format="json")
    assert response.status_code == 400
    assert response.json()
    assert ComparableGroup.objects.count() == 0


def test_duplicate_group_name_is_409(study, annotator, client_for):
    client = client_for(annotator)
    client.post(url(study, "groups/"), {"name": "g"}, format="json")
    assert client.post(url(study, "groups/"), {"name": "g"}, format="json").status_code == 409


# --- Items and suggestions --------------------------------------------------------------------


def test_item_search_is_a_case_insensitive_prefix_search(study, space, annotator, client_for):
    client = client_for(annotator)
    keys = [i["key"] for i in client.get("/api/items/", {"space": space.pk, "q": "em"}).json()]
    assert keys == ["Emma", "Emily", "Emmett"]  # shortest first
    keys = [i["key"] for i in client.get("/api/items/", {"study": study.pk, "q": "W00"}).json()]
    assert keys == [f"w00{i}" for i in range(10)]
    limited = client.get("/api/items/", {"study": study.pk, "q": "w", "limit": 5}).json()
    assert len(limited) == 5
    assert client.get("/api/items/", {"study": study.pk, "q": "zz"}).json() == []
    assert client.get("/api/items/", {"study": study.pk, "q": ""}).json() == []
    assert client.get("/api/items/", {"q": "w"}).status_code == 400


def test_item_search_needs_membership(space, outsider, client_for):
    response = client_for(outsider).get("/api/items/", {"space": space.pk, "q": "w"})
    assert response.status_code == 404  # as for a space that does not exist
    assert response.json() == {"detail": "No such embedding space."}


def test_suggestions_under_euclid_and_the_current_metric(study, annotator, items, client_for):
    members = [items[0].pk, items[1].pk, items[2].pk]
    client = client_for(annotator)
    data = client.get(
        url(study, "suggestions/"), {"members": ",".join(map(str, members)), "k": 4}
    ).json()
    assert data["metric"] is None
    assert data["nearest_metric"] == []
    assert data["size"] == 3
    matrix = study.space.load_matrix(mmap=False).astype(np.float64)
    centroid = matrix[[items[0].row, items[1].row, items[2].row]].mean(axis=0)
    order = np.argsort(np.linalg.norm(matrix - centroid, axis=1))
    expected = [items[r].pk for r in order if items[r].pk not in members][:4]
    assert [i["id"] for i in data["nearest_euclid"]] == expected
    assert data["heterogeneity"]["method"] == "relative-spread"

    sigma = np.diag([1.0] + [1e-6] * (study.space.dimension - 1))  # only the first dimension
    version = make_metric_version(
        study=study, method=MetricVersion.Method.EXPLORE, sigma=sigma, label="explore-1"
    )
    data = client.get(
        url(study, "suggestions/"), {"members": ",".join(map(str, members)), "k": 4}
    ).json()
    assert data["metric"]["id"] == version.pk
    gaps = np.abs(matrix[:, 0] - centroid[0])
    learned = [items[r].pk for r in np.argsort(gaps) if items[r].pk not in members][:4]
    assert [i["id"] for i in data["nearest_metric"]] == learned


def test_heterogeneity_uses_the_latest_face_version(study, annotator, items, client_for):
    d = study.space.dimension
    q = np.zeros((d, 1))
    q[0, 0] = 1.0
    make_metric_version(
        study=study, method=MetricVersion.Method.FACE, sigma=np.eye(d) - q @ q.T, label="face-1"
    )
    matrix = study.space.load_matrix(mmap=False).astype(np.float64)
    rows = [items[0].row, items[1].row, items[2].row]
    centred = matrix[rows] - matrix[rows].mean(axis=0)
    expected = (centred[:, 1:] ** 2).sum() / (centred**2).sum()
    data = (
        client_for(annotator)
        .get(url(study, "suggestions/"), {"members": f"{items[0].pk},{items[1].pk},{items[2].pk}"})
        .json()
    )
    assert data["heterogeneity"]["method"] == "face-outside-share"
    assert data["heterogeneity"]["value"] == pytest.approx(expected, abs=1e-3)
    assert 0 < data["heterogeneity"]["random_share"] <= 1  # calibrated: test_heterogeneity.py


def test_suggestions_for_a_saved_group_with_unsaved_changes(study, annotator, items, client_for):
    client = client_for(annotator)
    gid = client.post(
        url(study, "groups/"),
        {"name": "g", "members": [items[0].pk, items[1].pk, items[2].pk]},
        format="json",
    ).json()["id"]
    delta = client.get(
        url(study, "suggestions/"),
        {
            "group": gid,
            "members": str(items[3].pk),
            "remove": str(items[0].pk),
            "k": 5,
        },
    ).json()
    explicit = client.get(
        url(study, "suggestions/"),
        {
            "members": f"{items[1].pk},{items[2].pk},{items[3].pk}",
            "k": 5,
        },
    ).json()
    assert delta["size"] == 3
    assert delta == explicit


def test_item_prefix_search_is_answered_from_the_prefix_index(db, media_root):
    big = make_space(name="big", n_words=20_000, dimension=2)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    qs = item_prefix_queryset(space_id=big.pk, prefix="w1234").order_by("key_lower")
    assert sorted(qs.values_list("key", flat=True)) == ["w1234"] + [f"w1234{i}" for i in range(10)]
    assert "item_space_lower_key_prefix" in qs.values("id").explain()
