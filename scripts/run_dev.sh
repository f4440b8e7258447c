#!/usr/bin/env bash
# Start the development web server and three Celery workers, stop all on Ctrl-C: one for the
# default queue (refits, imports, ...), one for the dashboard figures' own queue and one for the
# model audits', so that a refit never waits behind them (common/queues.py). The workers run the
# refit sweep themselves (at start-up and every LEARNING_SWEEP_SECONDS): no beat process is needed.
# The URL and the logins are printed last, once every worker says "ready" and the server answers
# (at most READY_WAIT seconds), so that the workers' banners do not scroll them away.
# Ctrl-C (or SIGTERM) stops every process within STOP_GRACE + 2 seconds: a warm shutdown first
# (a running task finishes), then Celery's cold shutdown, then SIGKILL for what is left (a task
# cut short is redelivered: acks_late).
# Used by `make run`; expects the virtualenv in .venv and a migrated database.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
READY_WAIT=${READY_WAIT:-60}
STOP_GRACE=${STOP_GRACE:-5}
LOGS=var/run-dev
mkdir -p "$LOGS"

pids=()
running() { # any of the given processes alive (a zombie is not)
  local pid
  for pid in "$@"; do
    ps -o stat= -p "$pid" 2>/dev/null | grep -qv '^Z' && return 0
  done
  return 1
}
stop_within() { # wait up to $1 seconds for every started process to end
  local tenths=$(($1 * 10))
  while ((tenths-- > 0)) && running "${pids[@]}"; do sleep 0.1; done
}
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "Stopping web server and workers..."
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  stop_within "$STOP_GRACE"
  for pid in "${pids[@]}"; do kill -QUIT "$pid" 2>/dev/null || true; done  # Celery: cold shutdown
  stop_within 1
  for pid in "${pids[@]}"; do # the pool's children first, then the process itself
    pkill -KILL -P "$pid" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

QUEUE=${CELERY_TASK_DEFAULT_QUEUE:-celery}
DASHBOARD_QUEUE=${CELERY_DASHBOARD_QUEUE:-$QUEUE-dashboards}
AUDIT_QUEUE=${CELERY_AUDIT_QUEUE:-$QUEUE-audits}
: >"$LOGS/worker.log"
: >"$LOGS/worker-dashboards.log"
: >"$LOGS/worker-audits.log"
# Each worker's output goes to the terminal and to a log the readiness check reads.
.venv/bin/celery -A fairmetric_site worker --loglevel=INFO --concurrency=1 -Q "$QUEUE" \
  --hostname="dev@%h" > >(tee -a "$LOGS/worker.log") 2>&1 &
pids+=($!)
WORKER_SWEEP=0 .venv/bin/celery -A fairmetric_site worker --loglevel=INFO --concurrency=1 \
  -Q "$DASHBOARD_QUEUE" --hostname="dev-dashboards@%h" \
  > >(tee -a "$LOGS/worker-dashboards.log") 2>&1 &
pids+=($!)
WORKER_SWEEP=0 .venv/bin/celery -A fairmetric_site worker --loglevel=INFO --concurrency=1 \
  -Q "$AUDIT_QUEUE" --hostname="dev-audits@%h" > >(tee -a "$LOGS/worker-audits.log") 2>&1 &
pids+=($!)

$PY manage.py runserver "$HOST:$PORT" --noreload &
pids+=($!)

ready() {
  grep -q " ready\.$" "$LOGS/worker.log" && grep -q " ready\.$" "$LOGS/worker-dashboards.log" \
    && grep -q " ready\.$" "$LOGS/worker-audits.log" && (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null
}
for ((tenths = READY_WAIT * 10; tenths > 0; tenths--)); do
  ready && break
  running "${pids[@]}" || break
  sleep 0.1
done
sleep 0.5 # the workers' last start-up lines (the first sweep) before the message
cat <<MSG

  fairmetric is running at http://$HOST:$PORT/
  Demo logins (password: ${DEMO_PASSWORD:-fairmetric}): admin, reviewer, annotator
  Broker: ${REDIS_URL:-${CELERY_BROKER_URL:-embedded (filesystem, var/broker)}}
  Database: ${DATABASE_URL:-SQLite (db.sqlite3)}
  Press Ctrl-C to stop.

MSG
# Exit (and stop the rest) as soon as either process ends.
wait -n "${pids[@]}"
