"""Bad inputs of accounts: API token pages, invitations and the login form (the site's
other pages take no input)."""

from __future__ import annotations

from django.urls import reverse

from .cases import Bad

CASES: list[Bad] = [
    Bad(
        "accounts:tokens",
        "no name",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "Give the token a name",
        {},
        "multipart",
        role="rev_a",  # only those who may export create tokens
    ),
    Bad(
        "accounts:tokens",
        "blank name",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "Give the token a name",
        {"name": "   "},
        "multipart",
        role="rev_a",  # only those who may export create tokens
    ),
    Bad(
        "accounts:tokens",
        "name over 100 characters",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "at most 100 characters",
        {"name": "n" * 101},
        "multipart",
        role="rev_a",  # only those who may export create tokens
    ),
    Bad(
        "accounts:tokens",
        "form body over 2 MB",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "Bad request",
        {"name": "n" * (3 * 1024 * 1024)},
        "multipart",
        role="rev_a",  # only those who may export create tokens
    ),
    Bad(
        "accounts:tokens",
        "limited to a study one is not a member of",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "You cannot limit a token to study",
        lambda w: {"name": "job", "studies": [str(w.study_b.pk)]},
        "multipart",
        role="rev_a",
    ),
    Bad(
        "accounts:tokens",
        "a study that is not a number",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "Choose studies from the list",
        {"name": "job", "studies": ["A"]},
        "multipart",
        role="rev_a",
    ),
    Bad(
        "accounts:tokens",
        "an expiry not offered (negative)",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "Choose an expiry from the list",
        {"name": "job", "expires_in": "-1"},
        "multipart",
        role="rev_a",
    ),
    Bad(
        "accounts:tokens",
        "an expiry not offered (text)",
        "post",
        lambda w: reverse("accounts:tokens"),
        400,
        "Choose an expiry from the list",
        {"name": "job", "expires_in": "forever"},
        "multipart",
        role="rev_a",
    ),
    Bad(
        "accounts:tokens",
        "an annotator only (could export nothing)",
        "post",
        lambda w: reverse("accounts:tokens"),
        403,
        "You review or administer no study",
        {"name": "job"},
        "multipart",
    ),
    Bad(
        "accounts:token-revoke",
        "unknown token",
        "post",
        lambda w: reverse("accounts:token-revoke", args=[999_999]),
        404,
        "No such token",
        {},
        "multipart",
    ),
    Bad(
        "accounts:invitation",
        "a forged link",
        "get",
        lambda w: reverse("accounts:invitation", args=["MQ", "abc-def"]),
        200,
        "does not work",
        role="anon",
    ),
    Bad(
        "accounts:login",
        "username over 150 characters",
        "post",
        lambda w: reverse("accounts:login"),
        200,
        "Please enter a correct username",
        {"username": "u" * 5000, "password": "p"},
        "multipart",
        role="anon",
    ),
]

# (endpoint, bad input, the test that covers it)
ELSEWHERE = [
    (
        "accounts:token-revoke",
        "another user's token",
        "tests.learning.test_export::test_a_user_cannot_revoke_someone_elses_token",
    ),
    ("accounts:login", "wrong password", "tests.test_auth::test_wrong_password_shows_a_form_error"),
    (
        "accounts:login",
        "repeated failures (429)",
        "tests.security.test_rate_limits::test_failed_logins_lock_the_username_from_that_address",
    ),
    (
        "accounts:sso",
        "single sign-on not set up (404); a stranger with account creation off",
        "tests.browser.test_single_sign_on::test_people_sign_on_through_the_teams_provider",
    ),
    (
        "accounts:sso-callback",
        "a callback while single sign-on is off (404)",
        "tests.browser.test_single_sign_on::"
        "test_without_a_provider_the_login_page_offers_none_and_its_routes_are_404",
    ),
]

# Taking no input beyond authentication (covered by the authorization matrix).
NO_INPUT = {"accounts:logout", "api-docs", "favicon", "healthz", "readyz", "home", "schema"}
