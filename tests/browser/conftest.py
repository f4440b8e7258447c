"""Browser-test fixtures (Playwright for Python driving Debian's Chromium), reusable by any app.

* ``browser``: one headless Chromium for the whole run (launched again after a crash);
* ``logged_in_page(user, password=PASSWORD)``: a fresh browser context logged in through the
  real login form of the ``live_server``; the page collects console errors and uncaught page
  errors in ``page.console_errors`` (assert it is empty at the end of a test);
* ``screenshot(page, name)``: saves ``test-artifacts/<name>.png`` (gitignored).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.annotation.factories import PASSWORD
from tests.conftest import require

# Playwright's sync API runs an event loop in this thread; Django's ORM calls from the test
# body are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts"


class _Chromium:
    """One Chromium for the run, launched again if it went away: a browser that crashes in one
    test (CI saw one die while a context closed) fails that test, not every test after it."""

    def __init__(self, playwright):
        self.playwright = playwright
        self.instance = None

    def get(self):
        if self.instance is None or not self.instance.is_connected():
            self.instance = self.playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS
            )
        return self.instance


@pytest.fixture(scope="session")
def _chromium() -> Iterator[_Chromium]:
    require(Path(CHROMIUM).exists(), f"Chromium is not installed at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        holder = _Chromium(playwright)
        yield holder
        if holder.instance is not None and holder.instance.is_connected():
            holder.instance.close()


@pytest.fixture
def browser(_chromium):
    return _chromium.get()


def collect_errors(page) -> list[str]:
    """Attach listeners; the returned list fills with console errors and page errors."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    return errors


@pytest.fixture
def logged_in_page(browser, live_server) -> Iterator[Callable]:
    contexts = []

    def login(user, password: str = PASSWORD):
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.console_errors = collect_errors(page)
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", user.username)
        page.fill("input[name=password]", password)
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        return page

    yield login
    for context in contexts:
        context.close()


@pytest.fixture
def screenshot() -> Callable:
    def save(page, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save


def wait_until(page, expression: str, *, arg=None, timeout: float = 15_000, interval: float = 50):
    """``page.wait_for_function`` that works under the app's Content-Security-Policy: Playwright
    polls a predicate with ``eval`` inside the page, which ``script-src 'self'`` refuses; this
    polls ``page.evaluate`` (run by the browser's debugging protocol, not subject to CSP)."""
    deadline = time.monotonic() + timeout / 1000
    while True:
        value = page.evaluate(expression, arg) if arg is not None else page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout / 1000:.0f} s waiting for {expression}")
        page.wait_for_timeout(interval)
