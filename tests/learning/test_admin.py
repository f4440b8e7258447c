"""Every model of the apps is in the Django admin, and its list (with search) opens."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

pytestmark = pytest.mark.django_db

MODELS = [
    model
    for label in ("spaces", "annotation", "learning")
    for model in apps.get_app_config(label).get_models()
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m._meta.label)
def test_every_model_is_registered_with_a_useful_list(model):
    assert admin.site.is_registered(model), f"{model._meta.label} is not in the admin"
    model_admin = admin.site._registry[model]
    assert model_admin.list_display != ("__str__",), f"{model._meta.label}: no list_display"


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m._meta.label)
def test_admin_changelist_and_search_open(client, versions, weat, model, make_user):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    assert client.get(url).status_code == 200
    if admin.site._registry[model].search_fields:
        assert client.get(url, {"q": "w1"}).status_code == 200
