"""Pages of accounts: the user's API tokens, and the invitation link that sets a password."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import login as auth_login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from common.errors import NotAllowed

from . import hooks, tokens
from .invitations import invitation_accept
from .models import ApiToken

NEW_TOKEN_SESSION_KEY = "fairmetric:new-token"


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """List the user's tokens; POST creates one and redirects (POST–redirect–GET: a reload
    makes no second token). The plaintext rides in the session to the next GET, which shows it
    once. Only people who may export (``accounts.hooks.may_create_tokens``) may create tokens;
    everybody may list and revoke their own."""
    allowed = hooks.may_create_tokens(request.user)
    context: dict = {"may_create": allowed}
    status = 200
    if request.method == "POST":
        if not allowed:
            raise NotAllowed(
                "You review or administer no study, so a token could download nothing."
            )
        try:
            token, key = tokens.api_token_create(
                user=request.user,
                name=request.POST.get("name"),
                study_ids=_posted_studies(request),
                expires_at=_posted_expiry(request),
            )
        except tokens.TokenError as error:
            context["error"] = str(error)
            status = 400
        else:
            request.session[NEW_TOKEN_SESSION_KEY] = {"id": token.pk, "key": key}
            return redirect("accounts:tokens")
    new = request.session.pop(NEW_TOKEN_SESSION_KEY, None)
    if new:
        token = ApiToken.objects.filter(user=request.user, pk=new.get("id")).first()
        if token is not None:
            context.update(new_token=token, new_key=new.get("key"))
    context.update(_listing(request.user))
    response = render(request, "accounts/tokens.html", context, status=status)
    response["Cache-Control"] = "no-store"  # the page may show a plaintext token
    return response


# The expiries the page offers (days; "" never). The service takes any date up to a year ahead.
EXPIRY_CHOICES = [("30", "in 30 days"), ("7", "in 7 days"), ("90", "in 90 days")]
EXPIRY_CHOICES += [("365", "in a year"), ("", "never")]


def _posted_studies(request: HttpRequest) -> list[int]:
    values = request.POST.getlist("studies")
    if not all(v.isdigit() and len(v) < 12 for v in values):
        raise tokens.TokenError("Choose studies from the list.")
    return [int(v) for v in values]


def _posted_expiry(request: HttpRequest):
    value = request.POST.get("expires_in", "")
    if value == "":
        return None
    if value not in dict(EXPIRY_CHOICES):
        raise tokens.TokenError("Choose an expiry from the list.")
    return timezone.now() + timedelta(days=int(value))


def _listing(user) -> dict:
    """The user's tokens, each with the names of the studies it is limited to; the studies and
    expiries the creation form offers."""
    offered = hooks.token_studies(user)
    names = dict(offered)
    rows = list(ApiToken.objects.filter(user=user))
    for token in rows:
        token.study_names = [names.get(pk, f"study {pk}") for pk in token.study_ids]
    return {
        "tokens": rows,
        "offered_studies": offered,
        "expiry_choices": EXPIRY_CHOICES,
        "now": timezone.now(),
    }


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        tokens.api_token_revoke(user=request.user, token_id=token_id)
    except tokens.TokenError as error:
        return render(
            request,
            "accounts/tokens.html",
            {
                "error": str(error),
                "may_create": hooks.may_create_tokens(request.user),
                **_listing(request.user),
            },
            status=404,
        )
    return redirect("accounts:tokens")


class InvitationView(auth_views.PasswordResetConfirmView):
    """The invitation link: the invited person chooses a password and is signed in."""

    template_name = "registration/invitation.html"
    post_reset_login = True
    post_reset_login_backend = "django.contrib.auth.backends.ModelBackend"
    success_url = reverse_lazy("annotation:study-list")
    reset_url_token = "set-password"

    def form_valid(self, form):
        """The password is set by one conditional UPDATE: of simultaneous uses of one link,
        one sets it and signs in; the others are told the link was used (409)."""
        if not invitation_accept(person=self.user, password=form.cleaned_data["new_password1"]):
            form.add_error(None, "This invitation link was used already; log in instead.")
            return self.render_to_response(self.get_context_data(form=form), status=409)
        del self.request.session[auth_views.INTERNAL_RESET_SESSION_TOKEN]
        auth_login(self.request, self.user, self.post_reset_login_backend)
        return HttpResponseRedirect(self.get_success_url())
