"""Matrix rows of the site (home, health, API schema and docs) and of accounts (login, logout,
invitations, API tokens)."""

from __future__ import annotations

from django.urls import reverse

from .policies import LOGGED_IN, PAGE_GATE, PUBLIC, Row, statuses

ROWS: dict[str, Row] = {
    "home": Row(lambda w: reverse("home"), {"get": LOGGED_IN}, PAGE_GATE),
    "healthz": Row(lambda w: reverse("healthz"), {"get": PUBLIC}),
    "readyz": Row(lambda w: reverse("readyz"), {"get": PUBLIC}),
    "favicon": Row(lambda w: reverse("favicon"), {"get": PUBLIC}),
    "accounts:login": Row(
        lambda w: reverse("accounts:login"),
        {"get": PUBLIC, "post": PUBLIC},
        body=lambda w, r: {"username": f"nobody-{r}", "password": "wrong"},
    ),
    "accounts:logout": Row(
        lambda w: reverse("accounts:logout"), {"post": statuses(302, 302, 302, 302, 302, 302)}
    ),
    # Single sign-on is off in the matrix's world: both routes are 404 to everyone
    # (tests/browser/test_single_sign_on.py signs on through a real provider).
    "accounts:sso": Row(lambda w: reverse("accounts:sso"), {"get": statuses(*[404] * 6)}),
    "accounts:sso-callback": Row(
        lambda w: reverse("accounts:sso-callback") + "?code=c&state=s",
        {"get": statuses(*[404] * 6)},
    ),
    "schema": Row(lambda w: reverse("schema"), {"get": PUBLIC}),
    "api-docs": Row(lambda w: reverse("api-docs"), {"get": PUBLIC}),
    "accounts:invitation": Row(  # an invalid link: the page that says so, to everyone
        lambda w: reverse("accounts:invitation", args=["MQ", "set-password"]),
        {"get": PUBLIC, "post": PUBLIC},
    ),
    "accounts:tokens": Row(  # everybody lists their tokens; reviewers/admins/staff create (PRG)
        lambda w: reverse("accounts:tokens"),
        {"get": LOGGED_IN, "post": statuses(302, 403, 403, 302, 302, 302)},
        PAGE_GATE,
        body=lambda w, r: {"name": f"job of {r}"},
    ),
    "accounts:token-revoke": Row(  # only one's own token (ann_a's here)
        lambda w: reverse("accounts:token-revoke", args=[w.token_ids["ann_a"]]),
        {"post": statuses(302, 302, 404, 404, 404, 404)},
        PAGE_GATE,
    ),
}
