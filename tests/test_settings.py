"""Each bad environment value stops start-up with one readable ImproperlyConfigured line."""

import subprocess
import sys

import pytest

from .conftest import ROOT, subprocess_env

GOOD = {
    "DEBUG": "1",
    "SECRET_KEY": None,
    "DATABASE_URL": None,
    "REDIS_URL": None,
    "CELERY_BROKER_URL": None,
    "CELERY_RESULT_BACKEND": None,
    # The browser tests set this for Playwright; a deployment never has it.
    "DJANGO_ALLOW_ASYNC_UNSAFE": None,
}


def run_check(**env: str | None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=subprocess_env(**{**GOOD, **env}),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DEBUG": "maybe"}, "DEBUG must be a boolean"),
        ({"DEBUG": "0"}, "SECRET_KEY must be set when DEBUG is off"),
        ({"DEBUG": "0", "SECRET_KEY": "short"}, "SECRET_KEY must have at least 50 characters"),
        # Passed the old 32-character rule, fails Django's W009 (length, variety, prefix):
        ({"DEBUG": "0", "SECRET_KEY": "a" * 40}, "SECRET_KEY must have at least 50 characters"),
        ({"DEBUG": "0", "SECRET_KEY": "abab" * 20}, "5 of them different"),
        (
            {"DEBUG": "0", "SECRET_KEY": "django-insecure-" + "k3y" * 20},
            "not start with 'django-insecure-'",
        ),
        ({"DATABASE_URL": "mysql://u@h/db"}, "DATABASE_URL must be a URL with scheme"),
        ({"REDIS_URL": "http://127.0.0.1:6379"}, "REDIS_URL must be a URL with scheme"),
        ({"CELERY_BROKER_URL": "nats://x"}, "CELERY_BROKER_URL must be a URL with scheme"),
        ({"MEDIA_ROOT": "relative/media"}, "MEDIA_ROOT must be an absolute path"),
        ({"ALLOWED_HOSTS": " , "}, "ALLOWED_HOSTS must name at least one host"),
        ({"MAX_UPLOAD_MB": "lots"}, "MAX_UPLOAD_MB must be an integer"),
        ({"WEBHOOK_MAX_ATTEMPTS": "0"}, "WEBHOOK_MAX_ATTEMPTS must be at least 1"),
        ({"FAIRMETRIC_STORAGE": "s4"}, "FAIRMETRIC_STORAGE must be local or s3"),
        ({"FAIRMETRIC_STORAGE": "s3"}, "FAIRMETRIC_STORAGE=s3 needs AWS_STORAGE_BUCKET_NAME"),
        (
            {"FAIRMETRIC_STORAGE": "s3", "AWS_STORAGE_BUCKET_NAME": "m", "AWS_ACCESS_KEY_ID": "k"},
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together",
        ),
        ({"AWS_S3_ENDPOINT_URL": "ftp://store"}, "AWS_S3_ENDPOINT_URL must be a URL with scheme"),
        (
            {"OIDC_RP_CLIENT_ID": "fairmetric", "OIDC_RP_CLIENT_SECRET": "s"},
            "OIDC_RP_CLIENT_ID is set but OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_TOKEN_ENDPOINT",
        ),
    ],
)
def test_bad_value_gives_one_readable_line(env, message):
    result = run_check(**env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ImproperlyConfigured: ")
    assert message in lines[0]


def test_good_defaults_pass_the_system_check():
    result = run_check()
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_production_settings_pass_check_deploy():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=subprocess_env(
            **{
                **GOOD,
                "DEBUG": "0",
                "SECRET_KEY": "x" * 20 + "-production-secret-key-0123456789",
                "ALLOWED_HOSTS": "fairmetric.example.org",
            }
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
