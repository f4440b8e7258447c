"""The feature map φ next to Sigma: a token downloads both and embeds new records identically."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from numpy.testing import assert_allclose
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from annotation.models import Membership
from spaces.records.create import record_space_create
from spaces.records.featuremap import apply_feature_map
from tests.annotation.factories import make_metric_version, make_space, make_study

pytestmark = pytest.mark.django_db

PEOPLE = pd.DataFrame(
    {
        "age": [25, 38, 52, 61, 33],
        "education": ["HS-grad", "Bachelors", "Masters", "HS-grad", "Bachelors"],
        "sex": ["Female", "Male", "Female", "Male", "Female"],
        "income": ["<=50K", ">50K", ">50K", "<=50K", "<=50K"],
    }
)


@pytest.fixture
def record_study(media_root):
    space = record_space_create(
        name="people",
        frame=PEOPLE,
        numeric=["age"],
        categorical=["education", "sex"],
        label_column="income",
        owner=None,
    )
    study = make_study(space=space, name="People")
    version = make_metric_version(
        study=study, method="explore", sigma=np.eye(space.dimension), is_published=True
    )
    reviewer = get_user_model().objects.create_user("rev")
    Membership.objects.create(study=study, user=reviewer, role="reviewer")
    _, key = api_token_create(user=reviewer, name="training job")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return study, version, client


def test_a_token_downloads_the_feature_map_and_embeds_new_records_like_the_space(record_study):
    study, version, client = record_study
    meta = client.get(reverse("api-published", args=[study.pk, "explore"])).json()
    assert meta["embedding_space"]["kind"] == "records"
    response = client.get(meta["links"]["feature_map"])
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    spec = json.loads(response.content)
    assert spec == study.space.feature_map
    assert len(spec["feature_names"]) == meta["dimension"]  # Sigma's side = φ's output
    assert response["ETag"] == f'"{hashlib.sha256(response.content).hexdigest()}"'
    # φ applied downstream equals the stored embedding of the same records.
    assert_allclose(apply_feature_map(spec, PEOPLE), study.space.load_matrix(), atol=1e-6)
    # Polling: the same map answers 304.
    again = client.get(meta["links"]["feature_map"], HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    assert again.content == b""


def test_the_version_page_links_the_feature_map(record_study, client):
    study, version, _ = record_study
    staff = get_user_model().objects.create_user("boss", is_staff=True, is_superuser=True)
    client.force_login(staff)
    page = client.get(reverse("learning:version-detail", args=[version.pk])).content.decode()
    assert reverse("api-feature-map", args=[study.pk]) in page


def test_a_vector_space_has_no_feature_map(media_root):
    study = make_study(space=make_space(), name="Words")
    staff = get_user_model().objects.create_user("boss", is_staff=True, is_superuser=True)
    client = APIClient()
    client.force_authenticate(staff)
    response = client.get(reverse("api-feature-map", args=[study.pk]))
    assert response.status_code == 404
    assert "only record spaces have a feature map" in response.json()["detail"]
