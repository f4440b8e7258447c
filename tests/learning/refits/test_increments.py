"""A refit's inputs kept in the worker's memory and extended by the new answers
(``learning/refits/increments.py``), and FACE from pair sums (``learning/refits/face_fits.py``).

* Through a sequence of answer batches (new pairs, repeated pairs, unsure answers, imported
  ones) the extended snapshot, observations (every array, the pair ranks included) and counts
  equal a full build from the SQL snapshot; a deleted, changed or late answer, changed
  exclusions, gold pairs, an adjudication or another policy build everything again, still equal.
* FACE from the kept pair sums equals FACE on the pairs themselves (the version, its held-out
  check and EXPLORE's fold priors); a selection that is not a union of classes takes the direct
  path.
* The drift check's promise reads a version's label counts as its query of the answers would.
"""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from annotation.models import GoldPair, Membership, PairJudgment
from annotation.review import services as review
from learning.models import MetricVersion
from learning.refits import face_fits, increments, service, snapshots
from learning.refits.fitting import explore_folds
from learning.refits.pairs import data_counts, pair_data
from learning.versions import drift, selectors

from .helpers import add_simulated, admin_of

SNAPSHOT = ("ids", "item_a", "item_b", "row_a", "row_b", "label", "annotator", "gold")
PAIRS = ("row_a", "row_b", "y", "held_out", "hash", "annotator", "pair", "gold")


@pytest.fixture(autouse=True)
def _nothing_kept():
    increments.forget_all()
    yield
    increments.forget_all()


def _check(study, *, excluded=(), policy="all", share=0.2) -> increments.FitInputs:
    """The inputs as a refit gets them, against a full build from the SQL snapshot."""
    marks = snapshots.study_data_marks(study_id=study.pk)
    got = increments.fit_inputs(
        study=study,
        marks=marks,
        excluded_annotators=list(excluded),
        policy=policy,
        validation_share=share,
    )
    full = snapshots.judgment_snapshot(
        study_id=study.pk, watermark=marks.judgment_watermark, excluded_annotators=list(excluded)
    )
    pairs = pair_data(full, policy=policy, validation_share=share)
    for name in SNAPSHOT:
        want = getattr(full, name).astype(np.int64)
        np.testing.assert_array_equal(getattr(got.snapshot, name).astype(np.int64), want, name)
    for name in PAIRS:
        want, have = getattr(pairs, name), getattr(got.pairs, name)
        if want is None:
            assert have is None, name
        else:
            np.testing.assert_array_equal(have, want, name)
    assert got.counts == data_counts(full, pairs)
    return got


def _newcomer(study, name):
    user = get_user_model().objects.create_user(name)
    Membership.objects.create(user=user, study=study)
    return user


def test_the_extended_inputs_equal_a_full_build_through_a_sequence_of_batches(world):
    space, items, study, users = world
    add_simulated(world, 150, seed=1, annotator=users[0])
    assert not _check(study).extended  # nothing kept yet
    add_simulated(world, 150, seed=1, annotator=users[1])  # the same pairs again
    got = _check(study)
    assert got.extended
    assert got.read == "cached + 150 new"
    add_simulated(world, 40, seed=2, annotator=users[2])  # new pairs between the known ones
    assert _check(study).extended
    a, b = items[3], items[4]
    a, b = (a, b) if a.pk < b.pk else (b, a)
    PairJudgment.objects.create(study=study, annotator=users[0], item_a=a, item_b=b, label="unsure")
    PairJudgment.objects.create(  # imported: no annotator
        study=study, item_a=a, item_b=b, label="comparable", source="imported"
    )
    got = _check(study)
    assert got.extended
    assert got.counts["imported"] == 1
    assert got.counts["unsure"] >= 1
    assert _check(study).read == "cached + 0 new"

    # what shapes the arrays changed: built again
    assert not _check(study, excluded=[users[1].pk]).extended
    add_simulated(world, 10, seed=3, annotator=_newcomer(study, "later-1"))
    assert _check(study, excluded=[users[1].pk]).extended
    assert not _check(study, share=0.3).extended
    assert not _check(study, policy="drop_unsure").extended
    assert not _check(study, policy="majority").extended
    assert not _check(study).extended
    GoldPair.objects.create(study=study, item_a=a, item_b=b, label="comparable")
    assert not _check(study).extended

    # a deleted, a changed and a late answer: read and built again
    old = PairJudgment.objects.filter(study=study).order_by("id")[5]
    deleted_id = old.pk
    old.delete()
    got = _check(study)
    assert not got.extended
    assert got.read == "full (the cached answers changed)"
    changed = PairJudgment.objects.filter(study=study).order_by("id")[7]
    changed.label = "incomparable" if changed.label == "comparable" else "comparable"
    changed.save(update_fields=["label"])
    assert not _check(study).extended
    PairJudgment.objects.create(
        pk=deleted_id,  # below the kept watermark
        study=study,
        annotator=old.annotator,
        item_a=old.item_a,
        item_b=old.item_b,
        label=old.label,
    )
    assert not _check(study).extended
    add_simulated(world, 20, seed=4, annotator=_newcomer(study, "later-2"))
    assert _check(study).extended
    PairJudgment.objects.create(  # an answer to the gold pair: its gold label in the new rows
        study=study, annotator=users[1], item_a=a, item_b=b, label="incomparable", is_gold=True
    )
    got = _check(study)
    assert got.extended
    assert got.snapshot.gold[-1] == 1  # the gold pair's label, comparable

    # an adjudication: never extended while there is one
    first = PairJudgment.objects.filter(study=study).order_by("id").first()
    review.adjudicate(
        study=study,
        user=admin_of(study),
        item_a_id=first.item_a_id,
        item_b_id=first.item_b_id,
        label="incomparable",
    )
    assert not _check(study).extended
    add_simulated(world, 5, seed=5, annotator=_newcomer(study, "later-3"))
    assert not _check(study).extended


