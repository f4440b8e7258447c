"""fairmetric settings: one file, driven by environment variables.

Every variable is read below through a small typed helper (``fairmetric_site/env.py``) that
raises ``ImproperlyConfigured`` with one readable line when the value is bad, so a misconfigured
process stops at start-up. The README's "Configuration" table lists them; each is defined here,
with its default, next to what it configures.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from fairmetric_site.env import env_bool, env_int, env_list, env_path, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent

# --- Core -------------------------------------------------------------------------------------
# Development is the default, as for a fresh clone; production sets DEBUG=0 and a SECRET_KEY.
DEBUG = env_bool("DEBUG", True)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "django-insecure-development-only-key-do-not-use-in-production"
elif not DEBUG and (
    len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-")
):
    # Django's own check (security.W009), enforced: a key check --deploy would warn about stops
    # the process instead.
    raise ImproperlyConfigured(
        "SECRET_KEY must have at least 50 characters, 5 of them different, and not start with "
        "'django-insecure-' when DEBUG is off (generate one: python -c \"import secrets; "
        'print(secrets.token_urlsafe(50))")'
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must name at least one host")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

VAR_DIR = env_path("VAR_DIR", BASE_DIR / "var")
MEDIA_ROOT = env_path("MEDIA_ROOT", BASE_DIR / "media")
MEDIA_URL = "/media/"
STATIC_ROOT = env_path("STATIC_ROOT", BASE_DIR / "staticfiles")
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
MAX_UPLOAD_MB = env_int("MAX_UPLOAD_MB", 512, minimum=1)
# Embedding files are read with bounds (spaces.vectors.bounded.BoundedFile): at most this much
# (decompressed) data and lines of at most MAX_LINE_KB; the web request reads only the first
# PREFLIGHT_KB of an upload (format, header, first rows), the worker the rest.
MAX_DECOMPRESSED_MB = env_int("MAX_DECOMPRESSED_MB", 8192, minimum=1)
MAX_LINE_KB = env_int("MAX_LINE_KB", 1024, minimum=1)
PREFLIGHT_KB = env_int("PREFLIGHT_KB", 4096, minimum=64)
# Record and text uploads (CSV, Parquet, JSONL): at most MAX_TABLE_MB as uploaded, and read with
# bounds before anything is decoded in full (spaces.tables): rows, columns, characters per cell,
# and (Parquet) the decompressed size its footer declares. The web request reads only a table's
# header and first rows; the worker reads the rest in chunks (docs/security.md, "Table uploads").
MAX_TABLE_MB = env_int("MAX_TABLE_MB", 64, minimum=1)
TABLE_MAX_ROWS = env_int("TABLE_MAX_ROWS", 1_000_000, minimum=1)
TABLE_MAX_COLUMNS = env_int("TABLE_MAX_COLUMNS", 500, minimum=1)
TABLE_MAX_CELL_CHARS = env_int("TABLE_MAX_CELL_CHARS", 10_000, minimum=1)
TABLE_MAX_DECODED_MB = env_int("TABLE_MAX_DECODED_MB", 1024, minimum=1)
# A record column with more distinct values cannot be categorical (one dimension per value).
TABLE_MAX_CATEGORIES = env_int("TABLE_MAX_CATEGORIES", 1000, minimum=2)
# An upload still pending this long (columns never chosen, or never run) expires: the spaces
# sweep marks it failed and deletes its files.
UPLOAD_PENDING_HOURS = env_int("UPLOAD_PENDING_HOURS", 24, minimum=1)
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024  # request bodies other than file uploads

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # intcomma: 12,345 answers
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served by the app, not from a CDN
    "accounts",
    "spaces",
    "annotation",
    "learning",
    "audit",
    "experiments",  # the seed paper's experiments and the demos: commands only
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "common.headers.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "common.input_guard.InputGuardMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "audit.context.AuditContextMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "common.errors.AppErrorMiddleware",
]

ROOT_URLCONF = "fairmetric_site.urls"
WSGI_APPLICATION = "fairmetric_site.wsgi.application"
ASGI_APPLICATION = "fairmetric_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.navigation",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------------

# Web and worker processes share a SQLite file: wait for locks rather than fail, and take the
# write lock at BEGIN so two writers never deadlock upgrading read locks.
_SQLITE_OPTIONS = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
_database_url = env_url("DATABASE_URL", {"sqlite", "postgres", "postgresql", "pgsql"})
if _database_url:
    DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"].endswith("postgresql"):
        DATABASES["default"].setdefault("OPTIONS", {})
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    else:
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        DATABASES["default"]["OPTIONS"] = dict(_SQLITE_OPTIONS)
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": BASE_DIR / "db.sqlite3",
            "OPTIONS": dict(_SQLITE_OPTIONS),
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache (rate limits) ---------------------------------------------------------------------
# Shared by every process: Redis when REDIS_URL is set, else files under VAR_DIR (LocMem would
# give each gunicorn worker its own counters).

# A Redis call gives up after REDIS_TIMEOUT_MS (connect, answer): the caller goes on without
# the cache (common/redis_cache.py), so a dead Redis costs milliseconds per request.
REDIS_TIMEOUT_MS = env_int("REDIS_TIMEOUT_MS", 500, minimum=1)
if env_url("REDIS_URL", {"redis", "rediss"}):
    CACHES = {
        "default": {
            "BACKEND": "common.redis_cache.RedisCache",  # keeps its client objects
            "LOCATION": env_str("REDIS_URL"),
            "KEY_PREFIX": "fm",
            "OPTIONS": {
                "socket_connect_timeout": REDIS_TIMEOUT_MS / 1000,
                "socket_timeout": REDIS_TIMEOUT_MS / 1000,
            },
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

# Failed logins per username+IP within the window before the form refuses (429).
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
LOGIN_FAILURE_WINDOW = env_int("LOGIN_FAILURE_WINDOW", 900, minimum=1)
# Judgment POSTs per user: a token bucket refilled at JUDGMENT_RATE per second holding at most
# JUDGMENT_BURST; JUDGMENT_RATE=0 turns the limit off (load tests).
JUDGMENT_RATE = env_int("JUDGMENT_RATE", 5, minimum=0)
JUDGMENT_BURST = env_int("JUDGMENT_BURST", 60, minimum=1)
# Answers one POST /api/studies/{id}/judgments/batch/ may carry (each counts for the limit).
JUDGMENT_BATCH_MAX = env_int("JUDGMENT_BATCH_MAX", 50, minimum=1)
# Pairs the sampler chooses at once for an annotator's queue (annotation/labelling/pair_queue.py).
PAIR_QUEUE_SIZE = env_int("PAIR_QUEUE_SIZE", 16, minimum=1)

# --- Auth -------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "accounts.login_throttle.LoginThrottleBackend",  # refuses locked-out username+IP first
    "django.contrib.auth.backends.ModelBackend",
    "accounts.sso.TeamSignOnBackend",  # OpenID Connect; inert until OIDC_RP_CLIENT_ID is set
]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "accounts:login"

# --- E-mail (invitations) and study set-up uploads ---------------------------------------------

# Invitations are e-mailed through this backend; the console backend (the default) prints them.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "fairmetric@localhost")
# An invitation link (Django's password-reset token) stays valid this many days.
INVITATION_DAYS = env_int("INVITATION_DAYS", 7, minimum=1)
PASSWORD_RESET_TIMEOUT = INVITATION_DAYS * 24 * 3600
# Item-key, candidate-pair and gold-pair files: at most this many megabytes and rows.
SETUP_UPLOAD_MAX_MB = env_int("SETUP_UPLOAD_MAX_MB", 20, minimum=1)
SETUP_UPLOAD_MAX_ROWS = env_int("SETUP_UPLOAD_MAX_ROWS", 200_000, minimum=1)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Production hardening (active when DEBUG is off) ------------------------------------------

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
# Sessions read from the cache (written through to the database; answers cost no session
# query), from the database when the cache does not answer (accounts/sessions.py); a cached
# copy lives SESSION_CACHE_SECONDS at most (a logout missed by a down cache, bounded).
SESSION_ENGINE = "accounts.sessions"
SESSION_CACHE_SECONDS = env_int("SESSION_CACHE_SECONDS", 600, minimum=0)
X_FRAME_OPTIONS = "DENY"
# Every asset is served by the app itself (no CDN) and no template has inline script, so scripts
# come only from 'self'; inline styles stay allowed (plotly and the error pages use them).
# JSON data blocks (json_script) are not scripts. The API docs use drf-spectacular's split view
# (its init script is a file too).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
PERMISSIONS_POLICY = (
    "accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), "
    "microphone=(), payment=(), usb=()"
)
SECURE_CONTENT_TYPE_NOSNIFF = True

# --- Static files -----------------------------------------------------------------------------

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# --- REST API ---------------------------------------------------------------------------------

REST_FRAMEWORK = {
    # Named, revocable, hashed tokens ("Bearer fm_…", created on /account/tokens/) first, so a
    # 401 names the Bearer scheme; DRF's plain tokens stay accepted for scripts.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.tokens.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Application errors (common.errors.AppError) as {"detail": ...} with their 4xx status.
    "EXCEPTION_HANDLER": "common.errors.api_exception_handler",
    # JSON only (every API body is documented as JSON; forms get 415), parsed strictly:
    # duplicate keys, deep nesting, NUL and lone surrogates are refused with 400.
    "DEFAULT_PARSER_CLASSES": ["fairmetric_site.parsers.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "fairmetric API",
    "DESCRIPTION": "Label comparable pairs and groups; download learned fair metrics.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several fields are named "kind"; the WEAT test's gets a name of its own.
    "ENUM_NAME_OVERRIDES": {
        "WeatTestKindEnum": "learning.models.WeatTest.Kind",
        "LabelEnum": "annotation.models.Label",  # a decision's two labels: DecisionLabelEnum
        "DecisionLabelEnum": "annotation.review.services.DECISIONS",
    },
}

# --- Celery -----------------------------------------------------------------------------------
# Redis when REDIS_URL or CELERY_BROKER_URL is set; otherwise Kombu's filesystem transport in
# VAR_DIR, still consumed by a separate worker process (never eager mode outside tests).

REDIS_URL = env_url("REDIS_URL", {"redis", "rediss"})
CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", {"redis", "rediss", "amqp", "filesystem"})
if not CELERY_BROKER_URL:
    CELERY_BROKER_URL = REDIS_URL or "filesystem://"
EMBEDDED_BROKER_DIR = env_path("EMBEDDED_BROKER_DIR", VAR_DIR / "broker")
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(EMBEDDED_BROKER_DIR / "queue"),
        "data_folder_out": str(EMBEDDED_BROKER_DIR / "queue"),
        "control_folder": str(EMBEDDED_BROKER_DIR / "control"),
        "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    if CELERY_BROKER_URL.startswith("redis"):  # a dead broker refuses a message in milliseconds
        CELERY_BROKER_TRANSPORT_OPTIONS["socket_connect_timeout"] = REDIS_TIMEOUT_MS / 1000
CELERY_RESULT_BACKEND = env_url("CELERY_RESULT_BACKEND", {"redis", "rediss", "file", "db"})
if not CELERY_RESULT_BACKEND:
    CELERY_RESULT_BACKEND = REDIS_URL or (VAR_DIR / "results").as_uri()
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SOFT_TIME_LIMIT = 600
CELERY_TASK_TIME_LIMIT = 660
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = TIME_ZONE
# Tests give workers private queues; figures and audits have their own (common/queues.py).
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery") or "celery"
CELERY_DASHBOARD_QUEUE = env_str("CELERY_DASHBOARD_QUEUE", "")
CELERY_AUDIT_QUEUE = env_str("CELERY_AUDIT_QUEUE", "")

# --- Learning (refits) ------------------------------------------------------------------------
# A refit holds a per-study lease it renews while it runs; a killed worker's lease expires.
LEARNING_LEASE_SECONDS = env_int("LEARNING_LEASE_SECONDS", 30, minimum=2)
# The sweep queues refits of studies whose data is newer than their latest version.
LEARNING_SWEEP_SECONDS = env_int("LEARNING_SWEEP_SECONDS", 60, minimum=1)
# A queued refit still not started this long after its due time counts as lost and is re-sent.
LEARNING_LOST_AFTER_SECONDS = env_int("LEARNING_LOST_AFTER_SECONDS", 30, minimum=5)
# A worker's refit caches (learning/refits/cache.py): losing them costs time, never data.
REFIT_CACHE_DIR = env_path("REFIT_CACHE_DIR", VAR_DIR / "refits")
# Media live in MEDIA_ROOT or an S3 bucket (fairmetric_site/settings_storage.py); these stay local
# whatever the choice: work files of uploads and imports (a table checked chunk by chunk, texts
# embedded so far, a copy of a stored upload being read; removed when done) and, with S3, copies
# of stored matrices by sha256 that workers memory-map (the least recently used pruned beyond
# STORAGE_CACHE_MB). Losing either costs time, never data.
STORAGE_WORK_DIR = env_path("STORAGE_WORK_DIR", VAR_DIR / "work")
STORAGE_CACHE_DIR = env_path("STORAGE_CACHE_DIR", VAR_DIR / "storage-cache")
STORAGE_CACHE_MB = env_int("STORAGE_CACHE_MB", 4096, minimum=1)
# BLAS threads per fit: one is fastest when a worker shares the cores with others.
LEARNING_BLAS_THREADS = env_int("LEARNING_BLAS_THREADS", 1, minimum=1)
# Seconds a burst of answers is collected before one refit (a study's own setting overrides it).
LEARNING_DEBOUNCE_SECONDS = env_int("LEARNING_DEBOUNCE_SECONDS", 3, minimum=0)
# Every worker queues a sweep at start-up and every LEARNING_SWEEP_SECONDS (fairmetric_site.celery:
# SweepStep), so no beat process is needed; WORKER_SWEEP=0 leaves sweeping to a beat process.
WORKER_SWEEP = env_bool("WORKER_SWEEP", True)
CELERY_BEAT_SCHEDULE = {  # the sweeps of refits, uploads, imports, webhooks
    task.replace(".", "-"): {"task": task, "schedule": float(LEARNING_SWEEP_SECONDS)}
    for task in ("learning.sweep", "spaces.sweep", "annotation.sweep")
}

# --- Logging ----------------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO").upper()},
}

# --- Model audits and dashboards: fairmetric_site/settings_audits.py; webhooks and single
# sign-on: fairmetric_site/settings_integrations.py; media storage:
# fairmetric_site/settings_storage.py (each star-imported here) --------------------------------
from fairmetric_site.settings_audits import *  # noqa: E402, F403
from fairmetric_site.settings_integrations import *  # noqa: E402, F403
from fairmetric_site.settings_storage import *  # noqa: E402, F403

STORAGES["default"] = MEDIA_STORAGE  # noqa: F405 (the local folder, or an S3 bucket)
