"""Where media live (common/storage.py, docs/storage.md), read from the environment like every
setting and star-imported at the end of settings.py: the local folder ``MEDIA_ROOT`` by default,
an S3-compatible bucket (django-storages' ``S3Storage``) with ``FAIRMETRIC_STORAGE=s3``.

Media are the user's data: uploads, embedding matrices, Sigma files and the fits kept beside
them, audit inputs, feedback previews. Purely local files stay on each machine whatever the
choice: the refit caches (``REFIT_CACHE_DIR``), the copies of stored matrices a worker
memory-maps (``STORAGE_CACHE_DIR``) and work files (``STORAGE_WORK_DIR``).
"""

from django.core.exceptions import ImproperlyConfigured

from fairmetric_site.env import env_str, env_url

FAIRMETRIC_STORAGE = env_str("FAIRMETRIC_STORAGE", "local").lower()
if FAIRMETRIC_STORAGE not in {"local", "s3"}:
    raise ImproperlyConfigured(
        f"FAIRMETRIC_STORAGE must be local or s3, got {FAIRMETRIC_STORAGE!r}"
    )
# The local folders (STORAGE_WORK_DIR, STORAGE_CACHE_DIR) are set in settings.py beside VAR_DIR.
# The default storage: the local folder, or the bucket below (settings.py puts it in STORAGES).
MEDIA_STORAGE = {"BACKEND": "django.core.files.storage.FileSystemStorage"}

# --- S3-compatible object storage (AWS, MinIO, SeaweedFS, Ceph, …) ------------------------------
AWS_STORAGE_BUCKET_NAME = env_str("AWS_STORAGE_BUCKET_NAME", "")
# Empty: AWS itself; else the store's address, e.g. http://minio:9000.
AWS_S3_ENDPOINT_URL = env_url("AWS_S3_ENDPOINT_URL", {"http", "https"})
# Empty: boto3's own chain (instance role, ~/.aws, AWS_* variables it reads itself).
AWS_ACCESS_KEY_ID = env_str("AWS_ACCESS_KEY_ID", "")
AWS_SECRET_ACCESS_KEY = env_str("AWS_SECRET_ACCESS_KEY", "")
AWS_S3_REGION_NAME = env_str("AWS_S3_REGION_NAME", "us-east-1")
# "path" (bucket in the URL's path: what most self-hosted stores want, the default with an
# endpoint) or "virtual" (bucket in the host name: AWS's default).
AWS_S3_ADDRESSING_STYLE = env_str(
    "AWS_S3_ADDRESSING_STYLE", "path" if AWS_S3_ENDPOINT_URL else "virtual"
)
if AWS_S3_ADDRESSING_STYLE not in {"path", "virtual", "auto"}:
    raise ImproperlyConfigured(
        f"AWS_S3_ADDRESSING_STYLE must be path, virtual or auto, got {AWS_S3_ADDRESSING_STYLE!r}"
    )
# A prefix inside the bucket for every media file (e.g. "fairmetric/"); empty: the bucket's root.
AWS_LOCATION = env_str("AWS_LOCATION", "")


def s3_media_storage(
    *, bucket, endpoint=None, access_key=None, secret_key=None, region, addressing, location=""
) -> dict:
    """``STORAGES["default"]`` for django-storages' ``S3Storage`` on ``bucket`` (also what the
    tests configure against their own SeaweedFS, tests/s3_store.py)."""
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "endpoint_url": endpoint or None,
            "access_key": access_key or None,
            "secret_key": secret_key or None,
            "region_name": region,
            "addressing_style": addressing,
            "signature_version": "s3v4",
            "location": location,
            # Like the local folder: a name taken gets a suffix, never overwritten.
            "file_overwrite": False,
            # A stored file opened through the storage API spools to disk beyond 16 MiB
            # (django-storages' default, 0, would keep a whole file in memory).
            "max_memory_size": 16 * 1024 * 1024,
        },
    }


if FAIRMETRIC_STORAGE == "s3":
    if not AWS_STORAGE_BUCKET_NAME:
        raise ImproperlyConfigured("FAIRMETRIC_STORAGE=s3 needs AWS_STORAGE_BUCKET_NAME")
    if bool(AWS_ACCESS_KEY_ID) != bool(AWS_SECRET_ACCESS_KEY):
        raise ImproperlyConfigured("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together")
    MEDIA_STORAGE = s3_media_storage(
        bucket=AWS_STORAGE_BUCKET_NAME,
        endpoint=AWS_S3_ENDPOINT_URL,
        access_key=AWS_ACCESS_KEY_ID,
        secret_key=AWS_SECRET_ACCESS_KEY,
        region=AWS_S3_REGION_NAME,
        addressing=AWS_S3_ADDRESSING_STYLE,
        location=AWS_LOCATION,
    )
