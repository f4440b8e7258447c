"""A study's own WEAT tests (learning/evaluation/weat_tests.py): the checks of a draft, the
preview, saving (own suite, results queued after the commit), the worker's results, editing and
deleting. Effect sizes are checked against a hand computation of Caliskan's formula under Σ
(cosines ``uᵀΣv / √(uᵀΣu · vᵀΣv)``), independent of the core's Σ^{1/2} transform."""

from __future__ import annotations

import numpy as np
import pytest
from celery import current_app

from common.errors import NotAllowed, NotFound
from learning.evaluation import weat_tests
from learning.evaluation.weat_tests import WeatInputError, weat_draft
from learning.models import WeatResult, WeatSuite, WeatTest
from learning.versions.sigmas import sigma_of
from spaces.models import EmbeddingSpace

pytestmark = pytest.mark.django_db

WORDS = {
    "x_words": ["w0", "w1", "w2"],
    "y_words": ["w3", "w4", "w5"],
    "a_words": ["w6", "w7"],
    "b_words": ["w8", "w9"],
}
NAMES = {"x_name": "Flowers", "y_name": "Insects", "a_name": "Pleasant", "b_name": "Unpleasant"}


def draft(study, words=None, name="Flowers / Pleasant", test=None, kind="meaningful"):
    return weat_draft(
        study=study, name=name, kind=kind, names=NAMES, words=words or WORDS, test=test
    )


def hand_effect_size(space, words: dict, sigma) -> float:
    """Caliskan's d under ⟨u, v⟩_Σ, written out with explicit Σ cosines."""
    rows = {k: int(k[1:]) for ws in words.values() for k in ws}
    vec = {k: space.vectors([r])[0] for k, r in rows.items()}
    sig = np.eye(space.dimension) if sigma is None else sigma

    def cos(u, v):
        return (u @ sig @ v) / np.sqrt((u @ sig @ u) * (v @ sig @ v))

    def s(w):
        return np.mean([cos(vec[w], vec[a]) for a in words["a_words"]]) - np.mean(
            [cos(vec[w], vec[b]) for b in words["b_words"]]
        )

    sx = [s(w) for w in words["x_words"]]
    sy = [s(w) for w in words["y_words"]]
    return (np.mean(sx) - np.mean(sy)) / np.std(sx + sy, ddof=1)


@pytest.fixture
def sent(monkeypatch) -> list:
    """The task messages sent to the broker (name, args), instead of a broker."""
    messages = []
    monkeypatch.setattr(
        current_app, "send_task", lambda name, **options: messages.append((name, options["args"]))
    )
    return messages


# --- the checks of a draft -------------------------------------------------------------------


def test_unknown_words_are_listed_and_not_added(study):
    words = {**WORDS, "x_words": ["w0", "W1", "tulip", "w2"], "b_words": ["w8", "w9", "roach"]}
    d = draft(study, words)
    assert d.words["x_words"] == ["w0", "W1", "w2"]  # "W1" is found as w1 (lowercased)
    assert d.unknown == {"x_words": ["tulip"], "b_words": ["roach"]}
    assert d.unknown_words == ["tulip", "roach"]


def test_pasted_lists_are_split_on_lines_and_commas(study):
    d = draft(study, {**WORDS, "x_words": "w0, w1\n\nw2\nw0"})
    assert d.words["x_words"] == ["w0", "w1", "w2"]


@pytest.mark.parametrize(
    ("words", "field", "says"),
    [
        ({**WORDS, "y_words": []}, "y_words", "needs at least 2 words"),
        ({**WORDS, "a_words": ["rose", "tulip"]}, "a_words", "not in the space: rose, tulip"),
        ({**WORDS, "x_words": ["w0", "w6"]}, "a_words", "“w6” is in two sets"),
        ({**WORDS, "b_words": ["W0", "w9"]}, "b_words", "is in two sets"),  # same item as w0
        ({**WORDS, "x_words": [f"w{i}" for i in range(101)]}, "x_words", "at most 100 words"),
        ({**WORDS, "x_words": ["w0", "a\x00b"]}, "x_words", "NUL"),
        ({**WORDS, "x_words": "w0"}, "x_words", "needs at least 2"),
    ],
)
def test_bad_sets_are_refused_naming_the_set(study, words, field, says):
    with pytest.raises(WeatInputError) as caught:
        draft(study, words)
    assert caught.value.field == field
    assert says in caught.value.message


def test_a_name_in_use_in_the_study_is_refused_but_an_edit_keeps_its_own(study, users, sent):
    shared = WeatSuite.objects.create(name="shared")
    shared.studies.add(study)
    WeatTest.objects.create(suite=shared, name="Taken", kind="unfair", **NAMES, **WORDS)
    with pytest.raises(WeatInputError, match="already has a WEAT test named 'Taken'"):
        draft(study, name="Taken")
    mine = weat_tests.weat_test_save(user=users["admin"], study=study, draft=draft(study))
    assert draft(study, name=mine.name, test=mine).name == mine.name  # its own name is fine
    with pytest.raises(WeatInputError, match="give a name"):
        draft(study, name="  ")


