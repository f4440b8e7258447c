"""The move of the embedding-space models to ``spaces`` keeps every row, relation and content type.

A database at the schema before the move (annotation 0003, learning 0006, audit 0001, no spaces)
gets a small demo-like data set written with the historical models; migrating to the latest must
leave every table byte-for-byte as it was and every relation readable through ``spaces.models``,
with the content types (and so permissions and admin log entries) renamed to ``spaces``.
Runs on SQLite and on PostgreSQL (CI); the database ends migrated to the latest.
"""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import (
    ComparableGroup,
    GoldPair,
    GroupEdit,
    Membership,
    PairJudgment,
    Study,
    StudyCounter,
)
from learning.models import MetricVersion, WeatResult, WeatSuite
from spaces.models import EmbeddingImport, EmbeddingSpace, Item, Tag

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [
    ("annotation", "0003_embedding_import"),
    ("learning", "0006_explore_auto_bound"),
    ("audit", "0001_initial"),
]
MOVED = ["embeddingspace", "tag", "item", "embeddingimport"]
TABLES = [
    "annotation_embeddingspace",
    "annotation_tag",
    "annotation_item",
    "annotation_item_tags",
    "annotation_embeddingimport",
    "annotation_study",
    "annotation_study_pool_tags",
    "annotation_membership",
    "annotation_pairjudgment",
    "annotation_goldpair",
    "annotation_comparablegroup",
    "annotation_comparablegroup_members",
    "annotation_groupedit",
    "annotation_studycounter",
    "learning_metricversion",
    "learning_weatsuite",
    "learning_weatsuite_studies",
    "learning_weattest",
    "learning_weatresult",
    "audit_auditevent",
    "django_admin_log",
    "auth_group_permissions",
]


def migrate(targets):
    """Migrate to ``targets``; returns the historical models of the migrated database."""
    MigrationExecutor(connection).migrate(targets)
    loader = MigrationExecutor(connection).loader  # re-reads what is applied
    return loader.project_state(list(loader.applied_migrations)).apps


def latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def columns() -> dict[str, list[str]]:
    """The columns each table has now (later migrations may add some: they are not compared)."""
    with connection.cursor() as cursor:
        return {
            table: [c.name for c in connection.introspection.get_table_description(cursor, table)]
            for table in TABLES
        }


def snapshot(names: dict[str, list[str]]) -> dict[str, list[tuple]]:
    """Every row of the tables the move touches (or whose foreign keys point at moved tables),
    in the given columns."""
    rows = {}
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in TABLES:
            listed = ", ".join(quote(c) for c in names[table])
            cursor.execute(f"SELECT {listed} FROM {quote(table)} ORDER BY 1")
            rows[table] = cursor.fetchall()
    return rows


