"""The compose stack of the smoke run: images, settings, start, restart, backup and restore."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "fmsmoke"
WORK = ROOT / "var" / "compose-smoke"
BASE_IMAGE = os.environ.get("BASE_IMAGE", "fairmetric-base:local")
APP_IMAGE = os.environ.get("FAIRMETRIC_IMAGE", "fairmetric:local")
HOST_CA = Path("/usr/local/share/ca-certificates")
WORKERS = ("worker-refits", "worker-dashboards", "worker-audits")


def engine_ready() -> bool:
    if not shutil.which("docker"):
        return False
    done = subprocess.run(["docker", "info"], capture_output=True, timeout=60)
    return done.returncode == 0


def compose_command() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
    if probe.returncode == 0:
        return ["docker", "compose"]
    raise SystemExit("compose-smoke: neither docker-compose nor `docker compose` is installed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_block(size: int = 4) -> int:
    """A port p with p..p+size-1 and their gRPC ports (+10000) free (the s3 profile's SeaweedFS)."""
    for _ in range(200):
        first = secrets.randbelow(20000) + 20000
        ports = [first + i for i in range(size)] + [first + 10000 + i for i in range(size)]
        try:
            with contextlib.ExitStack() as stack:
                for port in ports:
                    sock = stack.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
    raise RuntimeError("no free block of ports for the S3 store")


def run(*argv: str, quiet: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """Run a command from the repository root; its output is shown unless ``quiet`` (then shown
    only when it fails). Raises on failure."""
    env = {**os.environ, "DOCKER_BUILDKIT": "0", "COMPOSE_DOCKER_CLI_BUILD": "0"}
    if quiet:
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, **kwargs)
        if done.returncode != 0:
            print(done.stdout[-4000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
            raise RuntimeError(f"failed ({done.returncode}): {' '.join(argv)}")
        return done
    done = subprocess.run(argv, cwd=ROOT, env=env, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"failed ({done.returncode}): {' '.join(argv)}")
    return done


class Stack:
    def __init__(self, *, timeout: float, s3: bool = False):
        self.timeout = timeout
        self.s3 = s3  # the media on the s3 profile's store (FAIRMETRIC_STORAGE=s3)
        self.steps: list[tuple[str, float]] = []
        self.compose_argv = compose_command()
        WORK.mkdir(parents=True, exist_ok=True)
        self.env_file = WORK / "smoke.env"
        self.ports = {"web": free_port(), "postgres": free_port(), "redis": free_port()}
        if s3:
            self.ports["s3"] = free_block()
        self.base_url = f"http://127.0.0.1:{self.ports['web']}"
        self.write_env()

    # --- timing ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def step(self, name: str):
        print(f"\n== {name}", flush=True)
        started = time.monotonic()
        try:
            yield
        finally:
            seconds = time.monotonic() - started
            self.steps.append((name, seconds))
            print(f"   {seconds:.1f} s", flush=True)

    def report(self, total: float) -> None:
        print("\ncompose-smoke: step times")
        for name, seconds in self.steps:
            print(f"  {seconds:7.1f} s  {name}")
        print(f"  {total:7.1f} s  in all ({total / 60:.1f} min)")

    # --- settings and images -----------------------------------------------------------------
    def write_env(self) -> None:
        password = secrets.token_hex(16)
        pg, redis, web = self.ports["postgres"], self.ports["redis"], self.ports["web"]
        lines = {
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "POSTGRES_USER": "fairmetric",
            "POSTGRES_PASSWORD": password,
            "POSTGRES_DB": "fairmetric",
            "POSTGRES_PORT": str(pg),
            "DATABASE_URL": f"postgres://fairmetric:{password}@127.0.0.1:{pg}/fairmetric",
            "REDIS_PORT": str(redis),
            "REDIS_URL": f"redis://127.0.0.1:{redis}/0",
            "WEB_BIND": f"127.0.0.1:{web}",
            "FAIRMETRIC_IMAGE": APP_IMAGE,
            "BASE_IMAGE": BASE_IMAGE,
            "FAIRMETRIC_ENV_FILE": str(self.env_file),
        }
        if self.s3:
            lines |= {
                "FAIRMETRIC_STORAGE": "s3",
                "AWS_STORAGE_BUCKET_NAME": "fmsmoke-media",
                "AWS_S3_ENDPOINT_URL": f"http://127.0.0.1:{self.ports['s3']}",
                "AWS_ACCESS_KEY_ID": "fmsmoke",
                "AWS_SECRET_ACCESS_KEY": secrets.token_hex(20),
                "S3_PORT": str(self.ports["s3"]),
            }
        self.lines = lines
        self.env_file.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        self.env_file.chmod(0o600)

    def build(self) -> None:
        if BASE_IMAGE == "fairmetric-base:local":
            run("bash", "scripts/docker_base.sh")
        ca_folder = ROOT / "docker" / "build-ca"
        for cert in sorted(HOST_CA.glob("*.crt")) if HOST_CA.is_dir() else []:
            shutil.copyfile(cert, ca_folder / cert.name)
        common = ("docker", "build", "--network", "host", "--build-arg", f"BASE={BASE_IMAGE}")
        run(*common, "-t", APP_IMAGE, ".", quiet=True)
        tags = [APP_IMAGE]
        for target in ("postgres", "redis", *(("s3",) if self.s3 else ())):
            tag = f"fairmetric-{target}:local"
            tags.append(tag)
            run(*common, "-f", "docker/services.Dockerfile", "--target", target, "-t", tag,
                "docker", quiet=True)  # fmt: skip
        print(f"   built {', '.join(tags)}")

    # --- compose -----------------------------------------------------------------------------
    def compose(self, *args: str, quiet: bool = False, **kwargs) -> subprocess.CompletedProcess:
        argv = [*self.compose_argv, "-p", PROJECT, "-f", str(ROOT / "compose.yaml")]
        argv += ["--profile", "s3"] if self.s3 else []
        argv += ["--env-file", str(self.env_file), *args]
        return run(*argv, quiet=quiet, **kwargs)

    def manage_json(self, code: str):
        """Run Python in the web container with Django set up; its last output line, as JSON."""
        done = self.compose(
            "exec", "-T", "web", "python3", "manage.py", "shell", "-c", code, quiet=True
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    def wait_healthy(self) -> dict:
        deadline = time.monotonic() + self.timeout
        last = None
        while time.monotonic() < deadline:
            request = urllib.request.Request(
                f"{self.base_url}/healthz", headers={"X-Forwarded-Proto": "https"}
            )
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    body = json.loads(response.read())
                    if body.get("status") == "ok":
                        return body
                    last = body
            except (OSError, urllib.error.URLError, ValueError) as exc:
                last = exc
            time.sleep(1)
        raise RuntimeError(f"/healthz did not say ok within {self.timeout:g} s: {last}")

    def up(self) -> None:
        self.compose("up", "-d", "--no-build", quiet=True)
        health = self.wait_healthy()
        print(f"   /healthz: {health}")

    def fresh_start(self) -> None:
        self.compose("down", "-v", "--remove-orphans", quiet=True)
        self.up()
        for worker in WORKERS:  # compose.yaml's health checks: each answers a ping
            self.wait_service_healthy(worker)
        print(f"   {', '.join(WORKERS)}: healthy")

    def restart(self) -> None:
        """docs/deploy.md's upgrade: stop, apply the migrations (the migrate role), start."""
        self.compose("down", quiet=True)
        self.compose("run", "--rm", "migrate", quiet=True)
        self.up()

    def show_logs(self) -> None:
        with contextlib.suppress(Exception):
            self.compose("logs", "--tail", "40")

    def remove(self) -> None:
        self.compose("down", "-v", "--remove-orphans", quiet=True)

    def check_s3(self) -> None:
        """With the s3 profile: every media file in the bucket, none under MEDIA_ROOT."""
        import boto3  # django-storages' dependency, in the virtualenv once storage is installed

        local = self.compose("exec", "-T", "web", "find", "/app/media", "-type", "f", quiet=True)
        files = local.stdout.split()
        if files:
            raise RuntimeError(f"{len(files)} files under MEDIA_ROOT, e.g. {files[:3]}")
        client = boto3.client(
            "s3",
            endpoint_url=self.lines["AWS_S3_ENDPOINT_URL"],
            aws_access_key_id=self.lines["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.lines["AWS_SECRET_ACCESS_KEY"],
            region_name="us-east-1",
        )
        pages = client.get_paginator("list_objects_v2").paginate(Bucket="fmsmoke-media")
        keys = [entry["Key"] for page in pages for entry in page.get("Contents", [])]
        if not any(key.startswith("sigmas/") for key in keys):
            raise RuntimeError(f"no Sigma in the bucket: {keys[:10]}")
        print(
            f"   {len(keys)} files in the bucket (e.g. {sorted(keys)[:3]}), none under MEDIA_ROOT"
        )

    # --- backup and restore (docs/deploy.md) ---------------------------------------------------
    def backup(self) -> Path:
        folder = WORK / "backup"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        with (folder / "fairmetric.dump").open("wb") as dump:
            self.compose(
                "exec", "-T", "postgres", "pg_dump", "-U", "fairmetric", "-Fc", "fairmetric",
                stdout=dump,
            )  # fmt: skip
        run("docker", "run", "--rm", "--network", "none", "--user", "0", "-v", f"{PROJECT}_media:/media:ro",
            "-v", f"{folder}:/backup", APP_IMAGE, "tar", "-C", "/media", "-czf",
            "/backup/media.tar.gz", ".", quiet=True)  # fmt: skip
        sizes = {p.name: p.stat().st_size for p in folder.iterdir()}
        print(f"   {folder}: {sizes}")
        return folder

    def restore(self, folder: Path) -> None:
        self.compose("down", "-v", quiet=True)  # the volumes are gone: only the backup is left
        self.compose("up", "-d", "--no-build", "postgres", "redis", quiet=True)
        self.wait_service_healthy("postgres")
        with (folder / "fairmetric.dump").open("rb") as dump:
            self.compose(
                "exec", "-T", "postgres", "pg_restore", "-U", "fairmetric", "-d", "fairmetric",
                "--no-owner", "--exit-on-error", stdin=dump,
            )  # fmt: skip
        self.compose("run", "--rm", "--no-deps", "-v", f"{folder}:/backup:ro", "--entrypoint",
                     "tar", "web", "-C", "/app/media", "-xzf", "/backup/media.tar.gz",
                     quiet=True)  # fmt: skip
        self.up()

    def wait_service_healthy(self, service: str) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            done = self.compose("ps", "-q", service, quiet=True)
            container = done.stdout.strip()
            if container:
                state = run("docker", "inspect", "-f", "{{.State.Health.Status}}", container,
                            quiet=True).stdout.strip()  # fmt: skip
                if state == "healthy":
                    return
            time.sleep(1)
        raise RuntimeError(f"{service} not healthy within {self.timeout:g} s")
