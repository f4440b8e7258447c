"""Annotation fixtures: a small random embedding space, a study and users in every role."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from annotation.models import Membership

from .factories import make_space, make_study, make_user

Role = Membership.Role


@pytest.fixture(autouse=True)
def _fresh_caches():
    cache.clear()  # (the process caches: tests/conftest.py)
    yield
    cache.clear()


@pytest.fixture
def space(db, media_root):
    return make_space()


@pytest.fixture
def items(space):
    return list(space.items.order_by("row"))


@pytest.fixture
def study(space):
    return make_study(space=space)


@pytest.fixture
def annotator(study):
    return make_user("ann", study=study, role=Role.ANNOTATOR)


@pytest.fixture
def other_annotator(study):
    return make_user("ann2", study=study, role=Role.ANNOTATOR)


@pytest.fixture
def reviewer(study):
    return make_user("rev", study=study, role=Role.REVIEWER)


@pytest.fixture
def study_admin(study):
    return make_user("boss", study=study, role=Role.ADMIN)


@pytest.fixture
def outsider(db):
    return make_user("outsider")


@pytest.fixture
def staff(db):
    return make_user("staffer", is_staff=True)


@pytest.fixture
def client_for():
    """``client_for(user)`` → a DRF APIClient logged in as ``user`` (session auth)."""

    def make(user) -> APIClient:
        client = APIClient()
        client.force_login(user)
        return client

    return make
