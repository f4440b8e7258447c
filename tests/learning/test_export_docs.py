"""docs/export.md's Python example, run for real against a live server with a real token."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accounts.tokens import api_token_create
from learning.versions.sigmas import sigma_of

DOC = Path(__file__).resolve().parents[2] / "docs" / "export.md"


def example_code() -> str:
    text = DOC.read_text()
    found = re.search(
        r"<!-- example:python -->\s*```python\n(.*?)```\s*<!-- /example:python -->", text, re.S
    )
    assert found, "docs/export.md lost its marked Python example"
    return found.group(1)


@pytest.mark.django_db(transaction=True)
def test_documented_python_example_downloads_and_uses_the_published_sigma(
    live_server, study, users, versions, tmp_path
):
    _, key = api_token_create(user=users["reviewer"], name="docs example")
    published = versions[0]
    script = tmp_path / "example.py"
    script.write_text(example_code())
    env = {
        "FAIRMETRIC_URL": live_server.url,
        "FAIRMETRIC_TOKEN": key,
        "FAIRMETRIC_STUDY": str(study.pk),
        "FAIRMETRIC_METHOD": "face",
        "PATH": "/usr/bin",
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["version"] == published.pk
    assert result["sha256"] == published.sigma_sha256
    assert result["poll_status"] == 304
    sigma = sigma_of(published)
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(size=(2, 4, sigma.shape[0]))
    expected = [float((a - b) @ sigma @ (a - b)) for a, b in zip(x1, x2, strict=True)]
    np.testing.assert_allclose(result["distances"], expected, rtol=1e-12)
