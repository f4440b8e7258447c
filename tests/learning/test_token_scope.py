"""API tokens limited to studies and expiring: made on the token page, honoured by the
published-Sigma download that training code uses (tests/security has the matrix rows)."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.tokens import TokenError, api_token_create
from annotation.models import Membership
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def bearer(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def sigma_url(study) -> str:
    return reverse("api-published-sigma", args=[study.pk, "face", "npy"])


def test_a_token_made_on_the_page_for_one_study_downloads_its_sigma_only(
    client, study, other_study, users, versions
):
    reviewer = users["reviewer"]
    Membership.objects.create(study=other_study, user=reviewer, role=Membership.Role.REVIEWER)
    client.force_login(reviewer)
    page = client.get(reverse("accounts:tokens")).content.decode()
    assert f'value="{study.pk}"' in page
    assert f'value="{other_study.pk}"' in page
    response = client.post(
        reverse("accounts:tokens"),
        {"name": "training job", "studies": [str(study.pk)], "expires_in": "30"},
        follow=True,
    )
    page = response.content.decode()
    key = re.search(r'id="new-token-key">(fm_[\w-]+)<', page).group(1)
    token = ApiToken.objects.get(user=reviewer)
    assert token.study_ids == [study.pk]
    days = (token.expires_at - timezone.now()) / timedelta(days=1)
    assert 29.99 < days <= 30
    assert "Tiny study" in page  # the list names the study it is limited to
    got = bearer(key).get(sigma_url(study))
    assert got.status_code == 200
    assert hashlib.sha256(got.content).hexdigest() == versions[0].sigma_sha256
    assert bearer(key).get(sigma_url(other_study)).status_code == 404
    event = AuditEvent.objects.get(action=AuditEvent.Action.TOKEN_CREATE)
    assert event.detail["study_ids"] == [study.pk]


def test_an_expired_token_answers_401_and_the_page_says_expired(client, study, users, versions):
    reviewer = users["reviewer"]
    token, key = api_token_create(
        user=reviewer, name="nightly", expires_at=timezone.now() + timedelta(days=1)
    )
    assert bearer(key).get(sigma_url(study)).status_code == 200
    token.expires_at = timezone.now() - timedelta(hours=1)
    token.save(update_fields=["expires_at"])  # a change of the row forgets its cached copy
    response = bearer(key).get(sigma_url(study))
    assert response.status_code == 401
    assert response.json()["detail"].startswith("This token expired on")
    client.force_login(reviewer)
    row = client.get(reverse("accounts:tokens")).content.decode()
    assert re.search(rf'data-token="{token.pk}">.*?<td>expired</td>', row, re.S)


def test_a_token_cannot_be_limited_to_a_study_of_others_nor_expire_in_the_past(
    study, other_study, users
):
    with pytest.raises(TokenError, match="not one of yours"):
        api_token_create(user=users["reviewer"], name="x", study_ids=[other_study.pk])
    with pytest.raises(TokenError, match="in the future"):
        api_token_create(user=users["reviewer"], name="x", expires_at=timezone.now())
    with pytest.raises(TokenError, match="at most 366 days"):
        api_token_create(
            user=users["reviewer"], name="x", expires_at=timezone.now() + timedelta(days=400)
        )
    assert not ApiToken.objects.exists()
    # Staff may limit a token to any study.
    token, _ = api_token_create(user=users["staff"], name="x", study_ids=[other_study.pk])
    assert token.study_ids == [other_study.pk]
