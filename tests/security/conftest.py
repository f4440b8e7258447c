"""A two-study world for the security tests: study A with one user per role, study B with its
own annotator, a superuser, and in A a judgment, a group, metric versions, a WEAT test, an
embedding import and API tokens.

The world is built once a module, inside a transaction rolled back after the module; each test
runs in a savepoint inside it (pytest-django's ``db``: a ``TestCase``), gets fresh instances read
back from the rows, and a copy of the world's files in its own MEDIA_ROOT. Building it for every
test cost ~0.4 s, most of the ~0.5 s of each of the ~1,000 tests here.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass, field

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.files.base import ContentFile
from django.db import transaction
from django.test import override_settings
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from annotation.models import ComparableGroup, Membership, PairJudgment, Study, Webhook
from annotation.selectors import pool_cache_clear
from learning.models import MetricVersion, WeatSuite, WeatTest
from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from tests.annotation.factories import make_metric_version, make_space, make_study, make_user
from tests.learning.audits.factories import audit_create_done

Role = Membership.Role
User = get_user_model()
ROLES = ["anon", "ann_b", "rev_a", "adm_a", "su", "ann_a"]  # the owner of A's objects last


WEAT_WORDS = {
    "x_words": ["w010", "w011"],
    "y_words": ["w012", "w013"],
    "a_words": ["w014", "w015"],
    "b_words": ["w016", "w017"],
}


def own_weat_test(study: Study) -> WeatTest:
    """The test "mine" of the study's own suite (made again when a request deleted it)."""
    suite, _ = WeatSuite.objects.get_or_create(
        owner_study=study, defaults={"name": f"Tests of {study.name}"}
    )
    suite.studies.add(study)
    names = {"kind": "unfair", "x_name": "X", "y_name": "Y", "a_name": "A", "b_name": "B"}
    test, _ = WeatTest.objects.get_or_create(suite=suite, name="mine", defaults=names | WEAT_WORDS)
    return test


@dataclass
class World:
    study_a: Study
    study_b: Study
    items: list[Item]
    users: dict
    judgment: PairJudgment
    group: ComparableGroup
    version: MetricVersion
    other_version: MetricVersion
    weat_test: WeatTest
    embedding_import: EmbeddingImport
    group_b: ComparableGroup
    version_b: MetricVersion
    records_import: EmbeddingImport  # a record upload waiting for its columns
    tokens: dict = field(default_factory=dict)  # role -> plaintext API token
    token_ids: dict = field(default_factory=dict)

    def user(self, role: str):
        return self.users.get(role) or AnonymousUser()

    def client(self, role: str, **kwargs) -> APIClient:
        client = APIClient(**kwargs)
        if role != "anon":
            client.force_login(self.users[role])
        return client

    def token_client(self, role: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.tokens[role]}")
        return client


def unused_space(world: World) -> EmbeddingSpace:
    """A space no study uses, owned by adm_a (made by the world; made again once deleted)."""
    space = EmbeddingSpace.objects.filter(name=UNUSED_SPACE).first()
    if space is None:
        space = make_space(name=UNUSED_SPACE, n_words=3)
        EmbeddingSpace.objects.filter(pk=space.pk).update(owner=world.users["adm_a"])
    return space


UNUSED_SPACE = "unused space"


@pytest.fixture(scope="module")
def _module_world(django_db_setup, django_db_blocker, tmp_path_factory):
    """The world's rows (ids and token keys) and files, built once for the module in a
    transaction that is rolled back after it (no other test, nor any other connection, ever
    sees them); marked as a test case's, as Django's ``TestCase`` marks its class-wide one."""
    media = tmp_path_factory.mktemp("world-media")
    cache = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer._from_testcase = True  # durable=True blocks inside tests stay allowed
        outer.__enter__()
        try:
            with override_settings(
                MEDIA_ROOT=media,
                CACHES=cache,
                PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
            ):
                built = _build_world()
            pool_cache_clear()
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    yield _ids(built), media
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        outer.__exit__(None, None, None)


def _ids(world: World) -> dict:
    return {
        name: getattr(world, name).pk
        for name in (
            "study_a",
            "study_b",
            "judgment",
            "group",
            "version",
            "other_version",
            "weat_test",
            "embedding_import",
            "group_b",
            "version_b",
            "records_import",
        )
    } | {
        "users": {role: user.pk for role, user in world.users.items()},
        "tokens": dict(world.tokens),
        "token_ids": dict(world.token_ids),
    }


