"""Run the test OpenID provider: ``python -m tests.oidc_provider.serve PORT`` with PROVIDER_DB,
PROVIDER_KEY (an RSA private key in PEM), CLIENT_ID, CLIENT_SECRET, REDIRECT_URI and PEOPLE
(``username:email:password:group1,group2;…``) in the environment. Migrates its own SQLite
file, creates the people and one confidential client, then serves on 127.0.0.1:PORT."""

import os
import sys

os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from oauth2_provider.models import get_application_model  # noqa: E402


def main(port: str) -> None:
    call_command("migrate", verbosity=0, interactive=False)
    for person in filter(None, os.environ["PEOPLE"].split(";")):
        username, email, password, groups = person.split(":")
        get_user_model().objects.create_user(
            username, email=email, password=password, last_name=groups
        )
    Application = get_application_model()
    Application.objects.create(
        name="fairmetric",
        client_id=os.environ["CLIENT_ID"],
        client_secret=os.environ["CLIENT_SECRET"],
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=os.environ["REDIRECT_URI"],
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )
    call_command("runserver", f"127.0.0.1:{port}", use_reloader=False, use_threading=True)


if __name__ == "__main__":
    main(sys.argv[1])
