"""``spaces.0004``: existing spaces get the user whose upload created them as owner, where an
import row says so; any other space stays staff only (no owner, shared with nobody)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from spaces.models import EmbeddingSpace

pytestmark = pytest.mark.django_db(transaction=True)


def migrate(targets):
    MigrationExecutor(connection).migrate(targets)
    loader = MigrationExecutor(connection).loader
    return loader.project_state(list(loader.applied_migrations)).apps


def test_uploaded_spaces_get_their_uploader_as_owner_the_rest_stay_staff_only():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        apps = migrate([("spaces", "0003_hidden_columns")])
        User = apps.get_model("auth", "User")
        Space = apps.get_model("spaces", "EmbeddingSpace")
        Import = apps.get_model("spaces", "EmbeddingImport")
        boss = User.objects.create(username="boss", is_staff=True, password="!")
        fields = {"dimension": 2, "sha256": "0" * 64, "item_count": 0}
        uploaded = Space.objects.create(name="uploaded", matrix="spaces/u.npy", **fields)
        imported = Space.objects.create(name="by command", matrix="spaces/c.npy", **fields)
        orphan = Space.objects.create(name="deleted uploader", matrix="spaces/o.npy", **fields)
        Import.objects.create(
            name="uploaded", file="uploads/u.txt", space=uploaded, created_by=boss
        )
        Import.objects.create(name="deleted uploader", file="uploads/o.txt", space=orphan)
        Import.objects.create(name="failed", file="uploads/f.txt", created_by=boss)
        migrate(latest)
        owners = dict(EmbeddingSpace.objects.values_list("name", "owner__username"))
        assert owners == {"uploaded": "boss", "by command": None, "deleted uploader": None}
        assert not EmbeddingSpace.objects.filter(shared_with_study_admins=True).exists()
        assert not EmbeddingSpace.shared_with.through.objects.exists()
        assert imported.pk
    finally:
        migrate(latest)
