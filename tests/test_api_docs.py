"""The OpenAPI schema and its docs page are served by the app itself (no CDN)."""

import re

import pytest
from django.contrib.staticfiles import finders


@pytest.mark.django_db
def test_schema_is_served(admin_client):
    response = admin_client.get("/api/schema/")
    assert response.status_code == 200
    assert b"openapi:" in response.content
    assert b"/api/studies/{study_id}/judgments/" in response.content


@pytest.mark.django_db
def test_docs_page_loads_swagger_ui_from_the_app_only(admin_client):
    page = admin_client.get("/api/docs/").content.decode()
    external = re.findall(r"""(?:src|href)=["'](https?://[^"']+)""", page)
    assert external == []
    assets = re.findall(r"""["'](/static/[^"']+\.(?:js|css))["']""", page)
    assert any("swagger-ui" in a for a in assets), page[:500]
    for asset in assets:
        assert finders.find(asset.removeprefix("/static/")), asset
