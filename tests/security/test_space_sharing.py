"""Spaces have an owner and a sharing rule (issue 26, finding 5).

Before: a study admin who is not staff could point an empty study at any space (the settings
form listed every space) and so read that space's items: ``/api/items/?space=N`` answered 200 to
them and to their study's members. Now the form lists the spaces they may use, attaching another
is refused, and the items of a space follow who may use it.
"""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from annotation.access import require_space_use, usable_spaces
from annotation.models import Membership
from annotation.setup.studies import study_duplicate, study_save
from audit.models import AuditEvent
from common.errors import NotAllowed
from spaces.models import EmbeddingSpace
from tests.annotation.factories import make_space, make_study, make_user

from .matrix.spaces_pages import study_c


@pytest.fixture
def foreign(world) -> EmbeddingSpace:
    """A space the superuser uploaded and shared with nobody, and study C: adm_a its admin,
    ann_c its annotator, empty, on study A's space."""
    space = make_space(name="confidential", seed=5)
    EmbeddingSpace.objects.filter(pk=space.pk).update(owner=world.users["su"])
    study = make_study(space=world.study_a.space, name="Study C")
    Membership.objects.create(study=study, user=world.users["adm_a"], role=Membership.Role.ADMIN)
    world.users["ann_c"] = make_user("ann_c", study=study, role=Membership.Role.ANNOTATOR)
    return space


def _attach(client, study, space_id: int):
    body = {"name": study.name, "instructions": "", "mode": "pairs", "pool": "all"}
    body |= {"strategy": "random", "overlap": 1, "gold_rate": 0, "target_per_annotator": 5}
    return client.post(
        reverse("annotation:study-settings", args=[study.pk]), body | {"space": space_id}
    )


def test_a_study_admin_cannot_attach_a_foreign_space_nor_read_its_items(world, foreign):
    study = study_c(world)
    admin = world.client("adm_a")
    page = admin.get(reverse("annotation:study-settings", args=[study.pk]))
    assert "confidential" not in page.content.decode()
    response = _attach(admin, study, foreign.pk)
    assert response.status_code == 400
    assert "Select a valid choice" in html.unescape(response.content.decode())
    study.refresh_from_db()
    assert study.space_id == world.study_a.space_id
    items = reverse("api-items") + f"?space={foreign.pk}&q=w"
    assert admin.get(items).status_code == 404
    annotator = world.client("ann_c")
    assert annotator.get(items).status_code == 404
    # The service refuses it too (any caller other than the form).
    with pytest.raises(NotAllowed, match="'confidential' is not shared with you"):
        study_save(
            user=world.users["adm_a"],
            study=study,
            data={**_settings(study), "space": foreign},
        )


def test_sharing_a_space_lets_an_admin_attach_it_and_their_members_read_it(world, foreign):
    staff = world.client("su")
    url = reverse("spaces:sharing", args=[foreign.pk])
    assert staff.post(url, {"owner": "su", "shared_with": "adm_a@example.org"}).status_code == 302
    foreign.refresh_from_db()
    assert [u.username for u in foreign.shared_with.all()] == ["adm_a"]
    assert foreign.owner.username == "su"
    event = AuditEvent.objects.get(action=AuditEvent.Action.SPACE_SHARING)
    assert event.actor == world.users["su"]
    assert event.detail == {
        "before": {"owner": "su", "shared_with": [], "study_admins": False},
        "after": {"owner": "su", "shared_with": ["adm_a"], "study_admins": False},
    }
    study = study_c(world)
    assert _attach(world.client("adm_a"), study, foreign.pk).status_code == 302
    study.refresh_from_db()
    assert study.space_id == foreign.pk
    items = reverse("api-items") + f"?space={foreign.pk}&q=w"
    assert world.client("ann_c").get(items).status_code == 200  # a member of a study on it
    assert world.client("rev_a").get(items).status_code == 404  # not theirs
    # Taken back: studies already on the space keep it, and their admin may keep saving them.
    assert staff.post(url, {"owner": ""}).status_code == 302
    assert AuditEvent.objects.filter(action=AuditEvent.Action.SPACE_SHARING).count() == 2
    assert foreign.pk not in set(usable_spaces(world.users["adm_a"]).values_list("pk", flat=True))
    assert _attach(world.client("adm_a"), study, foreign.pk).status_code == 302
    assert world.client("ann_c").get(items).status_code == 200


def test_shared_with_every_study_admin_means_admins_only(world, foreign):
    EmbeddingSpace.objects.filter(pk=foreign.pk).update(shared_with_study_admins=True)
    for role, may in (("adm_a", True), ("rev_a", False), ("ann_a", False), ("su", True)):
        assert (foreign in usable_spaces(world.users[role])) is may, role


def test_a_duplicate_keeps_its_studys_space(world, foreign):
    """Duplicating attaches nothing new: the copy is on the space the original is on, which its
    admin may keep even when it is not shared with them."""
    study = study_c(world)
    type(study).objects.filter(pk=study.pk).update(space=foreign)
    study.refresh_from_db()
    copy = study_duplicate(user=world.users["adm_a"], study=study, name="Study C (copy)")
    assert copy.space_id == foreign.pk
    require_space_use(world.users["adm_a"], foreign, study=copy)  # its own space: allowed


def _settings(study) -> dict:
    return {
        "name": study.name,
        "instructions": "",
        "mode": "pairs",
        "pool": "all",
        "strategy": "random",
        "overlap": 1,
        "gold_rate": 0.0,
        "target_per_annotator": 5,
        "stop_at_target": False,
        "is_active": True,
        "tags": [],
    }
