"""The admins' upload page: permissions, form errors, the import task and its progress."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from spaces.models import EmbeddingImport, EmbeddingSpace, Item, Tag
from spaces.vectors.uploads import embedding_import_run
from tests.celery_support import app_pointed_at, worker_database_url

URLS = ["spaces:list", "spaces:upload"]


def glove_text(n: int = 6, d: int = 3, duplicate_at: int | None = None) -> bytes:
    rng = np.random.default_rng(0)
    lines = []
    for i in range(n):
        key = "w0" if duplicate_at is not None and i == duplicate_at - 1 else f"w{i}"
        lines.append(f"{key} " + " ".join(f"{v:.4f}" for v in rng.normal(size=d)))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def media(media_root) -> Path:
    return media_root


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("boss", password="pw-123456", is_staff=True)


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


def upload(client, content: bytes, *, filename="vectors.txt", name="uploaded", **fields):
    data = {
        "file": SimpleUploadedFile(filename, content),
        "name": name,
        "format": "auto",
        "tags": "",
        **fields,
    }
    return client.post(reverse("spaces:upload"), data)


def uploads_left(media: Path) -> list[Path]:
    folder = media / "uploads"
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


# --- permissions ------------------------------------------------------------------------------


@pytest.mark.parametrize("url", URLS)
def test_anonymous_users_are_sent_to_login(client, db, url):
    response = client.get(reverse(url))
    assert response.status_code == 302
    assert reverse("accounts:login") in response["Location"]


@pytest.mark.parametrize("url", URLS)
def test_non_staff_users_are_forbidden(client, db, url):
    client.force_login(get_user_model().objects.create_user("ann", password="pw-123456"))
    assert client.get(reverse(url)).status_code == 403


def test_non_staff_cannot_upload_or_see_an_import(client, db, media):
    job = EmbeddingImport.objects.create(name="x", file="uploads/x.txt")
    client.force_login(get_user_model().objects.create_user("ann", password="pw-123456"))
    assert upload(client, glove_text()).status_code == 403
    assert client.get(reverse("spaces:import", args=[job.pk])).status_code == 403
    assert client.get(reverse("spaces:import-status", args=[job.pk])).status_code == 403
    assert EmbeddingImport.objects.count() == 1


def test_staff_see_the_form_and_the_list(staff_client):
    page = staff_client.get(reverse("spaces:upload"))
    assert page.status_code == 200
    assert b'enctype="multipart/form-data"' in page.content
    assert staff_client.get(reverse("spaces:list")).status_code == 200


# --- bad files are form errors ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "filename", "message"),
    [
        (b"", "empty.txt", "The submitted file is empty"),
        (b"\n\n  \n", "blank.txt", "holds no vectors"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff", "image.png", "cannot tell the format"),
        (b"a 1 2\nb 1 2\nc 1 2 3\n", "mixed.txt", "line 3: 3 values, expected 2"),
        (b"a 1 2\nb nan 2\n", "nan.txt", "line 2: a value is not finite"),
        (b"a 1 2\nb 1 2\na 3 4\n", "dup.txt", "line 3: duplicate key &#x27;a&#x27;"),
        (b"a 1 2\nb\xff 1 2\n", "bytes.txt", "line 2: not valid UTF-8"),
    ],
    ids=["empty", "blank", "unknown-format", "mixed-dimensions", "nan", "duplicate", "undecodable"],
)
def test_a_bad_file_is_a_form_error_and_nothing_is_stored(
    staff_client, media, content, filename, message
):
    response = upload(staff_client, content, filename=filename)
    assert response.status_code == 400
    assert message.encode() in response.content
    assert not EmbeddingImport.objects.exists()
    assert not EmbeddingSpace.objects.exists()
    assert uploads_left(media) == []


def test_files_over_the_size_limit_are_refused(staff_client, media, settings):
    settings.MAX_UPLOAD_MB = 1
    response = upload(staff_client, glove_text(n=30_000, d=4))
    assert len(glove_text(n=30_000, d=4)) > 1024 * 1024
    assert response.status_code == 400
    assert b"larger than 1 MB" in response.content
    assert not EmbeddingImport.objects.exists()
    assert uploads_left(media) == []


def test_a_huge_body_is_refused_before_it_is_read(staff_client, media, settings):
    settings.MAX_UPLOAD_MB = 1
    response = upload(staff_client, b"x 1 2\n" * 700_000)  # 4.2 MB > 2 x 1 MB + 1 MB
    assert response.status_code == 413
    assert b"larger than 1 MB per file" in response.content
    assert not EmbeddingImport.objects.exists()
    assert uploads_left(media) == []


def test_the_upload_form_checks_csrf(client, staff, media):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(staff)
    response = upload(strict, glove_text())
    assert response.status_code == 403
    assert not EmbeddingImport.objects.exists()


def test_a_taken_name_is_a_form_error(staff_client, media):
    EmbeddingSpace.objects.create(name="uploaded", dimension=3, matrix="spaces/x.npy", sha256="0")
    response = upload(staff_client, glove_text())
    assert response.status_code == 400
    assert b"exists or is being imported" in response.content


# --- the task (in-process) --------------------------------------------------------------------


def test_upload_queues_the_task_after_commit_and_the_task_imports(
    staff_client, staff, media, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = upload(staff_client, glove_text(), tags="pilot, demo", kind="word")
    job = EmbeddingImport.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("spaces:import", args=[job.pk])
    assert len(callbacks) == 1
    assert (job.status, job.created_by, job.tags) == ("pending", staff, ["pilot", "demo"])

    assert embedding_import_run(import_id=job.pk) == "done"
    job.refresh_from_db()
    assert job.status == "done"
    assert job.space.item_count == 6
    assert job.space.owner == staff  # what staff upload they own (spaces.sharing)
    assert job.progress_rows == job.total_rows == 6
    assert Tag.objects.get(name="pilot").items.count() == 6
    assert uploads_left(media) == []  # the upload is removed once imported
    status = staff_client.get(reverse("spaces:import-status", args=[job.pk])).json()
    assert status["status"] == "done"
    assert status["finished"] is True
    assert status["space"]["items"] == 6
    page = staff_client.get(reverse("spaces:import", args=[job.pk]))
    assert b"js/import.js" in page.content

    assert embedding_import_run(import_id=job.pk) == "not run: done"  # idempotent
    assert EmbeddingSpace.objects.count() == 1


def test_an_error_past_the_first_block_fails_the_import_on_the_page(staff_client, media):
    upload(staff_client, glove_text(n=9000, d=2, duplicate_at=8500))
    job = EmbeddingImport.objects.get()
    assert embedding_import_run(import_id=job.pk) == "failed"
    status = staff_client.get(reverse("spaces:import-status", args=[job.pk])).json()
    assert status["status"] == "failed"
    assert (
        status["error"]
        == "line 8500: duplicate key 'w0', first seen at line 1 (duplicates are rejected)"
    )
    assert not EmbeddingSpace.objects.exists()
    assert not Item.objects.exists()
    assert uploads_left(media) == []
    assert not list((media / "spaces").glob("*")) if (media / "spaces").exists() else True


def test_npy_upload_with_its_vocabulary(staff_client, media, tmp_path):
    np.save(tmp_path / "m.npy", np.eye(3, dtype=np.float32))
    extra = SimpleUploadedFile("m.vocab", b"x\ny\nz\n")
    response = upload(
        staff_client, (tmp_path / "m.npy").read_bytes(), filename="m.npy", extra_file=extra
    )
    assert response.status_code == 302
    job = EmbeddingImport.objects.get()
    assert embedding_import_run(import_id=job.pk) == "done"
    space = EmbeddingSpace.objects.get(name="uploaded")
    assert list(space.items.order_by("row").values_list("key", flat=True)) == ["x", "y", "z"]


# --- a real worker ----------------------------------------------------------------------------


@pytest.mark.services
@pytest.mark.slow
def test_a_real_worker_imports_the_upload_and_the_page_shows_progress(
    transactional_db, client, media, private_redis, start_worker
):
    user = get_user_model().objects.create_user("boss", password="pw-123456", is_staff=True)
    client.force_login(user)
    media.mkdir(parents=True, exist_ok=True)
    start_worker(
        queue="celery",
        DATABASE_URL=worker_database_url(),
        MEDIA_ROOT=str(media),
        REDIS_URL=private_redis.url,
        CELERY_BROKER_URL=None,
        CELERY_RESULT_BACKEND=None,
    )
    with app_pointed_at(private_redis.url):
        response = upload(client, glove_text(n=20_000, d=10), tags="worker")
    assert response.status_code == 302
    job = EmbeddingImport.objects.get()
    status_url = reverse("spaces:import-status", args=[job.pk])
    seen = set()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        status = client.get(status_url).json()
        seen.add(status["status"])
        if status["finished"]:
            break
        time.sleep(0.2)
    assert status["status"] == "done", status
    assert status["space"]["items"] == 20_000
    assert (
        Item.objects.filter(space_id=status["space"]["id"], tags__name="worker").count() == 20_000
    )
    assert seen & {"pending", "running"}  # the page saw it before it finished
    assert uploads_left(media) == []
