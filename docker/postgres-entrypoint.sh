#!/usr/bin/env bash
# PostgreSQL for compose.yaml: on first start (an empty PGDATA) create the cluster, its user
# POSTGRES_USER with POSTGRES_PASSWORD (scram-sha-256 over TCP; trust on the container's own
# socket, for pg_dump and psql through `docker compose exec`) and the database POSTGRES_DB; then
# run the server on POSTGRES_LISTEN:POSTGRES_PORT.
set -euo pipefail
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD (see .env.example)}"
POSTGRES_USER=${POSTGRES_USER:-fairmetric}
POSTGRES_DB=${POSTGRES_DB:-fairmetric}
if [[ ! -s "$PGDATA/PG_VERSION" ]]; then
  echo "postgres-entrypoint: creating the cluster in $PGDATA"
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  if [[ "$POSTGRES_DB" != postgres ]]; then
    echo "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\";" \
      | postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses="${POSTGRES_LISTEN:-127.0.0.1}" \
  -p "${POSTGRES_PORT:-5432}" "$@"
