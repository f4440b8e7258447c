"""The move of ``ApiToken`` from learning to accounts keeps every token working.

A database at the schema before the move (learning 0010, no accounts) that holds the demo's
kind of data — a study with a published version, users — gets API tokens written with the
historical models, a permission on the token model granted to a group and an admin log entry on
a token. Migrating through the move must leave the tables byte for byte as they were, every token
readable through ``accounts.models.ApiToken`` and still accepted by the API, and the content type
renamed to ``accounts`` under its old id (so the permission and the log entry stay attached).
Runs on SQLite and on PostgreSQL (CI); the database ends migrated to the latest.
"""

from __future__ import annotations

import hashlib

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("learning", "0010_learning_weight_by_reliability"), ("accounts", None)]
# Just after the move (later migrations may add columns to these tables: not this test's concern).
MOVED = [("learning", "0011_apitoken_moved_to_accounts"), ("accounts", "0001_initial")]
TABLES = ["learning_apitoken", "auth_user", "learning_metricversion", "django_admin_log"]
KEYS = ["fm_" + "a" * 43, "fm_" + "b" * 43]


def migrate(targets):
    MigrationExecutor(connection).migrate(targets)
    loader = MigrationExecutor(connection).loader
    return loader.project_state(list(loader.applied_migrations)).apps


def latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def snapshot() -> dict[str, list[tuple]]:
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        rows = {}
        for table in TABLES:
            cursor.execute(f"SELECT * FROM {quote(table)} ORDER BY 1")
            rows[table] = cursor.fetchall()
    return rows


def write_dataset(apps) -> dict:
    User = apps.get_model("auth.User")
    staff = User.objects.create(username="boss", is_staff=True, password="!")
    reviewer = User.objects.create(username="rev", password="!")
    space = apps.get_model("spaces.EmbeddingSpace").objects.create(
        name="demo-space", dimension=3, matrix="spaces/demo.npy", sha256="ab" * 32
    )
    study = apps.get_model("annotation.Study").objects.create(name="Names study", space=space)
    apps.get_model("annotation.Membership").objects.create(
        user=reviewer, study=study, role="reviewer"
    )
    apps.get_model("learning.MetricVersion").objects.create(
        study=study,
        method="explore",
        label="explore",
        sigma="sigmas/explore.npy",
        dimension=3,
        status="ready",
        is_published=True,
    )
    TokenOld = apps.get_model("learning.ApiToken")
    tokens = [
        TokenOld.objects.create(
            user=reviewer,
            name=f"job {i}",
            prefix=key[:8],
            key_hash=hashlib.sha256(key.encode()).hexdigest(),
        )
        for i, key in enumerate(KEYS)
    ]
    ContentTypeOld = apps.get_model("contenttypes.ContentType")
    ct, _ = ContentTypeOld.objects.get_or_create(app_label="learning", model="apitoken")
    permission, _ = apps.get_model("auth.Permission").objects.get_or_create(
        content_type=ct, codename="view_apitoken", defaults={"name": "Can view api token"}
    )
    auditors = apps.get_model("auth.Group").objects.create(name="token auditors")
    auditors.permissions.add(permission)
    reviewer.groups.add(auditors)
    apps.get_model("admin.LogEntry").objects.create(
        user=staff,
        content_type=ct,
        object_id=str(tokens[0].pk),
        object_repr="job 0",
        action_flag=2,
        change_message="[]",
    )
    return {"tokens": [t.pk for t in tokens], "content_type": ct.pk, "study": study.pk}


def test_moving_api_tokens_to_accounts_keeps_every_row_token_and_content_type():
    end = MOVED
    try:
        old_apps = migrate(BEFORE)
        assert not [m for m in old_apps.get_models() if m._meta.app_label == "accounts"]
        ids = write_dataset(old_apps)
        before = snapshot()
        migrate(end)
        after = snapshot()
    finally:
        migrate(latest())
        ContentType.objects.clear_cache()

    assert after == before  # the tables are untouched: same rows, same values
    assert all(before.values())

    tokens = list(ApiToken.objects.order_by("id"))
    assert [t.pk for t in tokens] == ids["tokens"]
    assert [(t.name, t.user.username, t.is_active) for t in tokens] == [
        ("job 0", "rev", True),
        ("job 1", "rev", True),
    ]
    ct = ContentType.objects.get_for_model(ApiToken)
    assert (ct.pk, ct.app_label) == (ids["content_type"], "accounts")
    assert not ContentType.objects.filter(app_label="learning", model="apitoken").exists()
    assert get_user_model().objects.get(username="rev").groups.get().permissions.get().codename == (
        "view_apitoken"
    )
    assert LogEntry.objects.get().get_edited_object() == tokens[0]

    # A token made before the move still opens the API.
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {KEYS[1]}")
    response = client.get(reverse("api-study", args=[ids["study"]]))
    assert response.status_code == 200, response.content
