#!/usr/bin/env bash
# Start the development web server and three Celery workers, stop all on Ctrl-C: one for the
# default queue (refits, imports, ...), one for the dashboard figures' own queue and one for the
# model audits', so that a refit never waits behind them (common/queues.py). The workers run the refit sweep themselves (at
# start-up and every LEARNING_SWEEP_SECONDS): no beat process is needed.
# Used by `make run`; expects the virtualenv in .venv and a migrated database.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
mkdir -p var

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "Stopping web server and workers..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

QUEUE=${CELERY_TASK_DEFAULT_QUEUE:-celery}
DASHBOARD_QUEUE=${CELERY_DASHBOARD_QUEUE:-$QUEUE-dashboards}
AUDIT_QUEUE=${CELERY_AUDIT_QUEUE:-$QUEUE-audits}
.venv/bin/celery -A fairmetric_site worker --loglevel=INFO --concurrency=1 -Q "$QUEUE" \
  --hostname="dev@%h" &
pids+=($!)
WORKER_SWEEP=0 .venv/bin/celery -A fairmetric_site worker --loglevel=INFO --concurrency=1 \
  -Q "$DASHBOARD_QUEUE" --hostname="dev-dashboards@%h" &
pids+=($!)
WORKER_SWEEP=0 .venv/bin/celery -A fairmetric_site worker --loglevel=INFO --concurrency=1 \
  -Q "$AUDIT_QUEUE" --hostname="dev-audits@%h" &
pids+=($!)

$PY manage.py runserver "$HOST:$PORT" --noreload &
pids+=($!)

sleep 2
cat <<MSG

  fairmetric is running at http://$HOST:$PORT/
  Demo logins (password: ${DEMO_PASSWORD:-fairmetric}): admin, reviewer, annotator
  Broker: ${REDIS_URL:-${CELERY_BROKER_URL:-embedded (filesystem, var/broker)}}
  Database: ${DATABASE_URL:-SQLite (db.sqlite3)}
  Press Ctrl-C to stop.

MSG
# Exit (and stop the rest) as soon as either process ends.
wait -n "${pids[@]}"
