"""The claims this test provider puts in the ID token and the userinfo answer."""

from oauth2_provider.oauth2_validators import OAuth2Validator


class Claims(OAuth2Validator):
    oidc_claim_scope = None  # every claim below, whatever scopes were asked

    def get_additional_claims(self, request):
        user = request.user
        return {
            "email": user.email,
            "email_verified": True,
            "preferred_username": user.username,
            "groups": user.last_name.split(",") if user.last_name else [],
        }
