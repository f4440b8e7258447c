"""Pages: study, WEAT and drift dashboards, metric versions (publish, compare), API tokens.

Views are thin: access check, one read from :mod:`learning.dashboards` / :mod:`learning.reports`
(or one service call), render.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from . import tokens
from .models import ApiToken


@login_required
@require_http_methods(["GET", "POST"])
def account_tokens(request: HttpRequest) -> HttpResponse:
    """List the user's tokens; POST creates one and shows its plaintext once."""
    context: dict = {}
    status = 200
    if request.method == "POST":
        try:
            token, key = tokens.api_token_create(user=request.user, name=request.POST.get("name"))
        except tokens.TokenError as error:
            context["error"] = str(error)
            status = 400
        else:
            context.update(new_token=token, new_key=key)
    context["tokens"] = ApiToken.objects.filter(user=request.user)
    response = render(request, "learning/tokens.html", context, status=status)
    response["Cache-Control"] = "no-store"  # the page may show a plaintext token
    return response


@login_required
@require_POST
def account_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        tokens.api_token_revoke(user=request.user, token_id=token_id)
    except tokens.TokenError as error:
        return render(
            request,
            "learning/tokens.html",
            {"error": str(error), "tokens": ApiToken.objects.filter(user=request.user)},
            status=404,
        )
    return redirect("account-tokens")
