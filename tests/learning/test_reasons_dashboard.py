"""The dashboard's summary of reasons: which fields annotators cite (in all, "because",
"despite", per annotator), beside each field's share of the metric — a hand-counted case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from django.urls import reverse

from annotation.models import Label, Membership, PairJudgment
from learning.dashboards import refresh
from learning.evaluation.reasons import reason_counts, reasons_view
from spaces.models import Item
from spaces.records.create import record_space_create
from tests.annotation.factories import make_metric_version, make_study, make_user

pytestmark = pytest.mark.django_db
C, N = Label.COMPARABLE, Label.INCOMPARABLE


@pytest.fixture
def world(media_root):
    frame = pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(6)],
            "age": [21, 30, 38, 45, 52, 61],
            "job": ["clerk", "nurse", "pilot", "clerk", "nurse", "pilot"],
            "sex": ["F", "M", "F", "M", "F", "M"],
        }
    )
    space = record_space_create(
        name="reasons", frame=frame, numeric=["age"], categorical=["job", "sex"], key_column="id"
    )
    study = make_study(space=space, name="Reasons")
    names = space.feature_map["feature_names"]
    no_sex = np.diag([0.0 if n.startswith("sex=") else 1.0 for n in names])
    version = make_metric_version(study=study, method="explore", sigma=no_sex)
    ann = [make_user(f"a{i}", study=study, role=Membership.Role.ANNOTATOR) for i in (1, 2)]
    items = list(Item.objects.filter(space=space).order_by("row"))

    def answer(user, i, j, label, reasons):
        PairJudgment.objects.create(
            study=study,
            annotator=user,
            item_a=items[i],
            item_b=items[j],
            label=label,
            reasons=reasons,
        )

    answer(ann[0], 0, 1, N, ["sex"])
    answer(ann[0], 2, 3, N, ["sex", "age"])
    answer(ann[0], 4, 5, C, ["job"])
    answer(ann[1], 0, 1, N, ["age"])
    answer(ann[1], 2, 3, C, [])
    reviewer = make_user("rev", study=study, role=Membership.Role.REVIEWER)
    return {"study": study, "version": version, "reviewer": reviewer}


def test_reasons_are_counted_per_field_side_and_annotator(world):
    counts = reason_counts(world["study"])
    assert counts.answers == 4
    assert counts.cited == {"sex": 2, "age": 2, "job": 1}
    assert counts.because == {"sex": 2, "age": 2}
    assert counts.despite == {"job": 1}
    assert counts.by_annotator == {"a1": {"sex": 2, "age": 1, "job": 1}, "a2": {"age": 1}}
    assert counts.fields == ["age", "sex", "job"]


def test_the_view_sets_them_beside_the_metric(world):
    view = reasons_view(world["study"], reason_counts(world["study"]))
    assert view.version == world["version"]
    assert view.annotators == ["a1", "a2"]
    rows = {r.field: (r.cited, r.per_annotator, round(r.share, 4), r.ignored) for r in view.rows}
    # the directions records differ in: age 1, job 2 (three levels), sex 0 (ignored)
    assert rows == {
        "age": (2, [1, 1], round(1 / 3, 4), False),
        "sex": (2, [2, 0], 0.0, True),
        "job": (1, [1, 0], round(2 / 3, 4), False),
    }
    assert view.because_but_ignored == ["sex"]
    assert view.weighed_not_cited == []


def test_the_dashboard_shows_the_reasons_table(world, client):
    refresh.dashboard_refresh(study_id=world["study"].pk)
    client.force_login(world["reviewer"])
    page = client.get(reverse("learning:study-dashboard", args=[world["study"].pk]))
    html = page.content.decode()
    assert 'id="reasons-table"' in html
    assert "Annotators cite <strong>sex</strong> as what made two records incomparable" in html
    sex = html.split('<tr data-field="sex">')[1].split("</tr>")[0]
    assert "<td>2</td><td>2</td><td>0</td>" in sex
