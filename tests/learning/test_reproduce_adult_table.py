"""reproduce_adult_table --quick end to end: a run's studies through the app, the live export
API with a token, the authors' two-stage SenSR, then the table beside the paper's.

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
from experiments.adult.protocol import Protocol, study_name
from experiments.adult.table import (
    COLUMNS,
    DOWNSTREAM_USER,
    PAPER,
    ROWS,
    format_table,
    validity_cell,
)
from learning.models import MetricVersion
from learning.versions.validity import validity_of
from tests.celery_support import require

HAVE_TORCH = all(importlib.util.find_spec(m) for m in ("torch", "inFairness"))


@pytest.mark.django_db(transaction=True)  # the in-process server reads from its own thread
def test_quick_run_downloads_through_the_api_and_prints_the_table(capsys, tmp_path):
    require(HAVE_TORCH, "PyTorch and inFairness are not installed (make extras)")
    out_json = tmp_path / "adult.json"
    rows = ",".join(ROWS)  # the paper's four, the control and "Project"
    call_command("reproduce_adult_table", "--quick", "--rows", rows, "--json", str(out_json))
    out = capsys.readouterr().out
    assert "Sigma downloaded through the export API" in out
    for label in ROWS.values():
        assert label in out
    figures = json.loads(out_json.read_text())
    assert figures["columns"] == COLUMNS
    assert figures["runs"] == 1
    assert figures["seeds"] == [0]
    assert figures["protocol"]["split"] == "random"  # the authors' protocol is the default
    assert figures["protocol"]["sigma"] == "unprojected"
    assert figures["schedules"]["explore"]["subspace_lr"] == 10.0
    for key in ROWS:
        row = np.array(figures["rows"][key])[0]
        assert 40 < row[0] <= 100  # B-Acc, %
        assert ((row[1:] >= 0) & (row[1:] <= 1)).all()
    # each run's Sigma is the unprojected EXPLORE fit its own study published, with its
    # validity as the API gave it (an informative verdict, or the reason it was published)
    assert figures["validity"]["baseline"] == figures["validity"]["sensr"] == []
    assert figures["validity"]["project"] == []
    (control,) = figures["validity"]["explore-authors"]  # the authors' estimator, scored itself
    assert control["figures"]["basis"] == "held-out pairs (one 80/20 split)"
    assert control["verdict"] in ("informative", "not informative", "cannot tell yet")
    for gender, key in ((True, "explore"), (False, "explore-no-gender")):
        name = study_name(Protocol(quick=True), 0, gender)
        version = MetricVersion.objects.get(study__name=name, is_published=True)
        assert version.label == "explore"
        assert version.parent_id is None
        (validity,) = figures["validity"][key]
        assert validity == json.loads(json.dumps(validity_of(version)))
        assert validity["verdict"] == "informative" or validity["override"]["reason"]
    assert "its Sigma: 1 " in out
    names = MetricVersion.objects.get(
        study__name=study_name(Protocol(quick=True), 0, False), is_published=True
    ).study.space.feature_map["feature_names"]
    assert not any(n.startswith("sex=") for n in names)  # without gender: not in φ
    # a downstream user's token did it, and it was revoked afterwards
    token = ApiToken.objects.get(user__username=DOWNSTREAM_USER)
    assert token.revoked_at is not None
    assert token.last_used_at is not None
    exported = AuditEvent.objects.filter(
        actor__username=DOWNSTREAM_USER, action=AuditEvent.Action.EXPORT_SIGMA
    )
    assert exported.count() == 2  # with and without gender


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


def test_the_table_puts_the_papers_figures_under_each_row():
    rows = {"baseline": np.tile(np.arange(7.0), (3, 1)), "explore": np.ones((1, 7))}
    rows["baseline"][:, 0] = [80.0, 82.0, 84.0]
    text = format_table(rows).splitlines()
    assert text[1].startswith("Baseline")
    assert "82.0 ± 2.0" in text[1]
    assert "1.000 ± 0.000" in text[1]
    assert text[2].strip().startswith("the paper")
    assert "82.9" in text[2]
    assert text[3].startswith(ROWS["explore"])
    assert "±" not in text[3]
    assert "0.065" in text[4]  # the paper's Gap_G RMS of SenSR + EXPLORE
    assert PAPER["explore-no-gender"][2] == 0.993


def _validity(verdict, gain, interval, auc, override=None) -> dict:
    figures = {"basis": "held-out pairs", "gain": gain, "gain_interval": interval, "auc": auc}
    return {"verdict": verdict, "figures": figures, "needs": "", "override": override}


def test_each_row_says_how_its_sigma_was_judged():
    one = [_validity("not informative", -0.055, [-0.065, -0.045], 0.493, {"reason": "paper"})]
    assert validity_cell("explore", one) == (
        "its Sigma: 1 not informative on held-out pairs; gain over the constant -0.055 per "
        "answer (95 % interval -0.065 to -0.045); held-out AUC 0.493; 1 published with a "
        "recorded reason"
    )
    runs = [_validity("informative", 0.02, [0.01, 0.03], 0.6), one[0]]
    assert validity_cell("explore-no-gender", runs).startswith(
        "its Sigma: 1 informative, 1 not informative on held-out pairs; gain over the constant "
        "-0.018 (runs -0.055 to +0.020) per answer; held-out AUC 0.546 (runs 0.493 to 0.600)"
    )
    assert validity_cell("baseline", []) == "no metric"
    assert "not learned" in validity_cell("sensr", [])
    text = format_table({"explore": np.ones((1, 7))}, {"explore": one}).splitlines()
    assert text[2].strip().startswith("its Sigma: 1 not informative")
    assert text[3].strip().startswith("the paper")


@pytest.mark.django_db
def test_a_bad_choice_is_one_readable_line():
    with pytest.raises(CommandError, match="rows must be among"):
        call_command("reproduce_adult_table", "--rows", "baseline,nonsense", "--quick")
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("reproduce_adult_table", "--split", "halves", "--quick")