def write_dataset(apps) -> dict:
    """A demo-like data set written with the models as they were before the move."""

    def model(label):
        return apps.get_model(label)

    ContentTypeOld = model("contenttypes.ContentType")
    User = model("auth.User")
    staff = User.objects.create(username="boss", is_staff=True, password="!")
    annotator = User.objects.create(username="ann", password="!")
    reviewer = User.objects.create(username="rev", password="!")

    space = model("annotation.EmbeddingSpace").objects.create(
        name="demo-space",
        dimension=3,
        source="demo vectors",
        matrix="spaces/demo-space-0a1b2c3d.npy",
        sha256="ab" * 32,
        item_count=5,
    )
    other_space = model("annotation.EmbeddingSpace").objects.create(
        name="other", dimension=2, matrix="spaces/other.npy", sha256="cd" * 32, item_count=1
    )
    TagOld = model("annotation.Tag")
    names, words, stop = (TagOld.objects.create(name=n) for n in ("names", "words", "stop"))
    ItemOld = model("annotation.Item")
    specs = [
        ("Emily", "name", None, [names]),
        ("Ethan", "name", None, [names]),
        ("flower", "word", None, [words]),
        ("the", "word", None, [words, stop]),
        ("r17", "record", {"age": 39, "sex": "Female"}, []),
    ]
    items = []
    for row, (key, kind, payload, tags) in enumerate(specs):
        item = ItemOld.objects.create(
            space=space, key=key, kind=kind, payload=payload, row=row, text=key.upper()
        )
        item.tags.set(tags)
        items.append(item)
    lone = ItemOld.objects.create(space=other_space, key="lone", row=0)
    lone.tags.add(words)
    a, b, c, d, e = items

    study = model("annotation.Study").objects.create(
        name="Names study", space=space, mode="both", strategy="random", gold_rate=0.1
    )
    study.pool_tags.set([names, words])
    MembershipOld = model("annotation.Membership")
    MembershipOld.objects.create(user=annotator, study=study, role="annotator")
    MembershipOld.objects.create(user=reviewer, study=study, role="reviewer")
    JudgmentOld = model("annotation.PairJudgment")
    JudgmentOld.objects.create(
        study=study, item_a=a, item_b=b, label="comparable", annotator=annotator, elapsed_ms=800
    )
    JudgmentOld.objects.create(
        study=study, item_a=c, item_b=d, label="incomparable", annotator=annotator
    )
    JudgmentOld.objects.create(
        study=study, item_a=a, item_b=e, label="unsure", source="imported", provenance="csv"
    )
    model("annotation.GoldPair").objects.create(study=study, item_a=a, item_b=b, label="comparable")
    group = model("annotation.ComparableGroup").objects.create(
        study=study, name="first names", created_by=annotator, revision=2
    )
    group.members.set([a, b])
    GroupEditOld = model("annotation.GroupEdit")
    GroupEditOld.objects.create(group=group, user=annotator, action="create", revision=1)
    GroupEditOld.objects.create(group=group, user=annotator, action="add", item=b, revision=2)
    model("annotation.StudyCounter").objects.create(study=study, group_revision=2)
    model("annotation.EmbeddingImport").objects.create(
        file="uploads/0123456789ab/demo.txt",
        original_name="demo.txt",
        name="demo-space",
        format="glove",
        kind="word",
        tags=["demo"],
        status="done",
        progress_rows=5,
        total_rows=5,
        space=space,
        created_by=staff,
        attempts=1,
    )
    model("annotation.EmbeddingImport").objects.create(
        file="uploads/ffff/bad.txt", name="bad", status="failed", error="line 2: empty key"
    )

    version = model("learning.MetricVersion").objects.create(
        study=study,
        method="explore",
        label="explore",
        sigma="sigmas/explore.npy",
        dimension=3,
        judgment_watermark=3,
        status="ready",
        is_published=True,
    )
    suite = model("learning.WeatSuite").objects.create(name="demo WEAT")
    suite.studies.add(study)
    test = model("learning.WeatTest").objects.create(
        suite=suite,
        name="flowers / pleasant",
        kind="meaningful",
        x_name="flowers",
        y_name="insects",
        a_name="pleasant",
        b_name="unpleasant",
        x_words=["flower"],
        y_words=["the"],
        a_words=["Emily"],
        b_words=["Ethan"],
    )
    WeatResultOld = model("learning.WeatResult")
    common = {"p_value": 0.01, "effect_size": 1.2, "statistic": 0.3, "n_partitions": 2}
    WeatResultOld.objects.create(
        test=test, space=space, metric_version=version, metric="explore", exact=True, **common
    )
    WeatResultOld.objects.create(test=test, space=space, metric="euclidean", exact=True, **common)
    model("audit.AuditEvent").objects.create(
        actor=staff,
        actor_name="boss",
        action="publish",
        target_type="learning.metricversion",
        target_id=str(version.pk),
        study=study,
    )

    # Content types as an older deployment has them (annotation.*), with a permission granted
    # and an admin log entry; plus a spaces.tag row a stray post_migrate could have made.
    cts = {
        name: ContentTypeOld.objects.get_or_create(app_label="annotation", model=name)[0]
        for name in MOVED
    }
    PermissionOld = model("auth.Permission")
    change_item, _ = PermissionOld.objects.get_or_create(
        content_type=cts["item"], codename="change_item", defaults={"name": "Can change item"}
    )
    editors = model("auth.Group").objects.create(name="item editors")
    editors.permissions.add(change_item)
    reviewer.groups.add(editors)
    model("admin.LogEntry").objects.create(
        user=staff,
        content_type=cts["item"],
        object_id=str(a.pk),
        object_repr="Emily",
        action_flag=2,
        change_message="[]",
    )
    stray, _ = ContentTypeOld.objects.get_or_create(app_label="spaces", model="tag")
    PermissionOld.objects.get_or_create(
        content_type=stray, codename="view_tag", defaults={"name": "Can view tag"}
    )
    return {
        "space": space.pk,
        "other_space": other_space.pk,
        "items": [i.pk for i in items],
        "lone": lone.pk,
        "tags": {"names": names.pk, "words": words.pk, "stop": stop.pk},
        "study": study.pk,
        "group": group.pk,
        "version": version.pk,
        "reviewer": reviewer.pk,
        "staff": staff.pk,
        "content_types": {name: ct.pk for name, ct in cts.items()},
    }


