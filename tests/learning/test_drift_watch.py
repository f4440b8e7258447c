"""The drift flag's watch (learning/versions/drift.py: ``watching``, ``watch_check``): a
flagging check on control pairs more than ``WATCH_Z`` standard errors short of its promise
keeps the sampler on control pairs until the next check, and the drift page says so."""

from __future__ import annotations

import numpy as np
from django.urls import reverse

from learning.versions.drift import WATCH_Z, watch_check


def _drift(z, *, flagged=False):
    check = {"z": z, "sample": "control", "level": 0.0014, "flagged": flagged}
    return {"drift": {"window": {"version": 1, "check": check}, "spent_at": 700}}


def test_the_drift_page_says_when_the_flag_is_watching(client, users, study, make_version):
    client.force_login(users["admin"])
    url = reverse("learning:study-drift", args=[study.pk])
    sigma = np.eye(study.space.dimension)
    calm = make_version(study, sigma, method="explore", watermark=1, diagnostics=_drift(-0.4))
    assert watch_check(study_id=study.pk) is None
    assert "is watching" not in client.get(url).content.decode()

    short = make_version(
        study, sigma, method="explore", watermark=2, diagnostics=_drift(-WATCH_Z - 0.5)
    )
    found = watch_check(study_id=study.pk)
    assert found["made_by"] == short.pk != calm.pk
    page = client.get(url).content.decode()
    assert f"The drift flag is watching: the check of #{short.pk}" in page
    assert f"{WATCH_Z + 0.5:.1f} standard errors short of their promise (not a flag)" in page
    assert "only control pairs" in page

    # a flagged check keeps the watch; the page does not call it "not a flag"
    make_version(
        study, sigma, method="explore", watermark=3, diagnostics=_drift(-3.5, flagged=True)
    )
    page = client.get(url).content.decode()
    assert "3.5 standard errors short of their promise." in page
