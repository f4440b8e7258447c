"""load_demo on the real GloVe and baby-names package data: contents, tags, and idempotency."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import call_command
from django.test import override_settings

from annotation.models import ComparableGroup, Label, Membership, PairJudgment, Source, Study
from experiments import glove_demo
from learning.models import MetricVersion, WeatResult, WeatSuite, WeatTest
from spaces.models import EmbeddingSpace, Item, Tag

from .celery_support import app_pointed_at

# One xdist worker for the module (``--dist loadfile``): its fixture loads the demo (~40 s) once.
pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def loaded(django_db_setup, django_db_blocker, tmp_path_factory):
    """Load the demo once for the module (committed, as load_demo does), DEBUG on for users.

    Cleaned up with ``flush``, as pytest-django does after a transactional test.
    """
    media = tmp_path_factory.mktemp("media")
    with (
        override_settings(DEBUG=True, MEDIA_ROOT=media),
        django_db_blocker.unblock(),
        # the refits load_demo queues after its commits go to Kombu's in-memory transport
        app_pointed_at("memory://", result_backend="cache+memory://"),
    ):
        call_command("load_demo")
        yield media
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def space(loaded, db, settings) -> EmbeddingSpace:
    settings.MEDIA_ROOT = loaded
    return EmbeddingSpace.objects.get(name=glove_demo.SPACE_NAME)


def test_space_holds_the_top_glove_words_plus_the_demos_words(space):
    vocabulary = glove_demo.glove_vocabulary()
    keys = list(Item.objects.filter(space=space).order_by("row").values_list("key", flat=True))
    assert keys[:50_000] == vocabulary[:50_000]  # frequency order kept
    assert 50_000 < len(keys) == space.item_count < 60_000
    assert space.dimension == 50
    glove = glove_demo.glove_matrix()
    row_of = {w: i for i, w in enumerate(vocabulary)}
    for key in ["the", "emma", "flower", "horrible"]:
        item = Item.objects.get(space=space, key=key)
        np.testing.assert_array_equal(space.vectors([item.row])[0], glove[row_of[key]])


def test_about_1200_popular_names_are_tagged_and_kind_name(space):
    names = Item.objects.filter(space=space, tags__name="name")
    assert names.count() == glove_demo.N_NAMES
    assert set(names.values_list("kind", flat=True)) == {Item.Kind.NAME}
    keys = set(names.values_list("key", flat=True))
    assert {"emma", "noah", "sophia", "liam", "olivia", "jacob"} <= keys
    assert all(k == k.lower() for k in keys)


def test_opinion_and_weat_words_are_tagged(space):
    assert Item.objects.filter(space=space, tags__name="positive", key="good").exists()
    assert Item.objects.filter(space=space, tags__name="negative", key="horrible").exists()
    flowers = set(Item.objects.filter(tags__name="weat:flowers").values_list("key", flat=True))
    assert {"aster", "clover", "tulip", "rose"} <= flowers
    assert Item.objects.filter(tags__name="weat:european-american-names", key="adam").exists()


def test_study_with_pool_memberships_group_and_suite(space):
    study = Study.objects.get(name=glove_demo.STUDY_NAME)
    assert study.space == space
    assert study.mode == Study.Mode.BOTH
    assert list(study.pool_tags.values_list("name", flat=True)) == ["name"]
    roles = dict(Membership.objects.filter(study=study).values_list("user__username", "role"))
    assert roles == {"admin": "admin", "reviewer": "reviewer", "annotator": "annotator"}
    group = ComparableGroup.objects.get(study=study)
    assert group.source == Source.IMPORTED
    assert group.members.count() == glove_demo.N_NAMES
    assert not group.members.exclude(tags__name="name").exists()
    suite = WeatSuite.objects.get(studies=study)
    tests = list(suite.tests.order_by("position"))
    assert len(tests) == 10
    meaningful = [t.position for t in tests if t.kind == WeatTest.Kind.MEANINGFUL]
    assert meaningful == [1, 2, 9]
    assert (tests[0].x_name, tests[0].a_name) == ("Flowers", "Pleasant")
    assert tests[8].x_name == "Mental disease"
    assert len(tests[2].x_words) == len(tests[2].y_words) == 32  # Caliskan's removals applied


def test_seed_pairs_follow_the_papers_construction(space):
    study = Study.objects.get(name=glove_demo.STUDY_NAME)
    judgments = PairJudgment.objects.filter(study=study)
    assert judgments.count() == 100_000
    assert judgments.filter(label=Label.COMPARABLE).count() == 50_000
    assert judgments.filter(label=Label.INCOMPARABLE).count() == 50_000
    assert not judgments.exclude(source=Source.IMPORTED).exists()
    assert not judgments.filter(annotator__isnull=False).exists()
    pairs = list(judgments.values_list("item_a_id", "item_b_id", "label"))
    assert all(a < b for a, b, _ in pairs)
    assert len({(a, b) for a, b, _ in pairs}) == 100_000  # no pair twice
    names = set(Item.objects.filter(space=space, tags__name="name").values_list("id", flat=True))
    positive = set(Item.objects.filter(tags__name="positive").values_list("id", flat=True))
    negative = set(Item.objects.filter(tags__name="negative").values_list("id", flat=True))
    for a, b, label in pairs[::97]:
        if label == Label.COMPARABLE:
            assert a in names
            assert b in names
        else:
            assert {a in positive, b in positive} == {True, False}
            assert {a in negative, b in negative} == {True, False}


def test_second_run_changes_nothing(space, settings, capsys):
    settings.DEBUG = True
    counts = {
        m: m.objects.count()
        for m in (EmbeddingSpace, Item, PairJudgment, ComparableGroup, Membership, WeatTest, Tag)
    }
    links = Item.tags.through.objects.count()
    call_command("load_demo")
    assert "nothing changed" in capsys.readouterr().out
    assert counts == {m: m.objects.count() for m in counts}
    assert links == Item.tags.through.objects.count()
    assert len(list((settings.MEDIA_ROOT / "spaces").glob("*.npy"))) == 1


def test_reproduce_weat_table_runs_on_the_demo(space, tmp_path):
    out = tmp_path / "table.json"
    call_command("reproduce_weat_table", "--json", str(out), "--permutations", "5000")
    rows = json.loads(out.read_text())
    assert len(rows) == 10 * 5
    assert {r["metric"] for r in rows} == {"euclidean", "explore", "face-3", "face-10", "face-20"}
    firsts = [r["test"] for r in rows[::5]]
    assert firsts[:3] == [
        "Flowers / Pleasant",
        "Instruments / Pleasant",
        "Mental disease / Temporary",
    ]
    assert firsts.count("European American names / Pleasant") == 3
    versions = MetricVersion.objects.filter(study__name=glove_demo.STUDY_NAME, status="ready")
    assert sorted(versions.values_list("label", flat=True)) == [
        "explore",
        "face-10",
        "face-20",
        "face-3",
    ]
    explore = versions.get(label="explore")
    assert explore.counts == {"comparable": 50_000, "incomparable": 50_000}
    assert WeatResult.objects.filter(metric_version__in=versions).count() == 40
