"""An unreachable cache must not refuse answers (found by loadtest/faults.py), nor lift the
judgment limit: its bucket is in the database (``audit.limits``)."""

from __future__ import annotations

import socket
import uuid

from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from annotation.models import PairJudgment
from spaces.models import Item
from tests.annotation.factories import make_space, make_study, make_user


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once the socket is closed


def test_judgment_post_is_stored_while_the_cache_is_down(db, settings, media_root):
    settings.JUDGMENT_RATE, settings.JUDGMENT_BURST = 1, 1
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{_closed_port()}/0",
        }
    }
    study = make_study(space=make_space())
    user = make_user("ann", study=study, role="annotator")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user, name='t')[1]}")
    a, b, c = Item.objects.filter(space=study.space).order_by("id").values_list("id", flat=True)[:3]
    url = reverse("api-judgments", args=[study.pk])
    statuses = [
        client.post(
            url,
            {"item_a": a, "item_b": other, "label": "comparable", "client_id": str(uuid.uuid4())},
            format="json",
        ).status_code
        for other in (b, c)
    ]
    # The first answer is stored with the cache down; burst 1 still refuses the second.
    assert statuses == [201, 429]
    assert PairJudgment.objects.filter(annotator=user).count() == 1
