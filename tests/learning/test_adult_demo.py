"""load_adult_demo: the Adult study built through the app, the projected metric published."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Membership, PairJudgment, Source
from experiments.adult.data import CLEAN_ROWS, gender_directions
from experiments.adult.demo import (
    PAIRS_PROVENANCE,
    PROJECTED_LABEL,
    SEED,
    SPACE_NAME,
    STUDY_NAME,
)
from experiments.adult.directions import STEPS, directions_of, sensitive_directions
from experiments.adult.measures import sensitive_projector
from experiments.adult.studies import space_vectors
from learning.models import MetricVersion
from learning.versions.sigmas import sigma_of
from learning.versions.storage import version_fingerprint
from learning.versions.validity import validity_of
from spaces.models import EmbeddingSpace

pytestmark = pytest.mark.django_db


def test_the_demo_is_built_once_and_publishes_the_projected_explore_metric(capsys):
    call_command("load_adult_demo")
    first = capsys.readouterr().out
    assert "created record space" in first
    assert "25,000 imported pair judgments" in first

    space = EmbeddingSpace.objects.get(name=SPACE_NAME)
    assert space.kind == EmbeddingSpace.Kind.RECORDS
    assert space.item_count == CLEAN_ROWS["train"]
    assert space.label_column == "income"
    # Annotators never see the outcome (the default: the label column hidden).
    assert space.hidden_columns == ["income"]
    record = space.items.first()
    assert "income" in record.payload
    assert "income" not in record.shown_payload
    assert set(record.shown_payload) == set(record.payload) - {"income"}
    names = space.feature_map["feature_names"]
    assert "income" not in " ".join(names)
    assert len(names) == space.dimension == 43

    judgments = PairJudgment.objects.filter(study__name=STUDY_NAME)
    assert judgments.count() == 25_000
    assert set(judgments.values_list("source", "provenance")) == {
        (Source.IMPORTED, PAIRS_PROVENANCE)
    }
    assert judgments.filter(label="comparable").count() == 20_000

    published = MetricVersion.objects.get(study__name=STUDY_NAME, is_published=True)
    fitted = published.parent
    assert published.method == fitted.method == MetricVersion.Method.EXPLORE
    assert published.label == PROJECTED_LABEL
    assert fitted.label == "explore"
    assert published.parameters["source_version"] == fitted.pk
    assert published.judgment_watermark == fitted.judgment_watermark == judgments.latest("id").pk
    # Published only with an informative verdict or a recorded reason; the API returns it.
    validity = _api_validity(published)
    print("demo validity:", published.pk, validity, "fitted:", validity_of(fitted))
    if validity["verdict"] != "informative":
        override = validity["override"]
        assert override["by"] == "load_adult_demo"
        assert f"#{fitted.pk}): {validity_of(fitted)['verdict']}" in override["reason"]
        assert "docs/adult.md" in override["reason"]
    for version in MetricVersion.objects.filter(study__name=STUDY_NAME, is_published=True):
        assert validity_of(version)["verdict"] == "informative" or version.publish_override
    # The recorded directions are the authors' recipe: computed again here from the space's
    # vectors and the records' own gender (not the sex=Female column the demo reads), they agree.
    recorded = published.parameters["sensitive_directions"]
    assert (recorded["recipe"], recorded["seed"], recorded["steps"]) == ("authors", SEED, STEPS)
    assert recorded["axes"] == [["sex=Male", "sex=Female"], ["race=White", "race=Non-white"]]
    assert set(recorded["weights"]) == set(names) - {"sex=Female", "sex=Male"}
    directions = directions_of(recorded, names)
    female = np.array([item.payload["sex"] == "Female" for item in space.items.order_by("row")])
    again = sensitive_directions("authors", space_vectors(space), names, female, seed=SEED)
    assert directions.shape == again.shape == (4, 43)
    np.testing.assert_allclose(directions, again, atol=1e-9)
    np.testing.assert_allclose(directions @ directions.T, np.eye(4), atol=1e-10)
    # The stored Sigma is the fitted one with the recorded directions projected out.
    sigma, raw = sigma_of(published), sigma_of(fitted)
    np.testing.assert_allclose(sigma @ directions.T, 0, atol=1e-6)
    keep = np.eye(len(names)) - sensitive_projector(directions)
    np.testing.assert_allclose(sigma, keep @ raw @ keep, atol=1e-6)
    assert np.abs(raw @ directions.T).max() > 1e-3  # there was something to remove

    versions_before = MetricVersion.objects.count()
    call_command("load_adult_demo")
    second = capsys.readouterr().out
    assert "nothing changed" in second
    assert MetricVersion.objects.count() == versions_before
    assert judgments.count() == 25_000
    assert EmbeddingSpace.objects.filter(name=SPACE_NAME).count() == 1

    # A database from before 2026-11-26 published the app's recipe under the same label: the
    # next load adds the authors' version beside it and publishes that; the old stays readable.
    _, old = gender_directions(space_vectors(space), names)
    before = {**published.parameters, **old}
    fingerprint = version_fingerprint(
        method=published.method,
        label=published.label,
        parameters=before,
        judgment_count=published.judgment_watermark,
    )
    MetricVersion.objects.filter(pk=published.pk).update(parameters=before, fingerprint=fingerprint)
    call_command("load_adult_demo")
    upgraded = MetricVersion.objects.get(study__name=STUDY_NAME, is_published=True)
    assert upgraded.pk != published.pk
    assert upgraded.parent_id == fitted.pk
    assert upgraded.parameters["sensitive_directions"]["recipe"] == "authors"
    old_version = MetricVersion.objects.get(pk=published.pk)
    assert directions_of(old_version.parameters["sensitive_directions"], names).shape == (5, 43)
    assert validity_of(upgraded)["verdict"] == "informative" or upgraded.publish_override
    versions_before = MetricVersion.objects.count()
    call_command("load_adult_demo")
    assert "nothing changed" in capsys.readouterr().out
    assert MetricVersion.objects.count() == versions_before


def _api_validity(version: MetricVersion) -> dict:
    reviewer = get_user_model().objects.create_user("demo-reader")
    Membership.objects.create(user=reviewer, study=version.study, role=Membership.Role.REVIEWER)
    client = APIClient()
    client.force_authenticate(reviewer)
    url = reverse("api-published", args=[version.study_id, "explore"])
    response = client.get(url)
    assert response.status_code == 200
    assert response.json()["id"] == version.pk
    return response.json()["validity"]
