"""Template context: what the navigation shows to the requesting user."""

from __future__ import annotations

from .access import may_export


def navigation(request) -> dict:
    user = getattr(request, "user", None)
    # A callable: the query runs only on pages whose template asks (templates call it).
    return {"may_export": lambda: may_export(user)}
