"""Every answer carries Content-Security-Policy and Permissions-Policy, and no page needs
inline script (the CSP allows scripts from 'self' only). Pages are generated from the
authorization matrix (every URL pattern), fetched as the superuser."""

from __future__ import annotations

import re

import pytest
from django.conf import settings as django_settings

from .conftest import World
from .matrix import MATRIX

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
HANDLER_ATTRIBUTE = re.compile(r"<[a-z][^>]*\son[a-z]+\s*=", re.I)
JS_URL = re.compile(r"""(?:href|src|action)\s*=\s*["']\s*javascript:""", re.I)


def _pages():
    return [name for name, row in MATRIX.items() if row.methods.get("get", {}).get("su") == 200]


def test_the_policy_allows_no_inline_script():
    policy = dict(
        part.strip().split(" ", 1) for part in django_settings.CONTENT_SECURITY_POLICY.split(";")
    )
    assert policy["script-src"] == "'self'"
    assert policy["object-src"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"
    assert "unsafe-inline" not in policy["script-src"] + policy["default-src"]


@pytest.mark.parametrize("name", _pages())
def test_every_page_has_the_headers_and_no_inline_script(world: World, name):
    response = world.client("su").get(MATRIX[name].url(world))
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == django_settings.CONTENT_SECURITY_POLICY
    assert response["Permissions-Policy"] == django_settings.PERMISSIONS_POLICY
    if "html" in response.get("Content-Type", "") and not response.streaming:
        html = response.content.decode()
        assert not INLINE_SCRIPT.findall(html), INLINE_SCRIPT.findall(html)
        assert not HANDLER_ATTRIBUTE.findall(html), HANDLER_ATTRIBUTE.findall(html)
        assert not JS_URL.findall(html)


def test_error_pages_and_the_api_carry_the_headers_too(world: World):
    client = world.client("ann_b")
    for url in ["/no-such-page/", f"/api/studies/{world.study_a.pk}/"]:
        response = client.get(url)
        assert response.status_code == 404
        assert "script-src 'self'" in response["Content-Security-Policy"]
        assert "camera=()" in response["Permissions-Policy"]
