"""Refuse text no database can store before any view sees it.

PostgreSQL cannot store or even compare a string containing NUL (``\\x00``): a query parameter
``?q=a%00b`` reaching a ``WHERE … LIKE`` raises ``ValueError`` deep in psycopg (a 500), and a form
field read without a form (``request.POST.get``) does the same on insert. This middleware answers
400 for a NUL anywhere in the query string (names and values) or a form-encoded body, on every
URL — so a new endpoint is covered without anyone remembering. JSON bodies are checked by the
API's parser (``fairmetric_site.parsers``: NUL and lone surrogates); multipart fields go through
Django forms, whose ``CharField`` refuses NUL. (Lone surrogates cannot arrive in a query string
or form: Django decodes those with replacement.)

It also answers 411 for a body sent with ``Transfer-Encoding: chunked`` (no length): Django reads
``CONTENT_LENGTH`` bytes, so such a body would silently be read as empty ("field required").
"""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import HttpResponse, JsonResponse

API_PREFIX = "/api/"
FORM_TYPE = "application/x-www-form-urlencoded"


def _has_nul(query_dict) -> bool:
    return any(
        "\x00" in key or any("\x00" in v for v in values) for key, values in query_dict.lists()
    )


class InputGuardMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        refusal = self._refusal(request)
        if refusal is None:
            return self.get_response(request)
        status, message = refusal
        if request.path.startswith(API_PREFIX):
            return JsonResponse({"detail": message}, status=status)
        if status == 400:
            raise BadRequest(message)
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")

    @staticmethod
    def _refusal(request) -> tuple[int, str] | None:
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not request.META.get("CONTENT_LENGTH"):
            return 411, "A request body needs a Content-Length (chunked bodies are not accepted)."
        if _has_nul(request.GET):
            return 400, "The query string contains a NUL character."
        form = request.method == "POST" and request.content_type == FORM_TYPE
        if form and _has_nul(request.POST):
            return 400, "A form field contains a NUL character."
        return None
