"""Each administrative action writes exactly one audit event, in the action's transaction."""

from __future__ import annotations

import pytest
from django.db import IntegrityError
from django.urls import reverse

from accounts.models import ApiToken
from annotation.models import Membership
from audit.models import AuditEvent
from learning.models import MetricVersion

Action = AuditEvent.Action


@pytest.fixture
def new_events(world):
    """``new_events()`` → the events written since the world was built, oldest first."""
    start = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return lambda: list(AuditEvent.objects.filter(id__gt=start).order_by("id"))


def _one(events, action, actor=None):
    assert [e.action for e in events] == [action], [str(e) for e in events]
    event = events[0]
    if actor is not None:
        assert event.actor == actor
        assert event.actor_name == actor.username
    return event


def test_publishing_on_the_version_page(world, new_events):
    client = world.client("adm_a")
    url = reverse("learning:version-publish", args=[world.other_version.pk])
    assert client.post(url, REMOTE_ADDR="192.0.2.7").status_code == 400  # never judged
    assert new_events() == []
    reason = {"reason": "a test study"}
    assert client.post(url, reason, REMOTE_ADDR="192.0.2.7").status_code == 302
    event = _one(new_events(), Action.PUBLISH, world.users["adm_a"])
    assert event.study_id == world.study_a.pk
    assert (event.target_type, event.target_id) == (
        "learning.metricversion",
        str(world.other_version.pk),
    )
    override = event.detail.pop("override")
    assert (override["reason"], override["by"]) == ("a test study", "adm_a")
    assert event.detail == {
        "method": "face",
        "replaced": [world.version.pk],
        "automatic": False,
        "verdict": "cannot tell yet",
    }
    assert event.ip == "192.0.2.7"
    client.post(url)  # already published: nothing happens, nothing is logged
    assert len(new_events()) == 1


def test_publishing_in_the_admin_and_refusals(world, new_events):
    MetricVersion.objects.filter(pk=world.other_version.pk).update(status="failed")
    client = world.client("adm_a")
    client.post(reverse("learning:version-publish", args=[world.other_version.pk]))  # not ready
    client = world.client("rev_a")
    client.post(reverse("learning:version-publish", args=[world.version.pk]))  # not an admin
    assert new_events() == []
    judged = {"validity": {"verdict": "informative", "basis": "new items", "needs": ""}}
    MetricVersion.objects.filter(pk=world.other_version.pk).update(
        status="ready", diagnostics=judged
    )
    admin = world.client("su")
    response = admin.post(
        reverse("admin:learning_metricversion_changelist"),
        {"action": "publish_version", "_selected_action": [world.other_version.pk]},
    )
    assert response.status_code == 302
    _one(new_events(), Action.PUBLISH, world.users["su"])


def test_the_event_is_part_of_the_action(world, new_events, monkeypatch):
    """A failed audit write undoes the publish: they commit together or not at all."""

    def refuse(**kwargs):
        raise IntegrityError("audit log unavailable")

    monkeypatch.setattr(AuditEvent.objects, "create", refuse)
    from learning.versions.storage import metric_version_publish

    with pytest.raises(IntegrityError):
        metric_version_publish(version=world.other_version, user=world.users["adm_a"], reason="x")
    world.other_version.refresh_from_db()
    assert not world.other_version.is_published
    monkeypatch.undo()
    assert new_events() == []