def test_moving_the_models_to_spaces_keeps_every_row_relation_and_content_type():
    end = latest()
    try:
        old_apps = migrate(BEFORE + [("spaces", None)])
        assert not [m for m in old_apps.get_models() if m._meta.app_label == "spaces"]
        ids = write_dataset(old_apps)
        names = columns()
        before = snapshot(names)
        migrate(end)
        after = snapshot(names)
    finally:
        migrate(latest())
        ContentType.objects.clear_cache()

    # The tables are untouched: same rows, same values, same foreign keys.
    assert {t: len(r) for t, r in after.items()} == {t: len(r) for t, r in before.items()}
    assert after == before
    assert all(before.values()), [t for t, rows in before.items() if not rows]

    # Read through the new models.
    space = EmbeddingSpace.objects.get(pk=ids["space"])
    assert (space.name, space.dimension, space.item_count) == ("demo-space", 3, 5)
    assert space.matrix.name == "spaces/demo-space-0a1b2c3d.npy"
    items = list(space.items.order_by("row"))
    assert [i.pk for i in items] == ids["items"]
    assert [(i.key, i.kind, i.row, i.text) for i in items][-1] == ("r17", "record", 4, "R17")
    assert items[-1].payload == {"age": 39, "sex": "Female"}
    a, b, c, d, e = items
    tags = {t.name: t for t in Tag.objects.all()}
    assert {name: t.pk for name, t in tags.items()} == ids["tags"]
    assert set(d.tags.values_list("name", flat=True)) == {"words", "stop"}
    assert set(tags["words"].items.values_list("key", flat=True)) == {"flower", "the", "lone"}
    assert Item.objects.get(pk=ids["lone"]).space_id == ids["other_space"]

    study = Study.objects.get(pk=ids["study"])
    assert study.space == space
    assert list(space.studies.all()) == [study]
    assert set(study.pool_tags.all()) == {tags["names"], tags["words"]}
    assert set(tags["names"].studies.all()) == {study}
    assert Membership.objects.filter(study=study).count() == 2
    judgments = PairJudgment.objects.filter(study=study).select_related("item_a", "item_b")
    assert [(j.item_a, j.item_b, j.label, j.source) for j in judgments] == [
        (a, b, "comparable", "annotated"),
        (c, d, "incomparable", "annotated"),
        (a, e, "unsure", "imported"),
    ]
    gold = GoldPair.objects.get(study=study)
    assert (gold.item_a, gold.item_b, gold.label) == (a, b, "comparable")
    group = ComparableGroup.objects.get(pk=ids["group"])
    assert set(group.members.all()) == {a, b}
    assert list(b.comparable_groups.all()) == [group]
    assert [(g.action, g.item) for g in GroupEdit.objects.filter(group=group)] == [
        ("add", b),
        ("create", None),
    ]
    assert StudyCounter.objects.get(study=study).group_revision == 2

    done, failed = EmbeddingImport.objects.order_by("id")
    assert (done.space, done.created_by_id, done.tags, done.status) == (
        space,
        ids["staff"],
        ["demo"],
        "done",
    )
    assert (failed.space, failed.error) == (None, "line 2: empty key")

    version = MetricVersion.objects.get(pk=ids["version"])
    assert version.study == study
    results = WeatResult.objects.filter(space=space).order_by("id")
    assert [(r.metric, r.metric_version, r.space) for r in results] == [
        ("explore", version, space),
        ("euclidean", None, space),
    ]
    assert list(WeatSuite.objects.get().studies.all()) == [study]

    # Content types: renamed in place (same ids), so permissions and log entries follow.
    for name, pk in ids["content_types"].items():
        ct = ContentType.objects.get(pk=pk)
        assert (ct.app_label, ct.model) == ("spaces", name)
    assert not ContentType.objects.filter(app_label="annotation", model__in=MOVED).exists()
    assert ContentType.objects.get_for_model(Item).pk == ids["content_types"]["item"]
    assert ContentType.objects.get_for_model(Tag).pk == ids["content_types"]["tag"]
    entry = LogEntry.objects.get()
    assert entry.get_edited_object() == a
    assert entry.get_admin_url() == f"/admin/spaces/item/{a.pk}/change/"
    reviewer = get_user_model().objects.get(pk=ids["reviewer"])
    assert reviewer.has_perm("spaces.change_item")
    assert not reviewer.has_perm("annotation.change_item")

    # The moved tables take new rows (sequences intact), the M2M table included.
    new = Item.objects.create(space=space, key="Olivia", row=5, kind="name")
    new.tags.add(tags["names"])
    assert new.pk > max(ids["items"] + [ids["lone"]])
    assert set(tags["names"].items.values_list("key", flat=True)) == {"Emily", "Ethan", "Olivia"}


def test_the_move_is_reversible_and_the_content_types_go_back():
    end = latest()
    try:
        ContentTypeOld = migrate(BEFORE + [("spaces", None)]).get_model(
            "contenttypes", "ContentType"
        )
        for name in MOVED:
            ContentTypeOld.objects.get_or_create(app_label="annotation", model=name)
        old_ids = dict(
            ContentTypeOld.objects.filter(app_label="annotation", model__in=MOVED).values_list(
                "model", "pk"
            )
        )
        migrate(end)
        assert (
            dict(
                ContentType.objects.filter(app_label="spaces", model__in=MOVED).values_list(
                    "model", "pk"
                )
            )
            == old_ids
        )
        migrate(BEFORE + [("spaces", None)])
        back = dict(
            ContentTypeOld.objects.filter(app_label="annotation", model__in=MOVED).values_list(
                "model", "pk"
            )
        )
        assert back == old_ids
        assert not ContentTypeOld.objects.filter(app_label="spaces", model__in=MOVED).exists()
    finally:
        migrate(latest())
        ContentType.objects.clear_cache()
