"""Pages of accounts, included at the root: log in and out, the invitation link, API tokens."""

from django.contrib.auth import views as auth_views
from django.urls import path
from django.views.decorators.http import require_http_methods

from . import login_throttle, sso, views

app_name = "accounts"

urlpatterns = [
    path("accounts/login/", login_throttle.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/sso/", sso.SignOnStart.as_view(), name="sso"),
    path("accounts/sso/callback/", sso.SignOnCallback.as_view(), name="sso-callback"),
    path(
        "accounts/invitation/<uidb64>/<token>/",
        require_http_methods(["GET", "POST"])(views.InvitationView.as_view()),
        name="invitation",
    ),
    path("account/tokens/", views.token_list, name="tokens"),
    path("account/tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
]
