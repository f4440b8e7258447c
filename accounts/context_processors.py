"""Template context: what the navigation shows to the requesting user."""

from __future__ import annotations

from .hooks import may_create_tokens


def navigation(request) -> dict:
    """``may_export``: whether the "API tokens" link shows (the rule ``annotation`` registers,
    ``accounts.hooks``)."""
    user = getattr(request, "user", None)
    # A callable: the query runs only on pages whose template asks (templates call it).
    return {"may_export": lambda: may_create_tokens(user)}
