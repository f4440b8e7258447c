"""Property-based fuzzing of the REST API from its OpenAPI schema (/api/schema/): no 5xx.

Every operation of the schema gets ``FUZZ_MAX_EXAMPLES`` generated requests (default 12: the
whole file stays under a minute; ``make fuzz`` runs 300), sent through the WSGI application
with the API token of an admin of study A. Path ids are pointed at the seeded study's real
objects half of the time (else left random, mostly unknown ids), so bodies and query strings
reach the code behind the lookups. Only ``not_a_server_error`` is checked: the bad-input
catalog (test_bad_input.py) asserts the exact 4xx answers.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from .conftest import own_weat_test

MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "12"))


# Loaded once at collection, through the WSGI application (the schema needs no database).
# As through the TLS proxy (production settings redirect plain HTTP when DEBUG=0 is set).
PROXY = {"X-Forwarded-Proto": "https"}
schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(), headers=PROXY)


def _real_ids(world) -> dict[str, object]:
    return {
        "study_id": world.study_a.pk,
        "group_id": world.group.pk,
        "version_id": world.version.pk,
        "ref": str(world.judgment.client_id),
        "method": "face",
        "test_id": own_weat_test(world.study_a).pk,
    }


@pytest.fixture
def fuzz_world(world, settings):
    settings.JUDGMENT_RATE = 0  # explore, do not get throttled
    # With DEBUG=0 in the environment the production settings use the manifest storage, whose
    # manifest only `collectstatic` writes; every page (the 404 page too) would be a 500 here.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    # As Django's test client does: the request signals must not close the test's connection.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield world
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_never_answers_5xx(case, fuzz_world):
    if case.path_parameters and hash(repr(case.body) + repr(case.query)) % 2 == 0:
        real = _real_ids(fuzz_world)
        for name in case.path_parameters:
            if name in real:
                case.path_parameters[name] = real[name]
    headers = {
        "Authorization": f"Bearer {fuzz_world.tokens['adm_a']}",
        **PROXY,
    }
    response = case.call(headers=headers)
    assert response.status_code != 301, "redirected to HTTPS: the request reached no view"
    case.validate_response(response, checks=[not_a_server_error])
