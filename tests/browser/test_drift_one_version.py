"""The drift page of a young study — one FACE and one EXPLORE version — says that drift needs
two versions instead of an empty frame, and a chart only EXPLORE has values for (the held-out
log-likelihood) has no x-tick for the FACE version."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Membership
from tests.annotation.factories import PASSWORD, make_metric_version, make_space, make_study
from tests.browser.conftest import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_young_studys_drift_page_draws_no_empty_frame(browser, live_server, media_root):
    space = make_space(name="young", dimension=4)
    study = make_study(space=space, name="Young study")
    reviewer = get_user_model().objects.create_user("rev", password=PASSWORD)
    Membership.objects.create(user=reviewer, study=study, role=Membership.Role.REVIEWER)
    face = make_metric_version(study=study, method="face", sigma=np.eye(4), label="face-2")
    explore = make_metric_version(
        study=study,
        method="explore",
        sigma=np.eye(4) * 0.5,
        label="explore",
        diagnostics={"heldout_loglik": -0.61},
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", "rev")
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        page.goto(live_server.url + reverse("learning:study-drift", args=[study.pk]))
        wait_until(page, "document.getElementById('chart-loglik').layout !== undefined")
        norm = page.evaluate(
            "(() => { const c = document.getElementById('chart-norm');"
            " return [c.data.length, (c.layout.annotations || []).map((a) => a.text)]; })()"
        )
        assert norm == [0, ["needs two versions of a method"]]
        ticks = page.evaluate("document.getElementById('chart-loglik').layout.xaxis.categoryarray")
        assert ticks == [f"#{explore.pk}"], (ticks, face.pk)
    finally:
        context.close()
