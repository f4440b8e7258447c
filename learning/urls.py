"""Pages of the learning app (dashboards, metric versions, API tokens), included at the root."""

from django.urls import path

from . import views

urlpatterns = [
    path("account/tokens/", views.account_tokens, name="account-tokens"),
    path(
        "account/tokens/<int:token_id>/revoke/",
        views.account_token_revoke,
        name="account-token-revoke",
    ),
]
