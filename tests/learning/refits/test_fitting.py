"""learning.refits.service.refit_study: what a refit fits, on a small synthetic space with a known
Sigma0 — EXPLORE recovers it, FACE finds the sensitive subspace (from pairs or curated groups);
repeat policies, the validation split, exclusions; fits that cannot be made fail readably."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from annotation.models import PairJudgment
from learning.models import MetricVersion, StudyLearningSettings
from learning.refits import service, snapshots
from learning.refits.pairs import pair_data
from learning.versions import selectors, storage
from learning.versions.sigmas import sigma_of

from ..synthetic import SIGMA0, judgments_create, simulate, space_create, study_create
from .helpers import add_simulated, admin_of, versions


def test_refit_stores_ready_face_and_explore_versions_covering_every_judgment(world):
    _, _, study, _ = world
    add_simulated(world, 600)
    report = service.refit_study(study_id=study.pk)
    assert report.outcome == "fitted"
    ready = versions(study, status="ready")
    assert sorted(v.method for v in ready) == ["explore", "face"]
    top = PairJudgment.objects.filter(study=study).order_by("-id").first().pk
    for version in ready:
        assert version.judgment_watermark == top
        assert version.counts["judgments"] == 600
        sigma = sigma_of(version)
        assert sigma.shape == (6, 6)
        assert version.dimension == 6
        with open(version.sigma.path, "rb") as handle:
            assert hashlib.sha256(handle.read()).hexdigest() == version.sigma_sha256
        assert np.all(np.linalg.eigvalsh(sigma) > -1e-8)  # PSD
        assert version.fit_seconds > 0


def test_explore_diagnostics_are_sane_and_recover_the_relevant_directions(world):
    _, _, study, _ = world
    add_simulated(world, 2500)
    service.refit_study(study_id=study.pk)
    explore = MetricVersion.objects.get(study=study, method="explore")
    diag = explore.diagnostics
    assert diag["converged"] is True
    assert diag["iterations"] >= 1
    assert diag["heldout_folds"] == "pair hash"
    assert diag["heldout_loglik"] <= 0
    assert diag["heldout_auc"] > 0.7  # labels depend strongly on the metric
    assert len(diag["spectrum"]) == 6
    assert explore.counts["held_out"] == pytest.approx(
        0.2 * explore.counts["observations"], rel=0.25
    )
    sigma = sigma_of(explore)
    relevant, sensitive = sigma[:2, :2], sigma[2:, 2:]
    assert np.linalg.norm(sensitive) < 0.25 * np.linalg.norm(relevant)
    assert np.linalg.norm(sigma - SIGMA0) < 0.5 * np.linalg.norm(SIGMA0)


def test_face_from_comparable_pairs_finds_the_sensitive_subspace(world):
    _, _, study, _ = world
    add_simulated(world, 2500)
    service.refit_study(study_id=study.pk)
    face = MetricVersion.objects.get(study=study, method="face")
    sigma = sigma_of(face)
    # Comparable pairs differ mostly along the four weightless directions, so FACE-4's
    # Sigma = I - QQ' keeps (close to) the two relevant ones only.
    truth = np.diag([1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert np.linalg.norm(sigma - truth, 2) < 0.35
    assert face.diagnostics["n_components"] == 4
    assert face.diagnostics["heldout_auc"] > 0.6


def repeated_answers(world):
    """Pair 0-1 answered 2x comparable + 1x incomparable, pair 2-3 tied, pair 4-5 unsure."""
    _, items, study, users = world
    plan = [
        ((0, 1), ["comparable", "comparable", "incomparable"]),
        ((2, 3), ["comparable", "incomparable", "unsure"]),
        ((4, 5), ["unsure", "unsure", "unsure"]),
        ((6, 7), ["incomparable", "incomparable", "incomparable"]),
    ]
    for (a, b), labels in plan:
        for user, label in zip(users, labels, strict=True):
            PairJudgment.objects.create(
                study=study, item_a=items[a], item_b=items[b], label=label, annotator=user
            )
    top = PairJudgment.objects.filter(study=study).order_by("-id").first().pk
    return snapshots.judgment_snapshot(study_id=study.pk, watermark=top, excluded_annotators=[])


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("majority", [0.0, 1.0]),  # 0-1 by majority, 6-7; the tie and the unsure pair dropped
        ("drop_unsure", [0.0] * 5 + [1.0] * 3),
        ("all", [0.0] * 5 + [0.5] * 4 + [1.0] * 3),
    ],
)
def test_repeat_policies_turn_answers_into_observations(world, policy, expected):
    snapshot = repeated_answers(world)
    pairs = pair_data(snapshot, policy=policy, validation_share=0.2)
    assert sorted(pairs.y.tolist()) == expected


def test_every_answer_to_a_pair_falls_on_the_same_side_of_the_validation_split(world):
    snapshot = repeated_answers(world)
    pairs = pair_data(snapshot, policy="all", validation_share=0.5)
    for a, b in {(int(x), int(y)) for x, y in zip(pairs.row_a, pairs.row_b, strict=True)}:
        sides = pairs.held_out[(pairs.row_a == a) & (pairs.row_b == b)]
        assert sides.all() or not sides.any()


def test_excluded_annotators_are_left_out(world):
    _, _, study, users = world
    add_simulated(world, 200, annotator=users[0])
    add_simulated(world, 100, seed=5, annotator=users[1])
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.excluded_annotators.add(users[1])
    service.refit_study(study_id=study.pk)
    explore = MetricVersion.objects.get(study=study, method="explore", status="ready")
    assert explore.counts["judgments"] == 200
    assert explore.counts["judgments_total"] == 300
    assert explore.parameters["excluded_annotators"] == [users[1].pk]


def test_face_learns_from_curated_groups_and_a_group_edit_is_new_data(db, media_root):
    from annotation.groups.services import group_create

    rng = np.random.default_rng(3)
    centres = np.zeros((12, 6))
    centres[:, :2] = rng.normal(size=(12, 2))
    members = np.repeat(centres, 5, axis=0)
    members[:, 2:] += rng.normal(size=(60, 4))  # within a group, only the sensitive dims vary
    space, items = space_create(media_root, matrix=members, name="grouped")
    study, users = study_create(space, name="groups study")
    StudyLearningSettings.objects.create(study=study, face_components=4, fit_explore=False)
    for g in range(11):
        group_create(
            study=study,
            user=users[0],
            name=f"group {g}",
            member_ids=[items[r].pk for r in range(5 * g, 5 * g + 5)],
        )
    service.refit_study(study_id=study.pk)
    face = MetricVersion.objects.get(study=study, method="face")
    assert face.status == "ready"
    assert face.counts["groups"] == 11
    assert face.group_watermark == snapshots.study_data_marks(study_id=study.pk).group_watermark
    truth = np.diag([1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert np.linalg.norm(sigma_of(face) - truth, 2) < 1e-6
    assert service.refit_study(study_id=study.pk).outcome == "nothing new"

    group_create(
        study=study, user=users[0], name="group 11", member_ids=[items[r].pk for r in range(55, 60)]
    )
    assert study.pk in snapshots.study_ids_with_newer_data()
    service.refit_study(study_id=study.pk)
    latest = versions(study, method="face")[-1]
    assert latest.counts["groups"] == 12
    assert latest.group_watermark > face.group_watermark
    assert latest.parent_id == face.pk


def test_one_class_only_fails_readably_and_the_published_version_stays(world):
    _, _, study, users = world
    a, b, y = simulate(world[0].load_matrix(), 300)
    judgments_create(study, world[1], a[y == 1], b[y == 1], y[y == 1], annotator=users[0])
    judgments_create(study, world[1], a[y == 0], b[y == 0], y[y == 0], annotator=users[1])
    service.refit_study(study_id=study.pk)
    published = MetricVersion.objects.get(study=study, method="explore", status="ready")
    storage.metric_version_publish(
        version=published, user=admin_of(study), reason="a test: published whatever its verdict"
    )

    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.excluded_annotators.add(users[1])  # only comparable answers remain
    service.refit_study(study_id=study.pk)

    failed = MetricVersion.objects.get(study=study, method="explore", status="failed")
    assert "still missing: 1 incomparable" in failed.error
    assert failed.transient is False
    assert not failed.sigma
    published.refresh_from_db()
    assert published.is_published
    assert MetricVersion.objects.filter(study=study, is_published=True).count() == 1
    # The same input is not retried, so a sweep does not loop on a failure.
    assert service.refit_study(study_id=study.pk).outcome == "nothing new"


def test_face_k_not_below_the_dimension_fails_readably_instead_of_rounding_noise(world):
    _, _, study, _ = world
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.face_components = 6  # = d
    learning.save()
    add_simulated(world, 300)
    service.refit_study(study_id=study.pk)
    (face,) = versions(study, method="face")
    assert face.status == "failed"
    assert "must be smaller than the space's dimension 6" in face.error
    assert versions(study, method="explore")[0].status == "ready"
