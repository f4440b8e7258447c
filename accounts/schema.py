"""OpenAPI (drf-spectacular) description of the personal API tokens."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.tokens.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal token from /account/tokens/: `Authorization: Bearer fm_…`",
        }
