"""Every URL pattern and every management command of the project, enumerated (not listed by
hand): the authorization matrix and the bad-input index fail on any they do not know."""

from __future__ import annotations

from django.core.management import get_commands
from django.urls import URLPattern, URLResolver, get_resolver

# Served only with DEBUG on (the development server); production has no such route.
DEBUG_ONLY = {"media/<path:path>"}

# Our packages (pyproject's import-linter root packages); their commands are ours.
OUR_APPS = {
    "fairmetric_site",
    "experiments",
    "learning",
    "annotation",
    "spaces",
    "accounts",
    "audit",
    "common",
}


def url_patterns(patterns=None, prefix: str = "", namespace: str | None = None):
    """(route, qualified name) of every URL pattern."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            ns = namespace
            if pattern.namespace:
                ns = f"{namespace}:{pattern.namespace}" if namespace else pattern.namespace
            yield from url_patterns(pattern.url_patterns, prefix + str(pattern.pattern), ns)
        elif isinstance(pattern, URLPattern):
            name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name
            yield prefix + str(pattern.pattern), name


def app_patterns() -> list[tuple[str, str]]:
    """The app's URL patterns: every one but the Django admin's."""
    return [(route, name) for route, name in url_patterns() if not route.startswith("admin/")]


def admin_patterns() -> list[tuple[str, str]]:
    return [(route, name) for route, name in url_patterns() if route.startswith("admin/")]


def our_commands() -> set[str]:
    """The management commands of our apps (not Django's or a library's)."""
    return {name for name, app in get_commands().items() if app.split(".")[0] in OUR_APPS}
