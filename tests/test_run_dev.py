"""``make run`` (scripts/run_dev.sh): the URL and the logins come after the workers' banners, and
Ctrl-C (SIGTERM to the process group, as a terminal sends SIGINT to it) leaves no process behind
within 10 s — an idle Celery worker used to stay in "Warm shutdown" for over 90 s. The script
runs as it does for a developer (the web server, three workers), on a SQLite file, the filesystem
broker and media of its own under ``tmp_path``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
READY = "Press Ctrl-C to stop."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
def test_make_run_prints_its_url_last_and_stops_every_process_within_10_s(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL")}
    env |= {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "VAR_DIR": str(tmp_path / "var"),
        "MEDIA_ROOT": str(tmp_path / "media"),
        "CELERY_RESULT_BACKEND": (tmp_path / "results").as_uri(),
        "PORT": str(_free_port()),
        "DJANGO_SETTINGS_MODULE": "fairmetric_site.settings",
    }
    migrate = [sys.executable, "manage.py", "migrate", "-v", "0"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True, timeout=300)
    out = tmp_path / "run.out"
    with open(out, "wb") as sink:
        run = subprocess.Popen(
            ["bash", "scripts/run_dev.sh"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as a terminal's job
        )
    try:
        deadline = time.monotonic() + 180
        while READY not in out.read_text(errors="replace"):
            assert run.poll() is None, out.read_text(errors="replace")
            assert time.monotonic() < deadline, out.read_text(errors="replace")
            time.sleep(0.5)
        text = out.read_text(errors="replace")
        assert text.count(" ready.") == 3  # the three workers' banners, then the message
        # After every worker's banner ("ready."); a worker's later log line (its first sweep's
        # task, at any time) may follow the message, which is not what scrolled it away.
        assert text.rindex(" ready.") < text.index(READY), text[-2000:]
        assert f"http://127.0.0.1:{env['PORT']}/" in text
        assert len(_group(run.pid)) >= 5  # the script, the server, three workers (+ pools, tees)
        os.killpg(run.pid, signal.SIGTERM)
        stopped = time.monotonic()
        while _group(run.pid) and time.monotonic() - stopped < 10:
            time.sleep(0.2)
        left = _group(run.pid)
        assert not left, f"still running 10 s after SIGTERM: {left}\n{out.read_text()[-2000:]}"
    finally:
        for pid in _group(run.pid):
            os.kill(pid, signal.SIGKILL)
        run.wait(timeout=10)
