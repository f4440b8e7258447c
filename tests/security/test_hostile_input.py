"""Hostile input on every endpoint, generated from the URL conf (through the authorization
matrix, which has a row for every URL pattern, so a new endpoint is covered without anyone
remembering to add it here).

For every row and every method it serves, as the superuser (who passes every gate):

* a JSON body nested 1,001 levels deep (Python's decoder raised ``RecursionError``: a 500);
* NUL in each query parameter (names and values), plus an extra ``q`` parameter;
* NUL and a lone surrogate in each body field (JSON and form bodies).

The answer must never be a server error; for the JSON API it is 400. Run it on PostgreSQL
(CI does): SQLite stores NUL happily, so only PostgreSQL shows the 500s this guards against.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from .conftest import World
from .matrix import MATRIX, Row

ROLE = "su"
WRITES = ("post", "put", "patch")
BAD_TEXT = {"nul": "a\x00b", "surrogate": "a\ud800b"}
DEEP = "[" * 1001 + "]" * 1001


def _served(row: Row) -> list[str]:
    return [m for m, who in row.methods.items() if who.get(ROLE, 500) < 500]


def _with_query(url: str, params: list[tuple[str, str]]) -> str:
    parts = urlsplit(url)
    return parts.path + ("?" + urlencode(params) if params else "")


def _query_variants(url: str):
    params = parse_qsl(urlsplit(url).query, keep_blank_values=True)
    for i, (key, value) in enumerate(params):
        yield f"value of {key}", [*params[:i], (key, value + "\x00"), *params[i + 1 :]]
        yield f"name {key}", [*params[:i], (key + "\x00", value), *params[i + 1 :]]
    yield "extra q", [*params, ("q", "a\x00b")]


def _send(world: World, method: str, url: str, body, fmt: str):
    client = world.client(ROLE)
    if method == "get":
        return client.get(url)
    if fmt == "json":  # as text: the test client's renderer cannot encode a lone surrogate
        return getattr(client, method)(url, json.dumps(body), content_type="application/json")
    return getattr(client, method)(url, body, format=fmt)


def _cases():
    for name, row in MATRIX.items():
        for method in _served(row):
            yield pytest.param(name, method, id=f"{name}-{method.upper()}")


@pytest.mark.parametrize(("name", "method"), list(_cases()))
def test_no_server_error_on_nul_in_the_query(world, name, method):
    row = MATRIX[name]
    url = row.url(world)
    got = {}
    for label, params in _query_variants(url):
        body = row.body(world, ROLE) if row.body else {}
        response = _send(world, method, _with_query(url, params), body, row.fmt)
        got[label] = response.status_code
    assert all(status == 400 for status in got.values()), got


@pytest.mark.parametrize(("name", "method"), [c for c in _cases() if c.values[1] in WRITES])
def test_no_server_error_on_bad_text_or_deep_nesting_in_the_body(world, name, method):
    row = MATRIX[name]
    url = row.url(world)
    got = {}
    if row.fmt == "json":
        client = world.client(ROLE)
        response = getattr(client, method)(url, DEEP, content_type="application/json")
        got["deep"] = response.status_code
        assert response.status_code == 400, response.content[:300]
        assert "nested" in response.json()["detail"]
    fields = row.body(world, ROLE) if row.body else {"name": "x"}
    for field in fields:
        for kind, text in BAD_TEXT.items():
            if kind == "surrogate" and row.fmt != "json":
                continue  # forms and query strings cannot carry one (decoded with replacement)
            body = {**fields, field: text}
            got[f"{field}={kind}"] = _send(world, method, url, body, row.fmt).status_code
    assert all(status < 500 for status in got.values()), got
    if row.fmt == "json":
        assert all(status == 400 for status in got.values()), got


def test_every_write_endpoint_is_swept():
    """A row serving a write must be in the body sweep (the matrix decides what is served)."""
    swept = {c.values[0] for c in _cases() if c.values[1] in WRITES}
    writes = {name for name, row in MATRIX.items() if set(row.methods) & set(WRITES)}
    assert swept == writes