def test_record_and_text_studies_have_no_weat(study):
    EmbeddingSpace.objects.filter(pk=study.space_id).update(kind="records")
    study.space.refresh_from_db()
    with pytest.raises(NotFound, match="WEAT compares sets of words"):
        draft(study)


# --- preview, save, results ------------------------------------------------------------------


def test_the_preview_shows_euclidean_and_the_current_metric_storing_nothing(study, space, versions):
    d = draft(study)
    rows = weat_tests.weat_preview(study=study, draft=d)
    assert [r.version for r in rows] == [None, versions[0]]  # the published version
    for row in rows:
        sigma = None if row.version is None else sigma_of(row.version)
        assert row.outcome.effect_size == pytest.approx(hand_effect_size(space, d.words, sigma))
        assert row.outcome.exact
        assert row.outcome.n_partitions == 20
    assert not WeatTest.objects.exists()
    assert not WeatResult.objects.exists()


def test_the_preview_of_a_study_without_versions_is_euclidean_only(study):
    rows = weat_tests.weat_preview(study=study, draft=draft(study))
    assert [r.metric for r in rows] == ["Euclidean"]


def test_saving_attaches_the_test_and_queues_its_results_after_the_commit(
    study, space, versions, users, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        test = weat_tests.weat_test_save(user=users["admin"], study=study, draft=draft(study))
        assert sent == []  # not before the commit
    assert len(callbacks) == 1
    assert sent == [("learning.weat_test", [test.pk])]
    suite = test.suite
    assert suite.owner_study == study
    assert list(suite.studies.all()) == [study]
    assert (test.name, test.kind, test.x_name, test.x_words) == (
        "Flowers / Pleasant",
        "meaningful",
        "Flowers",
        ["w0", "w1", "w2"],
    )
    # The worker: the Euclidean baseline and one result per ready version.
    assert weat_tests.weat_test_evaluate(test.pk) == 1 + len(versions)
    results = {r.metric_version_id: r for r in WeatResult.objects.filter(test=test)}
    assert set(results) == {None, *(v.pk for v in versions)}
    for version in [None, *versions]:
        sigma = None if version is None else sigma_of(version)
        got = results[None if version is None else version.pk]
        assert got.effect_size == pytest.approx(hand_effect_size(space, WORDS, sigma))
        assert got.ci_low is not None
        assert got.exact
    # Again: the results are replaced, not doubled.
    weat_tests.weat_test_evaluate(test.pk)
    assert WeatResult.objects.filter(test=test).count() == 1 + len(versions)
    # A second test goes into the same suite, after the first.
    other = weat_tests.weat_test_save(
        user=users["admin"], study=study, draft=draft(study, name="Second")
    )
    assert (other.suite_id, other.position) == (suite.pk, test.position + 1)


def test_editing_drops_the_old_results_and_queues_new_ones(
    study, versions, users, sent, django_capture_on_commit_callbacks
):
    test = weat_tests.weat_test_save(user=users["admin"], study=study, draft=draft(study))
    weat_tests.weat_test_evaluate(test.pk)
    changed = draft(study, {**WORDS, "x_words": ["w0", "w1", "w10"]}, test=test, kind="unfair")
    with django_capture_on_commit_callbacks(execute=True):
        weat_tests.weat_test_save(user=users["admin"], study=study, draft=changed, test=test)
    test.refresh_from_db()
    assert test.x_words == ["w0", "w1", "w10"]
    assert test.kind == "unfair"
    assert not WeatResult.objects.filter(test=test).exists()
    assert sent[-1] == ("learning.weat_test", [test.pk])


def test_only_admins_save_and_only_the_studys_own_tests_are_deleted(study, users, sent):
    with pytest.raises(NotAllowed):
        weat_tests.weat_test_save(user=users["reviewer"], study=study, draft=draft(study))
    shared = WeatSuite.objects.create(name="shared")
    shared.studies.add(study)
    theirs = WeatTest.objects.create(suite=shared, name="Theirs", kind="unfair", **NAMES, **WORDS)
    with pytest.raises(NotFound):
        weat_tests.weat_test_delete(user=users["admin"], study=study, test_id=theirs.pk)
    mine = weat_tests.weat_test_save(user=users["admin"], study=study, draft=draft(study))
    with pytest.raises(NotAllowed):
        weat_tests.weat_test_delete(user=users["reviewer"], study=study, test_id=mine.pk)
    assert weat_tests.weat_test_delete(user=users["admin"], study=study, test_id=mine.pk) == (
        "Flowers / Pleasant"
    )
    assert list(WeatTest.objects.values_list("name", flat=True)) == ["Theirs"]


def test_a_down_broker_is_logged_not_raised(monkeypatch):
    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(current_app, "send_task", refuse)
    assert weat_tests.weat_test_enqueue(1) is False
