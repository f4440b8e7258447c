"""The Content-Security-Policy in a real Chromium: the API docs (Swagger UI, drf-spectacular's
split view) render with scripts from 'self' only and no violation. The labelling, groups and
dashboard pages are opened under the same policy by the other browser tests, which fail on any
console error (a CSP violation is one)."""

from __future__ import annotations

import pytest

from .conftest import collect_errors

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_render_under_the_policy(browser, live_server):
    context = browser.new_context()
    page = context.new_page()
    errors = collect_errors(page)
    violations = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    response = page.goto(f"{live_server.url}/api/docs/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".swagger-ui .info", timeout=15_000)
    assert page.locator(".opblock").count() > 5
    context.close()
    assert violations == []
    assert errors == []
