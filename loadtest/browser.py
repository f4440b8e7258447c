"""Browser sessions for the virtual annotators: a log-in through the login form, and the headers
a browser then sends (the session and CSRF cookies, the CSRF header the labelling page's script
sets). Sessions, unlike API tokens, live in the cache in front of the database
(accounts/sessions.py): the fault run stops Redis under both kinds of annotator.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from http.cookies import SimpleCookie

CSRF = "c" * 32  # a CSRF secret sent as both cookie and form field / header (Django accepts it)
SESSION_COOKIE = "sessionid"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def login_form(username: str, password: str) -> tuple[bytes, dict[str, str]]:
    """The login form's body and headers, as a browser posts it."""
    body = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": CSRF}
    ).encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={CSRF}"}
    return body, headers


def browser_login(base_url: str, username: str, password: str) -> dict[str, str]:
    """Log in through the form; the headers of that browser's later requests."""
    body, headers = login_form(username, password)
    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(
        f"{base_url}/accounts/login/", data=body, headers=headers, method="POST"
    )
    try:
        with opener.open(request, timeout=60) as response:
            status, cookies = response.status, response.headers.get_all("Set-Cookie") or []
    except urllib.error.HTTPError as answer:  # the 302 of a successful log-in
        status, cookies = answer.code, answer.headers.get_all("Set-Cookie") or []
    jar = SimpleCookie()
    for cookie in cookies:
        jar.load(cookie)
    if status != 302 or SESSION_COOKIE not in jar:
        raise RuntimeError(f"log-in of {username} answered {status} without a session")
    return {
        "Cookie": f"csrftoken={CSRF}; {SESSION_COOKIE}={jar[SESSION_COOKIE].value}",
        "X-CSRFToken": CSRF,
    }
