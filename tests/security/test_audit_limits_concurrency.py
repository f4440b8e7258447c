"""The limit on audits in flight holds under concurrency: ten simultaneous audit POSTs of one
user, from real threads against a live server (one database connection per request thread, the
configured database: PostgreSQL in CI), store exactly ``AUDIT_MAX_IN_FLIGHT_USER`` audits; the
others get 429. The count is made again in the storing transaction under a lock of the user's
row, so no two requests can both pass on the same count."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from django.urls import reverse

from accounts.tokens import api_token_create
from learning.models import ModelAudit
from tests.annotation.factories import make_metric_version, make_space, make_study, make_user

from . import test_limits_concurrency as concurrency

server = concurrency.server  # the fixture: the whole app on a threaded live server


@pytest.mark.django_db(transaction=True)
def test_ten_simultaneous_audits_of_one_user_store_exactly_the_limit(server, settings, media_root):
    """The limit holds under concurrency: counted again under a lock of the user's row."""
    settings.AUDIT_MAX_IN_FLIGHT_USER = 2
    study = make_study(space=make_space(n_words=40))
    make_metric_version(study=study, method="face", sigma=np.eye(8), is_published=True)
    user = make_user("ci", study=study, role="reviewer")
    _, key = api_token_create(user=user, name="ci")
    keys = list(study.space.items.values_list("key", flat=True))[:20]
    text = "key,score\n" + "".join(f"{k},{i / 20}\n" for i, k in enumerate(keys))
    body, content_type = _multipart(text)
    url = server.url + reverse("api-audits", args=[study.pk])
    headers = {"Authorization": f"Bearer {key}", "Content-Type": content_type}

    def post(i):
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    statuses = _all_at_once(post, 10)
    assert sorted(statuses) == [201] * 2 + [429] * 8, statuses
    assert ModelAudit.objects.filter(created_by=user).count() == 2


def _multipart(text: str) -> tuple[bytes, str]:
    boundary = "fmlimit"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="k"\r\n\r\n3\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="predictions"; '
        f'filename="s.csv"\r\nContent-Type: text/csv\r\n\r\n{text}\r\n--{boundary}--\r\n'
    )
    return body.encode(), f"multipart/form-data; boundary={boundary}"


def _all_at_once(send, n: int) -> list:
    barrier = threading.Barrier(n)

    def one(i):
        barrier.wait()
        return send(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))