def _direct_and_summed(got, groups, read, k):
    direct = face_fits.fit_face(got.pairs, groups, read, k=k, use_pairs=True)
    summed = face_fits.fit_face(got.pairs, groups, read, k=k, use_pairs=True, scatter=got.scatter)
    np.testing.assert_allclose(summed.sigma, direct.sigma, atol=1e-9)
    for key in ("n_components", "groups_used"):
        assert summed.diagnostics[key] == direct.diagnostics[key]
    np.testing.assert_allclose(summed.diagnostics["spectrum"], direct.diagnostics["spectrum"])
    assert summed.diagnostics["heldout_auc"] == pytest.approx(direct.diagnostics["heldout_auc"])


def test_face_from_the_kept_pair_sums_equals_face_on_the_pairs(world):
    space, items, study, users = world
    read = study.space.vectors
    add_simulated(world, 300, seed=1, annotator=users[0])
    got = _check(study)
    none = snapshots.GroupSnapshot(rows=[], creators=0)
    _direct_and_summed(got, none, read, 4)
    assert got.scatter.rows == len(got.pairs)
    add_simulated(world, 60, seed=2, annotator=users[1])
    earlier, got = got, _check(study)
    assert got.extended
    assert got.scatter is earlier.scatter
    assert got.scatter.rows < len(got.pairs)  # extended when asked
    rows = [np.array([0, 5, 9]), np.array([2, 7])]  # curated groups beside the pairs
    _direct_and_summed(got, snapshots.GroupSnapshot(rows=rows, creators=1), read, None)
    assert got.scatter.rows == len(got.pairs)

    # EXPLORE's fold priors: each fold's training part is a union of classes
    folds = explore_folds(got.pairs, space.dimension)
    masks = [np.ones(len(got.pairs), dtype=bool), ~got.pairs.held_out]
    masks += [folds != f for f in np.unique(folds[folds >= 0])]
    for keep in masks:
        assert got.scatter.of(got.pairs, keep) is not None
        kwargs = {"k": 4, "keep": keep}
        summed = face_fits.face_prior(got.pairs, none, read, scatter=got.scatter, **kwargs)
        np.testing.assert_allclose(summed, face_fits.face_prior(got.pairs, none, read, **kwargs))
    # sums ahead of the observations (a later refit's): the direct path
    keep = np.ones(len(earlier.pairs), dtype=bool)
    np.testing.assert_array_equal(
        face_fits.face_prior(earlier.pairs, none, read, k=4, keep=keep, scatter=got.scatter),
        face_fits.face_prior(earlier.pairs, none, read, k=4, keep=keep),
    )
    odd = np.arange(len(got.pairs)) % 2 == 0  # not a union of classes: the direct path
    assert got.scatter.of(got.pairs, odd) is None
    direct = face_fits.face_prior(got.pairs, none, read, k=4, keep=odd)
    summed = face_fits.face_prior(got.pairs, none, read, k=4, keep=odd, scatter=got.scatter)
    np.testing.assert_array_equal(summed, direct)


def test_the_drift_promise_stores_the_comparable_rate_of_the_answers_it_read(world):
    _, _, study, users = world
    add_simulated(world, 300, seed=1, annotator=users[0])
    add_simulated(world, 80, seed=2, annotator=users[1])
    first = PairJudgment.objects.filter(study=study).order_by("id").first()
    PairJudgment.objects.create(
        study=study, annotator=users[2], item_a=first.item_a, item_b=first.item_b, label="unsure"
    )
    selectors.learning_settings_get(study_id=study.pk).excluded_annotators.add(users[1])
    assert service.refit_study(study_id=study.pk).outcome == "fitted"
    version = MetricVersion.objects.get(study=study, method="explore", status="ready")
    labels = PairJudgment.objects.filter(study=study).exclude(annotator=users[1])
    y = [drift.LABEL_Y[label] for label in labels.values_list("label", flat=True)]
    promise = version.diagnostics["drift_promise"]
    assert promise["rate"] == pytest.approx(np.mean(y), rel=1e-12)
    assert promise["all"]["answers"] <= len(y)
