"""An admin uploads an embedding file in Chromium; a real worker imports it; the page follows."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.contrib.auth import get_user_model

from spaces.models import EmbeddingImport, EmbeddingSpace
from tests.annotation.factories import PASSWORD
from tests.celery_support import app_pointed_at, worker_database_url

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow]


@pytest.fixture
def admin(transactional_db):
    return get_user_model().objects.create_user("boss", password=PASSWORD, is_staff=True)


@pytest.fixture
def media(media_root):
    return media_root


def glove_file(path, n=5000, d=8):
    rng = np.random.default_rng(0)
    with open(path, "w") as f:
        for i in range(n):
            f.write(f"w{i} " + " ".join(f"{v:.4f}" for v in rng.normal(size=d)) + "\n")
    return path


def test_upload_page_shows_the_import_progress_until_done(
    admin, media, tmp_path, private_redis, start_worker, logged_in_page, live_server, screenshot
):
    start_worker(
        queue="celery",
        DATABASE_URL=worker_database_url(),
        MEDIA_ROOT=str(media),
        REDIS_URL=private_redis.url,
        CELERY_BROKER_URL=None,
        CELERY_RESULT_BACKEND=None,
    )
    page = logged_in_page(admin)
    page.click("text=Spaces")
    page.click("text=Upload an embedding file")
    page.set_input_files("input[name=file]", str(glove_file(tmp_path / "vectors.txt")))
    page.fill("input[name=name]", "browser upload")
    page.fill("input[name=tags]", "uploaded")
    with app_pointed_at(private_redis.url):
        page.click("#upload-form button[type=submit]")
        page.wait_for_url(re.compile(r"/spaces/imports/\d+/$"))
    page.wait_for_function(
        "document.getElementById('import-status').dataset.status === 'done'", timeout=60_000
    )
    assert "done" in page.inner_text("#import-state")
    assert "browser upload (5,000 items × 8)" in page.inner_text("#import-space")
    assert page.is_hidden("#import-error")
    screenshot(page, "space-upload-done")
    assert EmbeddingSpace.objects.get(name="browser upload").item_count == 5000
    assert EmbeddingImport.objects.get().status == "done"
    assert page.console_errors == []


def test_a_bad_file_comes_back_as_a_form_error(admin, media, tmp_path, logged_in_page, live_server):
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 2\nb 1 2\na 3 4\n")
    page = logged_in_page(admin)
    page.goto(f"{live_server.url}/spaces/upload/")
    page.set_input_files("input[name=file]", str(bad))
    page.fill("input[name=name]", "bad upload")
    page.click("#upload-form button[type=submit]")
    error = page.inner_text("[data-error-for=file]")
    assert "line 3: duplicate key 'a', first seen at line 1" in error
    assert not EmbeddingImport.objects.exists()
    # The form page itself comes back with status 400, which Chromium logs; nothing else.
    assert [e for e in page.console_errors if "status of 400" not in e] == []
