"""Item counts read as numbers with thousands separators (the Spaces page said "52298")."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse

from spaces.models import EmbeddingSpace

from ..annotation.factories import make_space


def test_the_spaces_page_and_home_format_item_counts(client, db, media_root):
    space = make_space(name="GloVe demo")
    EmbeddingSpace.objects.filter(pk=space.pk).update(item_count=52298)
    staff = get_user_model().objects.create_user("boss", password="pw-123456", is_staff=True)
    client.force_login(staff)
    page = client.get(reverse("spaces:list")).content.decode()
    assert "<td>52,298</td>" in page
    assert "52298" not in page
    owner = get_user_model().objects.create_user("owner", password="pw-123456")
    EmbeddingSpace.objects.filter(pk=space.pk).update(owner=owner)
    client.force_login(owner)
    assert "(52,298 items)" in client.get(reverse("home")).content.decode()
