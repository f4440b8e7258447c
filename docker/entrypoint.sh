#!/usr/bin/env bash
# The image's entrypoint: the first argument is the role this container plays.
#   web                gunicorn on WEB_BIND (waits for the database and its migrations)
#   worker-refits      the Celery worker of the default queue (refits, imports, webhooks); it
#                      also runs the periodic sweep (refits, uploads, imports, deliveries) at
#                      start-up and every LEARNING_SWEEP_SECONDS: no beat process is needed
#   worker-dashboards  the worker of the dashboard figures' queue (no sweep)
#   worker-audits      the worker of the model audits' queue (no sweep)
#   migrate            waits for the database and applies the migrations (the one role that does)
#   load-demo          the names demo (load_demo; arguments pass through), once migrated
#   manage             any manage.py command: `manage createsuperuser`
#   anything else      run as given (`bash`, `python3 ...`)
# The settings themselves come from the environment (.env.example names every one).
set -euo pipefail
cd "$(dirname "$0")/.."  # /app in the image
role=${1:-web}
[[ $# -gt 0 ]] && shift

DB_WAIT_SECONDS=${DB_WAIT_SECONDS:-120}
QUEUE=${CELERY_TASK_DEFAULT_QUEUE:-celery}

wait_db() { # wait_db [--migrated]: the database answers (and has every migration applied)
  python3 docker/wait_db.py --timeout "$DB_WAIT_SECONDS" "$@"
}
worker() { # worker QUEUE NAME: one Celery worker
  exec celery -A fairmetric_site worker --loglevel="${LOG_LEVEL:-INFO}" \
    --concurrency="${WORKER_CONCURRENCY:-1}" -Q "$1" --hostname="$2@%h"
}

case "$role" in
  web)
    wait_db --migrated
    exec gunicorn fairmetric_site.wsgi --bind "${WEB_BIND:-127.0.0.1:8000}" \
      --workers "${WEB_WORKERS:-2}" --timeout "${WEB_TIMEOUT:-120}" \
      --access-logfile - --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}" \
      --control-socket /app/var/gunicorn.ctl "$@"
    ;;
  worker-refits)
    wait_db --migrated
    worker "$QUEUE" refits
    ;;
  worker-dashboards)
    wait_db --migrated
    export WORKER_SWEEP=0
    worker "${CELERY_DASHBOARD_QUEUE:-$QUEUE-dashboards}" dashboards
    ;;
  worker-audits)
    wait_db --migrated
    export WORKER_SWEEP=0
    worker "${CELERY_AUDIT_QUEUE:-$QUEUE-audits}" audits
    ;;
  migrate)
    wait_db
    exec python3 manage.py migrate --noinput "$@"
    ;;
  load-demo)
    wait_db --migrated
    exec python3 manage.py load_demo "$@"
    ;;
  manage)
    exec python3 manage.py "$@"
    ;;
  *)
    exec "$role" "$@"
    ;;
esac
