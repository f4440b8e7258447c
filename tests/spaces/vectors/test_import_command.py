"""The import_embeddings command: a summary and progress bars, and bad input as one
CommandError line (non-zero exit, no traceback)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from spaces.models import EmbeddingSpace
from tests.conftest import ROOT, subprocess_env

from .embedding_files import stored_nothing, text_lines, write


def test_command_prints_a_summary_and_progress(db, media, tmp_path, capsys):
    path = write(tmp_path / "vectors.txt", ["5 4", *text_lines()])
    call_command("import_embeddings", str(path), "--name", "cmd", "--tag", "t1")
    out, err = capsys.readouterr()
    assert "Imported space 'cmd'" in out
    assert "5 items x 4 dimensions" in out
    assert "reading" in err
    assert "storing" in err
    assert EmbeddingSpace.objects.get(name="cmd").items.filter(tags__name="t1").count() == 5


def test_command_turns_bad_input_into_one_command_error(db, media, tmp_path):
    path = write(tmp_path / "bad.txt", ["the 1 2", "of 1 2", "the 3 4"])
    with pytest.raises(CommandError) as info:
        call_command("import_embeddings", str(path), "--name", "x", "--no-progress")
    message = str(info.value)
    assert "\n" not in message
    assert "line 3: duplicate key 'the', first seen at line 1" in message
    assert "nothing was stored" in message
    assert stored_nothing(media)


def test_command_exits_non_zero_with_one_readable_line(tmp_path):
    path = write(tmp_path / "bad.txt", ["the 1 2", "of nan 2"])
    env = subprocess_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", MEDIA_ROOT=str(tmp_path / "media")
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    proc = subprocess.run(
        [sys.executable, "manage.py", "import_embeddings", str(path), "--name", "x"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("CommandError: ")
    assert "line 2: a value is not finite" in last
    assert "Traceback" not in proc.stderr
