"""A two-study world for the security tests: study A with one user per role, study B with its
own annotator, a superuser, and in A a judgment, a group, metric versions, a WEAT test, an
embedding import and API tokens."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np
import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.files.base import ContentFile
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from annotation.models import ComparableGroup, Membership, PairJudgment, Study
from annotation.selectors import pool_cache_clear
from learning.models import MetricVersion, WeatSuite, WeatTest
from spaces.models import EmbeddingImport, Item
from tests.annotation.factories import make_metric_version, make_space, make_study, make_user
from tests.learning.audits.factories import audit_create_done

Role = Membership.Role
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


@pytest.fixture(autouse=True)
def _fresh_pools():
    pool_cache_clear()
    yield
    pool_cache_clear()


@pytest.fixture
def world(db, media_root) -> World:
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
    for role, user in users.items():
        token, key = api_token_create(user=user, name=f"{role} job")
        world.tokens[role], world.token_ids[role] = key, token.pk
    return world
