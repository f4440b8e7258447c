"""The audit pages this issue changed, in real Chromium: an admin declares ``sex`` sensitive and
downloads the twins; an audit with twins leads with them; two audits overlaid on one L curve on
the comparison page; the field filter on the page. (Audits run by the worker's service in this
process: the worker's own path is tests/browser/test_audit_loop.py.)"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from django.urls import reverse

from annotation.models import Membership
from learning.audits import run, services
from learning.audits import twins as twin_room
from spaces.records.create import record_space_create
from tests.annotation.factories import make_metric_version, make_study, make_user
from tests.learning.audits.conftest import csv_upload, twin_scores, twins_frame

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def curves_world(transactional_db, media_root):
    frame = twins_frame()
    space = record_space_create(
        name="twins",
        frame=frame,
        numeric=["age"],
        categorical=["job", "sex"],
        label_column="income",
        key_column="id",
    )
    study = make_study(space=space, name="Twins")
    names = space.feature_map["feature_names"]
    sigma = np.diag([0.0 if n.startswith("sex=") else 1.0 for n in names])
    make_metric_version(
        study=study, method="explore", sigma=sigma, label="sex-out", is_published=True
    )
    admin = make_user("boss", study=study, role=Membership.Role.ADMIN)
    return {"study": study, "frame": frame, "admin": admin}


def audited(world, table: pd.DataFrame, name: str):
    audit = services.audit_create(
        user=world["admin"], study=world["study"], upload=csv_upload(table), k=3, name=name
    )
    assert run.audit_run(audit_id=audit.pk) == "done"
    return audit


def test_twins_lead_two_audits_share_one_curve_and_the_filter_works(
    curves_world, logged_in_page, live_server, screenshot
):
    study = curves_world["study"]
    page = logged_in_page(curves_world["admin"])
    page.goto(live_server.url + reverse("learning:audits", args=[study.pk]))
    page.check("#sensitive-form input[value=sex]")
    page.click("#sensitive-form button[type=submit]")
    page.wait_for_selector("#twins-download")
    assert twin_room.sensitive_columns(study) == ["sex"]
    href = page.get_attribute("#twins-download", "href")
    body = page.request.get(live_server.url + href).text()
    twins_table = pd.read_csv(io.StringIO(body), dtype=str)
    assert len(twins_table) == len(curves_world["frame"])

    originals = curves_world["frame"].drop(columns=["income"]).rename(columns={"id": "key"})
    table = pd.concat([originals, twins_table], ignore_index=True)
    table["id"] = table["key"]
    table["age"] = table["age"].astype(int)
    with_sex = audited(curves_world, twin_scores(table, sex=True), "with sex")
    without = audited(curves_world, twin_scores(table, sex=False), "without sex")

    page.goto(live_server.url + reverse("learning:audit-detail", args=[study.pk, with_sex.pk]))
    twins_row = page.inner_text("#audit-twins tr[data-column=sex]")
    assert "100.0 %" in twins_row
    page.wait_for_selector("#chart-curves[data-traces='3'] .scatterlayer .trace")
    order = page.evaluate(
        "() => ['audit-twins', 'audit-summary', 'audit-curves']"
        ".map((id) => document.getElementById(id).getBoundingClientRect().top)"
    )
    assert order == sorted(order)  # the twins lead, then the neighbour figures, the curve
    assert "all pairs within ε" in page.inner_text("#audit-summary")
    screenshot(page, "audit-twins")

    plain = audited(curves_world, twin_scores(curves_world["frame"], sex=True), "no twins")
    page.goto(live_server.url + reverse("learning:audit-detail", args=[study.pk, plain.pk]))
    page.wait_for_selector("#chart-curves .scatterlayer .trace")
    order = page.evaluate(
        "() => ['audit-curves', 'audit-summary']"
        ".map((id) => document.getElementById(id).getBoundingClientRect().top)"
    )
    assert order == sorted(order)  # without twins the curve leads
    assert page.locator("#audit-twins").count() == 0

    page.goto(
        live_server.url
        + reverse("learning:audit-compare", args=[study.pk])
        + f"?a={with_sex.pk}&b={without.pk}"
    )
    page.wait_for_selector("#chart-curves[data-traces='6'] .scatterlayer .trace")
    assert page.locator("#chart-curves .scatterlayer .trace").count() == 6
    legend = page.text_content("#chart-curves .legend")
    assert f"#{with_sex.pk} with sex" in legend
    assert f"#{without.pk} without sex" in legend
    screenshot(page, "audit-curves-compare")

    page.goto(
        live_server.url
        + reverse("learning:audit-detail", args=[study.pk, with_sex.pk])
        + "?field=job&value=clerk"
    )
    shown = page.locator("article.violation")
    assert shown.count() >= 1
    for i in range(shown.count()):
        assert "clerk" in shown.nth(i).inner_text()
    assert page.console_errors == []
