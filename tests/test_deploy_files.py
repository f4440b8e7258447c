"""The container files without a Docker engine (``make compose-smoke`` runs them with one):
.env.example names every setting the code, the entrypoint and compose.yaml read; every role
compose.yaml starts is one the entrypoint knows; the entrypoint's database wait and its migrate
role work on a real (SQLite) database; the image's health check tells a live server from none."""

from __future__ import annotations

import ast
import contextlib
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
APPS = ("fairmetric_site", "accounts", "annotation", "learning", "spaces", "audit", "common",
        "experiments", "docker")  # fmt: skip
ENV_READERS = {"env_str", "env_int", "env_bool", "env_list", "env_path", "env_url"}
SHELL_SETTING = re.compile(r"\$\{([A-Z][A-Z0-9_]*):?[-?=]")


def _is_environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def python_settings(path: Path) -> set[str]:
    """The environment variables a module reads: the settings' typed readers, os.environ.get,
    os.getenv and os.environ[...] (a write or setdefault is the code's own, not a setting)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func, first = node.func, node.args[0].value
            reader = (
                (isinstance(func, ast.Name) and func.id in ENV_READERS)
                or (isinstance(func, ast.Attribute) and func.attr == "getenv")
                or (
                    isinstance(func, ast.Attribute)
                    and func.attr == "get"
                    and _is_environ(func.value)
                )
            )
            if reader and isinstance(first, str):
                names.add(first)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _is_environ(node.value)
            and isinstance(node.slice, ast.Constant)
        ):
            names.add(node.slice.value)
    return names


def code_settings(roots: list[Path]) -> dict[str, set[str]]:
    """Every setting read under ``roots`` (Python modules, shell scripts, compose files):
    name -> the files that read it. Tests and migrations are not the app's settings."""
    found: dict[str, set[str]] = {}
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in files:
            if "migrations" in path.parts or "__pycache__" in path.parts or not path.is_file():
                continue
            if path.suffix == ".py":
                names = python_settings(path)
            elif path.suffix in (".sh", ".yaml", ".yml") or path.name.endswith("Dockerfile"):
                names = set(SHELL_SETTING.findall(path.read_text()))
            else:
                continue
            where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
            for name in names:
                found.setdefault(name, set()).add(where)
    return found


def documented(example: Path) -> set[str]:
    """The names .env.example gives, set (``NAME=…``) or commented out with a default."""
    return set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]*)=", example.read_text(), re.MULTILINE))


def deploy_roots() -> list[Path]:
    return [ROOT / app for app in APPS] + [ROOT / "compose.yaml", ROOT / "Dockerfile"]


def test_env_example_names_every_setting_the_code_reads():
    found = code_settings(deploy_roots())
    # the collector sees each kind of reader: typed (settings), os.environ.get, the entrypoint's
    # ${NAME:-default}, compose.yaml's substitutions
    known = {"SECRET_KEY", "OIDC_RP_CLIENT_ID", "DEMO_PASSWORD", "WEB_BIND", "BASE_IMAGE"}
    assert known <= set(found)
    missing = sorted(set(found) - documented(ROOT / ".env.example"))
    assert not missing, "add to .env.example: " + ", ".join(
        f"{name} (read in {', '.join(sorted(found[name]))})" for name in missing
    )


def test_a_new_setting_without_a_line_in_env_example_is_reported(tmp_path):
    app = tmp_path / "newapp"
    app.mkdir()
    (app / "settings_new.py").write_text(
        "import os\nfrom fairmetric_site.env import env_int\n"
        "NEW_LIMIT = env_int('FAIRMETRIC_NEW_LIMIT', 3)\n"
        "TOKEN = os.environ['FAIRMETRIC_NEW_TOKEN']\nos.environ['WRITTEN_NOT_READ'] = '1'\n"
    )
    (app / "run.sh").write_text('exec serve --port "${FAIRMETRIC_NEW_PORT:-9}" "$LOCAL"\n')
    found = code_settings([*deploy_roots(), app])
    missing = set(found) - documented(ROOT / ".env.example")
    assert missing == {"FAIRMETRIC_NEW_LIMIT", "FAIRMETRIC_NEW_TOKEN", "FAIRMETRIC_NEW_PORT"}


