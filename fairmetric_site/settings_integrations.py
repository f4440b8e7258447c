"""Settings of fairmetric's integrations with other systems, read from the environment like
every setting (``fairmetric_site/env.py``) and star-imported at the end of settings.py, so that
``django.conf.settings`` has them: webhooks (``annotation/webhooks/``, docs/annotation.md) and
single sign-on with OpenID Connect (``accounts/sso.py``, docs/security.md).
"""

from django.core.exceptions import ImproperlyConfigured

from fairmetric_site.env import env_bool, env_int, env_list, env_str

# Deliveries to loopback, private, link-local or reserved addresses (the app's own network) are
# refused unless WEBHOOK_ALLOW_PRIVATE (a receiver on the same machine or network, tests).
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10, minimum=1)
# A delivery not answered 2xx is retried after WEBHOOK_RETRY_SECONDS × 2^(attempt − 1) (at most an
# hour) until WEBHOOK_MAX_ATTEMPTS attempts, then marked failed.
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 8, minimum=1)
WEBHOOK_RETRY_SECONDS = env_int("WEBHOOK_RETRY_SECONDS", 30, minimum=1)

# --- Single sign-on with OpenID Connect (accounts/sso.py; docs/security.md "Single sign-on") ----
# Off until OIDC_RP_CLIENT_ID is set; then every endpoint below must be given (the provider's
# discovery document lists them). Local accounts keep working beside it.
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT", "")
OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile")
OIDC_USE_PKCE = True
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT", 10, minimum=1)
# Whether a first sign-in with an unknown e-mail address creates an account (else it is refused).
OIDC_CREATE_USER = env_bool("OIDC_CREATE_USER", False)
# A claim (e.g. "groups") and the values of it that make a person staff, at every sign-in.
OIDC_STAFF_CLAIM = env_str("OIDC_STAFF_CLAIM", "")
OIDC_STAFF_VALUES = env_list("OIDC_STAFF_VALUES", [])
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
OIDC_AUTHENTICATION_CALLBACK_URL = "accounts:sso-callback"
if OIDC_RP_CLIENT_ID:
    missing = [
        name
        for name in (
            "OIDC_RP_CLIENT_SECRET",
            "OIDC_OP_AUTHORIZATION_ENDPOINT",
            "OIDC_OP_TOKEN_ENDPOINT",
            "OIDC_OP_USER_ENDPOINT",
            "OIDC_OP_JWKS_ENDPOINT",
        )
        if not globals()[name]
    ]
    if missing:
        raise ImproperlyConfigured(f"OIDC_RP_CLIENT_ID is set but {', '.join(missing)} is not")