@pytest.fixture
def world(_module_world, db, media_root, request) -> World:
    """The module's world as this test's: fresh instances of its rows (rolled back after the
    test) and its files copied into the test's MEDIA_ROOT."""
    marker = request.node.get_closest_marker("django_db")
    if (marker and marker.kwargs.get("transaction")) or "transactional_db" in request.fixturenames:
        pytest.fail("world lives in a transaction: tests that commit build their own data")
    ids, media = _module_world
    shutil.copytree(media, media_root, dirs_exist_ok=True)
    users = {role: User.objects.get(pk=pk) for role, pk in ids["users"].items()}
    study_a = Study.objects.get(pk=ids["study_a"])
    return World(
        study_a=study_a,
        study_b=Study.objects.get(pk=ids["study_b"]),
        items=list(study_a.space.items.order_by("row")),
        users=users,
        judgment=PairJudgment.objects.get(pk=ids["judgment"]),
        group=ComparableGroup.objects.get(pk=ids["group"]),
        version=MetricVersion.objects.get(pk=ids["version"]),
        other_version=MetricVersion.objects.get(pk=ids["other_version"]),
        weat_test=WeatTest.objects.get(pk=ids["weat_test"]),
        embedding_import=EmbeddingImport.objects.get(pk=ids["embedding_import"]),
        group_b=ComparableGroup.objects.get(pk=ids["group_b"]),
        version_b=MetricVersion.objects.get(pk=ids["version_b"]),
        records_import=EmbeddingImport.objects.get(pk=ids["records_import"]),
        tokens=dict(ids["tokens"]),
        token_ids=dict(ids["token_ids"]),
    )


def _build_world() -> World:
    space = make_space()
    items = list(space.items.order_by("row"))
    study_a = make_study(space=space, name="Study A")
    study_b = make_study(space=space, name="Study B")
    users = {
        "ann_a": make_user("ann_a", study=study_a, role=Role.ANNOTATOR),
        "ann_b": make_user("ann_b", study=study_b, role=Role.ANNOTATOR),
        "rev_a": make_user("rev_a", study=study_a, role=Role.REVIEWER),
        "adm_a": make_user("adm_a", study=study_a, role=Role.ADMIN),
        "su": make_user("su", is_staff=True, is_superuser=True),
    }
    # A second reviewer of A, for the member-removal rows (not one of ROLES).
    users["extra"] = make_user("extra", study=study_a, role=Role.REVIEWER)
    judgment = PairJudgment.objects.create(
        study=study_a,
        item_a=items[0],
        item_b=items[1],
        label="comparable",
        annotator=users["ann_a"],
        client_id=uuid.uuid4(),
    )
    group = ComparableGroup.objects.create(study=study_a, name="g-a", created_by=users["ann_a"])
    # A webhook of A for the rows of its actions (a test event is a row; nothing is sent here).
    Webhook.objects.create(study=study_a, url="https://93.184.216.34/hook", events=["audit.done"])
    group.members.set(items[:3])
    dim = space.dimension
    version = make_metric_version(
        study=study_a, method="face", sigma=np.eye(dim), label="f1", is_published=True
    )
    other = make_metric_version(
        study=study_a, method="face", sigma=2 * np.eye(dim), label="f2", judgment_watermark=1
    )
    suite = WeatSuite.objects.create(name="suite")
    suite.studies.add(study_a)
    weat_test = WeatTest.objects.create(
        suite=suite,
        name="X / A",
        kind=WeatTest.Kind.MEANINGFUL,
        x_name="X",
        y_name="Y",
        a_name="A",
        b_name="B",
        x_words=["w000"],
        y_words=["w001"],
        a_words=["w002"],
        b_words=["w003"],
    )
    own_weat_test(study_a)  # a test of A's own suite, which its admins change on the pages
    job = EmbeddingImport(name="imp", status=EmbeddingImport.Status.FAILED, error="bad file")
    job.file.save("imp.txt", ContentFile(b"x 1 2\n"), save=False)
    job.save()
    records = EmbeddingImport(
        name="records", format="records-csv", stage="columns", created_by=users["su"]
    )
    records.file.save("people.csv", ContentFile(b"age,sex\n30,F\n40,M\n"), save=False)
    records.save()
    group_b = ComparableGroup.objects.create(study=study_b, name="g-b", created_by=users["ann_b"])
    version_b = make_metric_version(study=study_b, method="face", sigma=np.eye(dim), label="b1")
    world = World(
        study_a=study_a,
        study_b=study_b,
        items=items,
        users=users,
        judgment=judgment,
        group=group,
        version=version,
        other_version=other,
        weat_test=weat_test,
        embedding_import=job,
        group_b=group_b,
        version_b=version_b,
        records_import=records,
    )
    audit_create_done(study_a, version, items)
    unused_space(world)
    for role, user in users.items():
        token, key = api_token_create(user=user, name=f"{role} job")
        world.tokens[role], world.token_ids[role] = key, token.pk
    return world
