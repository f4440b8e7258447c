"""reproduce_adult_table --quick end to end: the live export API with a token, then the table.

Needs PyTorch and inFairness (make extras): skipped locally without them, required
under CI=true.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import ApiToken
from audit.models import AuditEvent
from experiments.adult.table import COLUMNS, DOWNSTREAM_USER, OURS, PAPER, format_table
from tests.celery_support import require

HAVE_TORCH = all(importlib.util.find_spec(m) for m in ("torch", "inFairness"))


@pytest.mark.django_db(transaction=True)  # the in-process server reads from its own thread
def test_quick_run_downloads_through_the_api_and_prints_the_table(capsys, tmp_path):
    require(HAVE_TORCH, "PyTorch and inFairness are not installed (make extras)")
    out_json = tmp_path / "adult.json"
    call_command("reproduce_adult_table", "--quick", "--json", str(out_json))
    out = capsys.readouterr().out
    assert "through the export API" in out
    for label in [*OURS.values(), *PAPER]:
        assert label in out
    figures = json.loads(out_json.read_text())
    assert figures["columns"] == COLUMNS
    assert figures["restarts"] == 1
    base = np.array(figures["rows"]["Baseline"])[0]
    fair = np.array(figures["rows"][OURS["sensr"]])[0]
    for row in (base, fair):
        assert 50 < row[0] <= 100  # B-Acc, %
        assert ((row[1:] >= 0) & (row[1:] <= 1)).all()
    # the done-when, measured: SenSR with the app's Sigma is more consistent
    assert fair[1] > base[1]  # S-Con
    assert fair[2] > base[2]  # GR-Con
    # a downstream user's token did it, and it was revoked afterwards
    token = ApiToken.objects.get(user__username=DOWNSTREAM_USER)
    assert token.revoked_at is not None
    assert token.last_used_at is not None
    exported = AuditEvent.objects.filter(
        actor__username=DOWNSTREAM_USER, action=AuditEvent.Action.EXPORT_SIGMA
    )
    assert exported.count() == 1


@pytest.mark.django_db
def test_url_needs_token_and_study():
    with pytest.raises(CommandError, match="--url needs --token and --study"):
        call_command("reproduce_adult_table", "--url", "http://127.0.0.1:9", "--quick")


@pytest.mark.django_db
def test_an_unreachable_server_is_one_readable_line():
    require(HAVE_TORCH, "PyTorch and inFairness are not installed (make extras)")
    with pytest.raises(CommandError, match=r"GET http://127\.0\.0\.1:9/api/studies/1/"):
        call_command(
            "reproduce_adult_table",
            "--url",
            "http://127.0.0.1:9",
            "--token",
            "fm_x",
            "--study",
            "1",
        )


def test_the_table_puts_our_rows_above_the_papers():
    rows = {"baseline": np.tile(np.arange(7.0), (3, 1)), "sensr": np.ones((1, 7))}
    rows["baseline"][:, 0] = [80.0, 82.0, 84.0]
    text = format_table(rows).splitlines()
    assert text[1].startswith("Baseline")
    assert "82.0 ± 2.0" in text[1]
    assert "1.000 ± 0.000" in text[1]
    assert text[2].startswith(OURS["sensr"])
    assert "±" not in text[2]
    assert text[-1].startswith("Baseline")
    assert "82.9" in text[-1]