def test_memberships_in_the_admin(world, new_events):
    client = world.client("su")
    add = client.post(
        reverse("admin:annotation_membership_add"),
        {"user": world.users["ann_b"].pk, "study": world.study_a.pk, "role": "annotator"},
    )
    assert add.status_code == 302, add.content[:500]
    membership = Membership.objects.get(user=world.users["ann_b"], study=world.study_a)
    event = _one(new_events(), Action.MEMBERSHIP_CREATE, world.users["su"])
    assert event.detail == {"user_id": world.users["ann_b"].pk, "role": "annotator"}
    assert event.study_id == world.study_a.pk

    change = reverse("admin:annotation_membership_change", args=[membership.pk])
    client.post(
        change, {"user": world.users["ann_b"].pk, "study": world.study_a.pk, "role": "reviewer"}
    )
    event = new_events()[-1]
    assert event.action == Action.MEMBERSHIP_CHANGE
    assert event.detail["changes"] == {"role": ["annotator", "reviewer"]}
    client.post(
        change, {"user": world.users["ann_b"].pk, "study": world.study_a.pk, "role": "reviewer"}
    )  # saved unchanged: no event
    assert len(new_events()) == 2

    delete = reverse("admin:annotation_membership_delete", args=[membership.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 302
    assert [e.action for e in new_events()] == [
        Action.MEMBERSHIP_CREATE,
        Action.MEMBERSHIP_CHANGE,
        Action.MEMBERSHIP_DELETE,
    ]


def test_memberships_from_code_have_no_actor(world, new_events):
    membership = Membership.objects.create(user=world.users["ann_b"], study=world.study_a)
    event = _one(new_events(), Action.MEMBERSHIP_CREATE)
    assert event.actor is None
    assert event.actor_name == ""
    assert event.ip is None
    membership.delete()
    assert [e.action for e in new_events()][-1] == Action.MEMBERSHIP_DELETE


def test_deleting_a_study_logs_its_memberships_and_keeps_the_log(world, new_events):
    study_b = world.study_b.pk
    world.study_b.delete()
    event = _one(new_events(), Action.MEMBERSHIP_DELETE)
    assert event.study_id == study_b  # no constraint: the log outlives the study


@pytest.mark.parametrize(
    ("name", "args", "action"),
    [
        ("api-version-sigma", lambda w: [w.version.pk, "npy"], Action.EXPORT_SIGMA),
        ("api-published-sigma", lambda w: [w.study_a.pk, "face", "csv"], Action.EXPORT_SIGMA),
        ("api-export-judgments", lambda w: [w.study_a.pk, "csv"], Action.EXPORT_JUDGMENTS),
        ("api-export-groups", lambda w: [w.study_a.pk, "jsonl"], Action.EXPORT_GROUPS),
    ],
)
def test_each_export_writes_one_event(world, new_events, name, args, action):
    client = world.token_client("rev_a")
    response = client.get(reverse(name, args=args(world)), REMOTE_ADDR="198.51.100.4")
    assert response.status_code == 200
    event = _one(new_events(), action, world.users["rev_a"])  # the token's user
    assert event.study_id == world.study_a.pk
    assert event.ip == "198.51.100.4"


def test_refused_and_unchanged_exports_are_not_logged(world, new_events):
    url = reverse("api-version-sigma", args=[world.version.pk, "npy"])
    assert world.token_client("ann_a").get(url).status_code == 403
    etag = world.token_client("rev_a").get(url)["ETag"]
    assert world.token_client("rev_a").get(url, HTTP_IF_NONE_MATCH=etag).status_code == 304
    assert [e.action for e in new_events()] == [Action.EXPORT_SIGMA]


def test_tokens_created_and_revoked_on_the_token_page(world, new_events):
    client = world.client("rev_a")
    body = {"name": "nightly", "studies": [str(world.study_a.pk)], "expires_in": "7"}
    assert client.post(reverse("accounts:tokens"), body).status_code == 302
    token = ApiToken.objects.get(user=world.users["rev_a"], name="nightly")
    event = _one(new_events(), Action.TOKEN_CREATE, world.users["rev_a"])
    assert event.detail == {
        "name": "nightly",
        "prefix": token.prefix,
        "owner_id": world.users["rev_a"].pk,
        "study_ids": [world.study_a.pk],
        "expires_at": token.expires_at.isoformat(),
    }
    assert "key_hash" not in str(event.detail)
    revoke = reverse("accounts:token-revoke", args=[token.pk])
    client.post(revoke)
    client.post(revoke)  # already revoked: no second event
    assert [e.action for e in new_events()] == [Action.TOKEN_CREATE, Action.TOKEN_REVOKE]


def test_tokens_revoked_in_the_admin_one_event_each(world, new_events):
    client = world.client("su")
    ids = [world.token_ids["ann_a"], world.token_ids["rev_a"]]
    response = client.post(
        reverse("admin:accounts_apitoken_changelist"), {"action": "revoke", "_selected_action": ids}
    )
    assert response.status_code == 302
    events = new_events()
    assert [e.action for e in events] == [Action.TOKEN_REVOKE] * 2
    assert {e.target_id for e in events} == {str(i) for i in ids}
    assert {e.actor for e in events} == {world.users["su"]}


def test_the_admin_shows_the_log_read_only(world, new_events):
    client = world.client("su")
    url = reverse("learning:version-publish", args=[world.other_version.pk])
    world.client("adm_a").post(url, {"reason": "shown in the admin"})
    event = new_events()[0]
    listing = client.get(reverse("admin:audit_auditevent_changelist"), {"action": "publish"})
    assert listing.status_code == 200
    assert b"adm_a" in listing.content
    assert client.get(reverse("admin:audit_auditevent_add")).status_code == 403
    change = reverse("admin:audit_auditevent_change", args=[event.pk])
    page = client.get(change)
    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    client.post(change, {"action": "token.create"})
    assert (
        client.post(
            reverse("admin:audit_auditevent_delete", args=[event.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    event.refresh_from_db()
    assert event.action == Action.PUBLISH


def test_drf_tokens_are_logged_without_their_key(world, new_events):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=world.users["ann_b"])
    key = token.key
    token.delete()
    events = new_events()
    assert [e.action for e in events] == [Action.TOKEN_CREATE, Action.TOKEN_REVOKE]
    assert {e.target_id for e in events} == {str(world.users["ann_b"].pk)}
    assert all(key not in str(e.detail) for e in events)
