"""The "not yet informative" rule (learning/evaluation/informative.py): on hand-made held-out
figures, and end to end on a study whose answers carry no signal (coin flips): its EXPLORE
version is stored with its figures, is not the study's current metric, is not auto-published,
and the dashboard and the version page say what is missing."""

from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model
from django.urls import reverse

from learning.evaluation.informative import informative_verdict
from learning.models import MetricVersion
from learning.refits import pairs as observations
from learning.refits import service
from learning.versions import selectors
from learning.versions.sigmas import study_metric

from .synthetic import judgments_create, space_create, study_create


def _diagnostics(constant_ci, prior_ci, pairs=100):
    def part(ci):
        return {"loglik": -0.69, "gain": (ci[0] + ci[1]) / 2, "gain_ci": list(ci)}

    return {
        "heldout_loglik": -0.65,
        "heldout_pairs": pairs,
        "heldout_baselines": {"constant": part(constant_ci), "prior": part(prior_ci)},
    }


def test_the_rule_on_held_out_figures():
    beats = informative_verdict("explore", _diagnostics((0.01, 0.05), (-0.01, 0.02)))
    assert beats.informative
    assert not beats.missing
    assert "constant prediction -0.690 (gain +0.030" in beats.summary
    # gain 0.01 ± 0.02 on 100 pairs: the half-width must shrink 2×, 4× the pairs: 300 more
    unsure = informative_verdict("explore", _diagnostics((-0.01, 0.03), (0.0, 0.01)))
    assert not unsure.informative
    assert "about 300 more answers" in unsure.missing
    worse = informative_verdict("explore", _diagnostics((-0.05, -0.01), (0.0, 0.01)))
    assert not worse.informative
    assert "more answers" in worse.missing
    prior_better = informative_verdict("explore", _diagnostics((0.01, 0.05), (-0.04, -0.01)))
    assert not prior_better.informative
    assert "prior predicts" in prior_better.missing
    none = informative_verdict("explore", {"heldout_loglik": -0.6})
    assert not none.informative
    assert "held-out pairs" in none.missing
    assert informative_verdict("face", {}).informative  # no likelihood: the rule does not apply


def test_a_version_from_coin_flips_is_stored_but_never_current(db, media_root, client, monkeypatch):
    space, items = space_create(media_root, n_items=120, d=30, seed=3, name="coins")
    # The folds fixed: they hash the items' database ids, which depend on the tests run before
    # (xdist), and a verdict at 95 % on one draw of coin flips is wrong for ~1 fold draw in 20+
    # (a fresh-clone CI run met one). Pinned to the space's own numbering, the draw is fixed.
    base = min(int(item.pk) for item in items)
    real_hash = observations.pair_hash_unit
    monkeypatch.setattr(observations, "pair_hash_unit", lambda a, b: real_hash(a - base, b - base))
    study, users = study_create(space, annotators=2)
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.fit_face = False
    learning.auto_publish = True
    learning.auto_publish_min_auc = None
    learning.save()
    rng = np.random.default_rng(4)
    a = rng.choice(60, size=60, replace=False)
    b = 60 + rng.choice(60, size=60, replace=False)
    judgments_create(study, items, a, b, rng.integers(0, 2, size=60), annotator=users[0])
    service.refit_study(study_id=study.pk)
    (version,) = MetricVersion.objects.filter(study=study, method="explore")
    assert version.status == "ready", version.error
    assert not version.informative
    stored = version.diagnostics["informative"]
    assert stored["informative"] is False
    assert stored["missing"]
    assert version.diagnostics["heldout_baselines"]["constant"]["gain_ci"][0] <= 0
    assert not version.is_published
    assert any("not yet informative" in f for f in version.diagnostics["auto_publish"]["failed"])
    assert selectors.version_current(study_id=study.pk) is None
    assert study_metric(study_id=study.pk) is None
    assert study_metric(study_id=study.pk, method="explore") is None
    client.force_login(get_user_model().objects.create_user("staff-inf", is_staff=True))
    page = client.get(reverse("learning:study-dashboard", args=[study.pk])).content.decode()
    assert 'data-testid="not-informative"' in page
    assert "Not yet informative" in page
    assert "constant prediction" in page
    page = client.get(reverse("learning:version-detail", args=[version.pk])).content.decode()
    assert "Not yet informative" in page
