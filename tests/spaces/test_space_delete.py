"""Deleting a space from the browser: its owner or staff; refused, naming them, while studies
use it; otherwise every row that goes with it and its files, audited."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from audit.models import AuditEvent
from spaces.models import EmbeddingImport, EmbeddingSpace, Item
from tests.annotation.factories import make_space, make_study, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def owned(media_root):
    """A space owned by a non-staff user, with the upload it came from (in its own folder)."""
    owner = make_user("owner")
    space = make_space(name="owned")
    EmbeddingSpace.objects.filter(pk=space.pk).update(owner=owner)
    space.refresh_from_db()
    job = EmbeddingImport(name="owned", status=EmbeddingImport.Status.DONE, space=space)
    job.file.name = default_storage.save("uploads/abc123def456/owned.txt", ContentFile(b"a 1\n"))
    job.save()
    return owner, space, job


def test_the_owner_deletes_an_unused_space_with_its_items_upload_and_files(
    client, owned, django_capture_on_commit_callbacks
):
    owner, space, job = owned
    matrix, upload = Path(space.matrix.path), Path(job.file.path)
    assert matrix.exists()
    assert upload.exists()
    client.force_login(owner)
    home = client.get(reverse("home")).content.decode()  # where an owner finds the page
    assert reverse("spaces:delete", args=[space.pk]) in home
    page = client.get(reverse("spaces:delete", args=[space.pk])).content.decode()
    assert f"{space.item_count} items" in page
    assert "2 files" in page
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("spaces:delete", args=[space.pk]))
    assert response.status_code == 302
    assert len(callbacks) == 1  # the files go once the deletion has committed
    assert not EmbeddingSpace.objects.filter(pk=space.pk).exists()
    assert not Item.objects.filter(space_id=space.pk).exists()
    assert not EmbeddingImport.objects.filter(pk=job.pk).exists()
    assert not matrix.exists()
    assert not upload.parent.exists()  # the upload's own folder goes too
    event = AuditEvent.objects.get(action=AuditEvent.Action.SPACE_DELETE)
    assert event.actor == owner
    assert event.detail["name"] == "owned"
    assert event.detail["removed"]["items"] == space.item_count


def test_a_space_that_studies_use_is_refused_naming_them_and_nothing_goes(client, owned):
    owner, space, job = owned
    make_study(space=space, name="Credit study")
    client.force_login(owner)
    page = client.get(reverse("spaces:delete", args=[space.pk])).content.decode()
    assert "Credit study" in page
    assert "<button" not in page.split('data-testid="space-in-use"')[1].split("</section>")[0]
    response = client.post(reverse("spaces:delete", args=[space.pk]))
    assert response.status_code == 409
    assert "is the space of 1 study (“Credit study”)" in response.content.decode()
    assert Item.objects.filter(space=space).count() == space.item_count
    assert EmbeddingImport.objects.filter(pk=job.pk).exists()
    assert Path(space.matrix.path).exists()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.SPACE_DELETE).exists()


def test_someone_the_space_is_shared_with_may_not_delete_it(client, owned):
    _, space, _ = owned
    other = make_user("other")
    space.shared_with.add(other)
    client.force_login(other)
    assert client.post(reverse("spaces:delete", args=[space.pk])).status_code == 403
    assert EmbeddingSpace.objects.filter(pk=space.pk).exists()
