"""Fixtures of the record-upload tests: a staff client, and the imports queued (run by the
tests through the worker's body)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from spaces.records import uploads as record_uploads


@pytest.fixture
def staff_client(client, db, media_root):
    staff = get_user_model().objects.create_user("boss", password="pw-123456", is_staff=True)
    client.force_login(staff)
    return client


@pytest.fixture
def queued(monkeypatch):
    """The imports queued (the worker's task is run by the tests, by its body)."""
    sent = []
    monkeypatch.setattr(record_uploads, "record_import_enqueue", sent.append)
    return sent
