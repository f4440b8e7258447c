"""Audits in flight, per role (issue 39): whoever may audit gets 429 with ``Retry-After`` past the
limit (``AUDIT_MAX_IN_FLIGHT_USER``), and the limit is checked after access, so those who may not
audit get the authorization matrix's answer (401, 403, 404) whatever is in flight and a refused
request writes nothing (ten simultaneous posts: test_audit_limits_concurrency.py)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from learning.audits import services
from learning.models import ModelAudit

from .conftest import ROLES, World

pytestmark = pytest.mark.django_db

PAST_LIMIT = {"anon": 401, "ann_a": 403, "ann_b": 404, "rev_a": 429, "adm_a": 429, "su": 429}


def _scores(world: World) -> dict:
    keys = [item.key for item in world.items[:20]]
    text = "key,score\n" + "".join(f"{k},{i / 20}\n" for i, k in enumerate(keys))
    return {"predictions": SimpleUploadedFile("s.csv", text.encode()), "k": "3"}


@pytest.mark.parametrize("role", ROLES)
def test_every_role_that_may_audit_gets_429_past_its_limit(world, settings, role):
    settings.AUDIT_MAX_IN_FLIGHT_USER = 1
    done = ModelAudit.objects.get(study=world.study_a, name="matrix")
    user = world.users.get(role)
    if user is not None:  # one audit of theirs queued, in another study: the limit is per user
        ModelAudit.objects.create(
            study=world.study_b,
            version=world.version_b,
            name="busy",
            k=3,
            created_by=user,
            predictions=done.predictions.name,
        )
    before = ModelAudit.objects.count()
    response = world.client(role).post(
        reverse("api-audits", args=[world.study_a.pk]), _scores(world), format="multipart"
    )
    assert response.status_code == PAST_LIMIT[role], response.content[:300]
    if response.status_code == 429:
        assert response["Retry-After"] == str(services.RETRY_AFTER)
        assert "You have 1 audit(s) queued or running" in response.json()["detail"]
    assert ModelAudit.objects.count() == before
