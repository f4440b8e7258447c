"""What accounts needs from a layer above it, registered there at start-up.

The token pages offer tokens only to people whose token could download something; who that is
depends on study roles, which live in ``annotation`` (above this app). ``annotation`` registers
the rule in ``AnnotationConfig.ready`` (``annotation.access.may_export``), and the studies a
token may be limited to (``annotation.access.token_studies``: the studies the user may open).
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured

_may_create_tokens: Callable[[object], bool] | None = None
_token_studies: Callable[[object], list[tuple[int, str]]] | None = None


def provide_token_rule(
    rule: Callable[[object], bool], studies: Callable[[object], list[tuple[int, str]]]
) -> None:
    global _may_create_tokens, _token_studies
    _may_create_tokens, _token_studies = rule, studies


def token_studies(user) -> list[tuple[int, str]]:
    """The studies (id, name) a token of ``user`` may be limited to (the rule registered)."""
    if _token_studies is None:
        raise ImproperlyConfigured("no token rule registered (is annotation installed?)")
    return _token_studies(user)


def may_create_tokens(user) -> bool:
    """May ``user`` create API tokens (the rule ``annotation`` registered)."""
    if _may_create_tokens is None:
        raise ImproperlyConfigured("no token rule registered (is annotation installed?)")
    return _may_create_tokens(user)
