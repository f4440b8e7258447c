"""Settings of model audits and the dashboards' figures, read from the environment like every
setting (``fairmetric_site/env.py``) and star-imported at the end of settings.py, so that
``django.conf.settings`` has them (docs/audit.md, docs/dashboards.md)."""

from fairmetric_site.env import env_int

# --- Model audits (learning/audits, docs/audit.md) -------------------------------------------
# Score files: rows, rows x (3 dim + 24 k) x 8 B (inputs.py), k; audits in flight: user, study.
AUDIT_MAX_ROWS = env_int("AUDIT_MAX_ROWS", 1_000_000, minimum=2)
AUDIT_MAX_DECODED_MB = env_int("AUDIT_MAX_DECODED_MB", 768, minimum=1)
AUDIT_MAX_K = env_int("AUDIT_MAX_K", 50, minimum=1)
AUDIT_MAX_IN_FLIGHT_USER = env_int("AUDIT_MAX_IN_FLIGHT_USER", 2, minimum=1)
AUDIT_MAX_IN_FLIGHT_STUDY = env_int("AUDIT_MAX_IN_FLIGHT_STUDY", 4, minimum=1)
# The worst violations stored per audit (+ a quarter as many of the largest gaps); search
# threads in the worker; bootstrap replicates per figure.
AUDIT_MAX_STORED_VIOLATIONS = env_int("AUDIT_MAX_STORED_VIOLATIONS", 5_000, minimum=1)
AUDIT_THREADS = env_int("AUDIT_THREADS", 2, minimum=1)
AUDIT_BOOTSTRAP = env_int("AUDIT_BOOTSTRAP", 200, minimum=20)
# Bootstrap refits of Σ an audit is repeated under (its metric uncertainty; docs/audit.md);
# 0 turns that part off.
AUDIT_METRIC_REFITS = env_int("AUDIT_METRIC_REFITS", 20, minimum=0)
# A running audit renews this lease; past it (or queued this long) the sweep sends it again.
AUDIT_LEASE_SECONDS = env_int("AUDIT_LEASE_SECONDS", 120, minimum=5)

# --- Dashboards -------------------------------------------------------------------------------
# Studies with fewer answers get their dashboard figures computed inline (well under a second);
# bigger ones only ever from the worker's cache (docs/dashboards.md).
DASHBOARD_INLINE_MAX_JUDGMENTS = env_int("DASHBOARD_INLINE_MAX_JUDGMENTS", 5_000, minimum=0)
# At most one background recomputation of a study's figures per this many seconds.
DASHBOARD_REFRESH_SECONDS = env_int("DASHBOARD_REFRESH_SECONDS", 30, minimum=1)
