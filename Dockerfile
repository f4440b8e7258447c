# The fairmetric image: one image for every role (web, the three workers, migrate, load-demo),
# chosen by the entrypoint's first argument (docker/entrypoint.sh; compose.yaml runs them all).
# BASE defaults to the official slim Python image; where no image registry is reachable,
# scripts/docker_base.sh builds a stand-in from Debian's packages (docs/deploy.md):
#   docker build --network host --build-arg BASE=fairmetric-base:local -t fairmetric:local .
ARG BASE=python:3.11-slim

# --- build: a virtualenv with the pinned runtime requirements --------------------------------
FROM ${BASE} AS build
ARG PIP_INDEX_URL=https://pypi.org/simple
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_DEFAULT_TIMEOUT=180 \
    PIP_INDEX_URL=${PIP_INDEX_URL}
RUN python3 -m venv /opt/venv
# Certificates of an intercepting proxy between this machine and the package index, if any
# (docker/build-ca/*.crt; scripts/compose_smoke.py copies the host's): trusted by pip in this
# stage only; the image that runs neither trusts nor keeps them (removed after the code's COPY).
COPY docker/build-ca/ /tmp/build-ca/
RUN cat /etc/ssl/certs/ca-certificates.crt /tmp/build-ca/*.crt > /tmp/pip-ca.pem 2>/dev/null \
 || cp /etc/ssl/certs/ca-certificates.crt /tmp/pip-ca.pem
ENV PIP_CERT=/tmp/pip-ca.pem
COPY requirements.txt requirements-adult-nodeps.txt /tmp/requirements/
# As `make install` does, less the development tools: the runtime set, then the two packages
# whose declared pins are wrong, without their dependencies (requirements-adult-nodeps.txt).
RUN /opt/venv/bin/python -m pip install --quiet -r /tmp/requirements/requirements.txt \
 && /opt/venv/bin/python -m pip install --quiet --no-deps \
      -r /tmp/requirements/requirements-adult-nodeps.txt \
 && find /opt/venv -name '__pycache__' -prune -exec rm -rf {} +

# --- runtime: the virtualenv, the code, the static files; a user without privileges ----------
FROM ${BASE} AS runtime
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    DEBUG=0 MEDIA_ROOT=/app/media VAR_DIR=/app/var STATIC_ROOT=/app/staticfiles
RUN groupadd --gid 10001 fairmetric \
 && useradd --uid 10001 --gid fairmetric --no-create-home --home-dir /app --shell /usr/sbin/nologin fairmetric
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY --chown=root:root . /app
# Static files collected as production serves them (whitenoise's compressed manifest), with a
# throwaway key: the real SECRET_KEY comes from the environment at run time.
RUN SECRET_KEY="collectstatic-only-$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    python3 manage.py collectstatic --noinput --verbosity 0 \
 && rm -f /app/docker/build-ca/*.crt \
 && mkdir -p /app/media /app/var \
 && chown fairmetric:fairmetric /app/media /app/var \
 && chmod 0755 /app/docker/entrypoint.sh
USER fairmetric
EXPOSE 8000
# /healthz through the app's own port, as the TLS proxy would ask it (docker/healthcheck.py).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python3", "/app/docker/healthcheck.py"]
ENTRYPOINT ["/app/docker/entrypoint.sh"]
CMD ["web"]
