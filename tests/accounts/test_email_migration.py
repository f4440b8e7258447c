"""``accounts.0002``: one account per e-mail address (any case), enforced by the database.

A database before it may hold addresses shared by several accounts (the invitation's read check
raced: issue 26). The migration keeps each address on one account — active, password set,
latest login, oldest, in that order — removes it from the others, writes each removal to the
audit log, and then the unique index on ``lower(email)`` refuses a new duplicate in any case.
Empty addresses stay allowed on any number of accounts. (tests/accounts/test_migration.py
migrates a database from before accounts existed through this migration too.)
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from audit.models import AuditEvent

pytestmark = pytest.mark.django_db(transaction=True)


def migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)


def test_shared_addresses_are_resolved_and_then_refused():
    migrate([("accounts", "0001_initial")])
    User = get_user_model()
    early, late = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 6, 1, tzinfo=UTC)
    made = {
        "invited-twice": User(username="invited-twice", email="Ann@Example.org"),
        "ann": User(username="ann", email="ann@example.org", last_login=early),
        "ann-new": User(username="ann-new", email="ANN@example.org", last_login=late),
        "gone": User(username="gone", email="ann@EXAMPLE.org", last_login=late, is_active=False),
        "bob": User(username="bob", email="bob@example.org"),
        "nobody-1": User(username="nobody-1", email=""),
        "nobody-2": User(username="nobody-2", email=""),
    }
    for name, user in made.items():
        if name == "invited-twice":
            user.set_unusable_password()
        else:
            user.set_password("x-password-1")
        user.save()

    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    emails = dict(User.objects.values_list("username", "email"))
    # Active with a password and the latest login keeps it; the others lose it.
    assert emails == {
        "invited-twice": "",
        "ann": "",
        "ann-new": "ANN@example.org",
        "gone": "",
        "bob": "bob@example.org",
        "nobody-1": "",
        "nobody-2": "",
    }
    cleared = AuditEvent.objects.filter(action="account.email_cleared")
    assert sorted(e.detail["username"] for e in cleared) == ["ann", "gone", "invited-twice"]
    assert {e.detail["kept_by"]["username"] for e in cleared} == {"ann-new"}
    assert {e.detail["email"] for e in cleared} == {
        "Ann@Example.org",
        "ann@example.org",
        "ann@EXAMPLE.org",
    }
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create(username="another", email="bob@EXAMPLE.ORG")
    User.objects.create(username="nobody-3", email="")  # empty addresses stay allowed
