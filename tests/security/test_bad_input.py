"""The bad-input catalog's tests and its one index (the cases: tests/security/bad_input/).

Each ``Bad`` case sends one bad request and expects a 4xx answer whose body carries a readable
message, with no row written anywhere (every model of annotation, learning, auth and audit is
counted before and after). ``COMMANDS`` does the same for the management commands (one
``CommandError`` line). Cases tested elsewhere are listed in ``COVERED_ELSEWHERE`` with the test
that covers them (checked to exist). ``test_every_url_pattern_and_command_is_in_the_catalog``
enumerates every URL pattern (and every row of the authorization matrix) and every management
command of ours: each must appear in the catalog, or be listed as taking no input.
"""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command

from .bad_input import CATALOG, COMMANDS, COVERED_ELSEWHERE, NO_INPUT, Bad
from .conftest import World
from .matrix import MATRIX
from .routes import DEBUG_ONLY, app_patterns, our_commands

# Rate-limit counters count attempts, refused ones included (a login attempt is counted before
# its password is checked: audit.limits), so they are not "written" data.
NOT_DATA = {"audit.RateLimit"}


def _row_counts() -> dict[str, int]:
    return {
        model._meta.label: model.objects.count()
        for label in ("spaces", "annotation", "learning", "auth", "audit", "authtoken")
        for model in apps.get_app_config(label).get_models()
        if model._meta.label not in NOT_DATA
    }


def _send(world: World, case: Bad):
    client = world.client(case.role)
    url = case.url(world)
    if case.method == "get":
        return client.get(url)
    body = case.body(world) if callable(case.body) else case.body
    if case.content_type == "multipart":
        return getattr(client, case.method)(url, body or {})
    if not isinstance(body, bytes | str):
        body = json.dumps(body)
    return getattr(client, case.method)(url, body, content_type=case.content_type)


@pytest.mark.parametrize("case", CATALOG, ids=[f"{c.endpoint}: {c.what}" for c in CATALOG])
def test_bad_input_is_refused_with_a_message_and_nothing_written(world, case):
    before = _row_counts()
    response = _send(world, case)
    text = response.content.decode("utf-8", "replace")
    assert response.status_code == case.status, text[:500]
    assert case.message in text, text[:1000]
    assert "Traceback" not in text
    assert _row_counts() == before


def test_every_url_pattern_and_command_is_in_the_catalog():
    listed = (
        {c.endpoint for c in CATALOG}
        | {e for e, _, _ in COVERED_ELSEWHERE}
        | {c for c, *_ in COMMANDS}
        | NO_INPUT
    )
    endpoints = {name for route, name in app_patterns() if route not in DEBUG_ONLY} | set(MATRIX)
    missing = (endpoints | our_commands()) - listed
    assert not missing, f"endpoints or commands with no bad-input case: {sorted(missing)}"
    unknown = listed - endpoints - our_commands()
    assert not unknown, f"catalog entries for no URL pattern or command: {sorted(unknown)}"


@pytest.mark.parametrize("reference", sorted({t for _, _, t in COVERED_ELSEWHERE}))
def test_referenced_tests_exist(reference):
    module, name = reference.split("::")
    assert callable(getattr(importlib.import_module(module), name, None)), reference


@pytest.mark.parametrize(
    ("command", "what", "args", "message"), COMMANDS, ids=[f"{c[0]}: {c[1]}" for c in COMMANDS]
)
def test_commands_refuse_bad_input_with_one_line(world, tmp_path, command, what, args, message):
    (tmp_path / "f.csv").write_text("key_a,key_b,label\nw000,zzz,comparable\n")
    (tmp_path / "v.txt").write_text("a 1 2\nb 3 4\n")
    before = _row_counts()
    with pytest.raises(CommandError, match=message) as info:
        call_command(command, *args(world, tmp_path))
    assert "\n" not in str(info.value)
    assert _row_counts() == before
