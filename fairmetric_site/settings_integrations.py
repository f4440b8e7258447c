"""Settings of fairmetric's integrations with other systems, read from the environment like
every setting (``fairmetric_site/env.py``) and star-imported at the end of settings.py, so that
``django.conf.settings`` has them: webhooks (``annotation/webhooks/``, docs/annotation.md).
"""

from fairmetric_site.env import env_bool, env_int

# Deliveries to loopback, private, link-local or reserved addresses (the app's own network) are
# refused unless WEBHOOK_ALLOW_PRIVATE (a receiver on the same machine or network, tests).
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10, minimum=1)
# A delivery not answered 2xx is retried after WEBHOOK_RETRY_SECONDS × 2^(attempt − 1) (at most an
# hour) until WEBHOOK_MAX_ATTEMPTS attempts, then marked failed.
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 8, minimum=1)
WEBHOOK_RETRY_SECONDS = env_int("WEBHOOK_RETRY_SECONDS", 30, minimum=1)
