"""A study's members: add, change the role and target, remove; invitations (the account, the
e-mail, the one-time link)."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.urls import reverse

from annotation import selectors
from annotation.models import Membership, PairJudgment
from annotation.setup import members
from audit.models import AuditEvent
from common.errors import Conflict, InvalidInput, NotAllowed

from .test_setup import counts


def test_members_add_change_target_and_remove(study, study_admin, annotator, outsider, items):
    PairJudgment.objects.create(
        study=study, item_a=items[0], item_b=items[1], label="comparable", annotator=outsider
    )
    member = members.member_add(
        user=study_admin, study=study, who="OUTSIDER@example.org", role="reviewer"
    )
    assert member.user == outsider
    assert member.role == "reviewer"
    with pytest.raises(Conflict, match="already a member"):
        members.member_add(user=study_admin, study=study, who="outsider", role="annotator")
    with pytest.raises(InvalidInput, match="invite them instead"):
        members.member_add(user=study_admin, study=study, who="ghost", role="annotator")
    with pytest.raises(InvalidInput, match="The role is one of"):
        members.member_add(user=study_admin, study=study, who="ann", role="boss")

    annotator_membership = Membership.objects.get(user=annotator, study=study)
    members.member_change(
        user=study_admin, membership=annotator_membership, role="annotator", target=3
    )
    assert selectors.progress_for(study=study, user=annotator).target == 3
    event = AuditEvent.objects.filter(action="membership.change").latest("id")
    assert event.detail["changes"]["target"] == [None, 3]

    members.member_remove(user=study_admin, membership=member)
    assert PairJudgment.objects.filter(annotator=outsider).count() == 1  # answers stay
    own = Membership.objects.get(user=study_admin, study=study)
    with pytest.raises(NotAllowed, match="only admin"):
        members.member_remove(user=study_admin, membership=own)
    with pytest.raises(NotAllowed):
        members.member_add(user=annotator, study=study, who="outsider", role="admin")


def test_an_invitation_creates_the_account_and_its_link_sets_the_password(
    study, study_admin, client_for, client
):
    page = client_for(study_admin).post(
        reverse("annotation:study-members", args=[study.pk]),
        {
            "action": "invite",
            "invite-username": "newbie",
            "invite-email": "newbie@example.org",
            "invite-role": "annotator",
        },
    )
    assert page.status_code == 200, page.content.decode()[:2000]
    link = re.search(r'id="invitation-link" value="([^"]+)"', page.content.decode()).group(1)
    assert len(mail.outbox) == 1
    assert link in mail.outbox[0].body
    newbie = Membership.objects.get(study=study, user__username="newbie").user
    assert not newbie.has_usable_password()
    assert AuditEvent.objects.filter(action="membership.invite", study_id=study.pk).exists()

    form = client.get(link, follow=True)
    assert b"Choose a password" in form.content
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a-long-enough-pass-42", "new_password2": "a-long-enough-pass-42"},
    )
    assert done.status_code == 302
    assert done["Location"] == reverse("annotation:study-list")
    newbie.refresh_from_db()
    assert newbie.check_password("a-long-enough-pass-42")
    again = client.get(link, follow=True)  # used once: no longer valid
    assert b"does not work" in again.content


def test_invitation_rules(study, study_admin, annotator):
    before = counts()
    with pytest.raises(Conflict, match="taken"):
        members.member_invite(
            user=study_admin,
            study=study,
            username="ANN",
            email="",
            role="annotator",
            link_for=lambda u, t: "x",
        )
    with pytest.raises(InvalidInput, match="not an e-mail address"):
        members.member_invite(
            user=study_admin,
            study=study,
            username="x1",
            email="nope",
            role="annotator",
            link_for=lambda u, t: "x",
        )
    with pytest.raises(NotAllowed):
        members.member_invite(
            user=annotator,
            study=study,
            username="x2",
            email="",
            role="annotator",
            link_for=lambda u, t: "x",
        )
    assert counts() == before


def test_an_invited_member_can_be_sent_the_link_again(study, study_admin, client_for, client):
    """An invitation e-mail lost or a link expired: the admin could not send it again."""
    admin = client_for(study_admin)
    url = reverse("annotation:study-members", args=[study.pk])
    admin.post(
        url,
        {
            "action": "invite",
            "invite-username": "late",
            "invite-email": "late@example.org",
            "invite-role": "annotator",
        },
    )
    membership = Membership.objects.get(study=study, user__username="late")
    page = admin.get(url).content.decode()
    assert 'data-resend="late"' in page
    resent = admin.post(url, {"action": "resend", "membership": str(membership.pk)})
    assert resent.status_code == 200
    link = re.search(r'id="invitation-link" value="([^"]+)"', resent.content.decode()).group(1)
    assert len(mail.outbox) == 2
    assert link in mail.outbox[1].body
    events = AuditEvent.objects.filter(action="membership.invite", study_id=study.pk)
    assert [e.detail.get("resent", False) for e in events.order_by("id")] == [False, True]
    assert client.get(link, follow=True).status_code == 200
    # Once the person has a password there is nothing to resend; a bad id is a 404.
    membership.user.set_password("a-long-enough-pass-42")
    membership.user.save()
    refused = admin.post(url, {"action": "resend", "membership": str(membership.pk)}, follow=True)
    assert "has chosen a password already" in refused.content.decode()
    assert len(mail.outbox) == 2
    assert 'data-resend="late"' not in admin.get(url).content.decode()
    assert admin.post(url, {"action": "resend", "membership": "x"}).status_code == 404