def entrypoint_roles() -> set[str]:
    text = (ROOT / "docker" / "entrypoint.sh").read_text()
    case = text[text.index('case "$role" in') : text.index("esac")]
    return set(re.findall(r"^\s{2}([a-z][a-z-]*)\)", case, re.MULTILINE))


def test_every_role_compose_starts_is_one_the_entrypoint_dispatches():
    subprocess.run(["bash", "-n", str(ROOT / "docker" / "entrypoint.sh")], check=True)
    subprocess.run(["bash", "-n", str(ROOT / "docker" / "postgres-entrypoint.sh")], check=True)
    roles = entrypoint_roles()
    assert {"web", "worker-refits", "worker-dashboards", "worker-audits", "migrate"} <= roles
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    app_services = {name: s for name, s in services.items() if "command" in s}
    started = {s["command"][0] for s in app_services.values()}
    assert started == {"web", "worker-refits", "worker-dashboards", "worker-audits", "migrate"}
    assert started <= roles
    # the workers and web wait for the migrate role; the database and media live in volumes
    for name, service in app_services.items():
        if name != "migrate":
            assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert "media:/app/media" in service["volumes"]
    assert "pgdata:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    assert {"pgdata", "media", "redisdata"} <= set(compose["volumes"])
    cmd = re.search(r'^CMD \["([a-z-]+)"\]', (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    assert cmd
    assert cmd.group(1) in roles


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env |= {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "VAR_DIR": str(tmp_path / "var"),
        "MEDIA_ROOT": str(tmp_path / "media"),
        "DJANGO_SETTINGS_MODULE": "fairmetric_site.settings",
    }
    return env


@pytest.mark.slow
def test_wait_db_holds_the_roles_until_the_migrate_role_has_run(tmp_path):
    env = _env(tmp_path)
    wait = [sys.executable, "docker/wait_db.py", "--timeout", "1", "--interval", "0.2"]
    wait.append("--migrated")
    before = subprocess.run(wait, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert before.returncode == 1
    assert "migration(s) not applied yet" in before.stderr
    assert "gave up after 1 s" in before.stderr
    migrate = subprocess.run(
        ["bash", "docker/entrypoint.sh", "migrate", "-v", "0"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    after = subprocess.run(wait, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert after.returncode == 0, after.stderr


def test_wait_db_gives_up_on_a_database_that_does_not_answer(tmp_path):
    env = _env(tmp_path) | {"DATABASE_URL": "postgres://nobody@127.0.0.1:9/none"}
    wait = [sys.executable, "docker/wait_db.py", "--timeout", "0.5", "--interval", "0.1"]
    done = subprocess.run(wait, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "database: OperationalError" in done.stderr


@pytest.mark.django_db
def test_the_health_check_tells_a_live_server_from_none(live_server, tmp_path):
    check = [sys.executable, str(ROOT / "docker" / "healthcheck.py")]
    bind = live_server.url.removeprefix("http://")
    # the server's first request loads the URLs and views: not within the check's 4 s on a
    # loaded machine
    warm = urllib.request.Request(f"{live_server.url}/healthz", headers={"Host": "localhost"})
    with contextlib.suppress(urllib.error.HTTPError):
        urllib.request.urlopen(warm, timeout=120).close()
    env = {**os.environ, "WEB_BIND": bind, "ALLOWED_HOSTS": "localhost"}
    done = subprocess.run(check, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    env["WEB_BIND"] = "127.0.0.1:9"  # nothing listens there
    done = subprocess.run(check, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "healthz:" in done.stderr
