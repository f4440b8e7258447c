"""Learning curves on the study dashboard: the study's own EXPLORE versions and the shipped
label-efficiency measurement (means and t-intervals against a hand computation)."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest
from django.urls import reverse

from learning.dashboards import curves
from learning.models import MetricVersion

pytestmark = pytest.mark.django_db

T_975 = {1: 12.706204736174707, 2: 4.302652729749464}  # Student's t, 97.5 % quantile, by df

RUNS = [  # (strategy, seed, labels, loglik)
    ("random", 0, [20, 40, 80], [-0.70, -0.60, -0.50]),
    ("random", 1, [20, 40], [-0.66, -0.62]),
    ("random", 2, [20], [-0.69]),
    ("targeted", 0, [20, 40], [-0.68, -0.55]),
    ("targeted", 1, [20, 40, 80], [-0.64, -0.57, -0.52]),
]
YARDSTICK = {"start": -0.71, "full": -0.51, "target": -0.52, "sigma0": -0.45}


def document(runs=RUNS, yardstick=YARDSTICK) -> dict:
    return {
        "runs": [
            {
                "strategy": s,
                "seed": seed,
                "labels": labels,
                "loglik": loglik,
                "error": [1.0] * len(labels),
                "reasons": {s: len(labels)},
                "items_seen": 10,
                "sampler_s": 0.1,
                "refit_s": 0.2,
            }
            for s, seed, labels, loglik in runs
        ],
        "noise": {},
        "yardstick": yardstick,
    }


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """Write a measurement to a temporary file and make it the shipped one."""

    def ship(content) -> None:
        path = tmp_path / "label_efficiency.json"
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        monkeypatch.setattr(curves, "MEASUREMENT_PATH", path)

    monkeypatch.setattr(curves, "MEASUREMENT_PATH", tmp_path / "not-shipped.json")
    return ship


def hand_interval(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    half = T_975[len(values) - 1] * statistics.stdev(values) / math.sqrt(len(values))
    return mean - half, mean + half


def test_means_and_intervals_match_a_hand_computation(shipped):
    shipped(document())
    found = curves.strategy_efficiency()
    by_name = {c.strategy: c for c in found.curves}
    assert [c.strategy for c in found.curves] == ["random", "targeted"]
    random, targeted = by_name["random"], by_name["targeted"]
    assert random.labels == [20, 40, 80]
    assert random.seeds == [3, 2, 1]  # runs stop early: fewer seeds later
    np.testing.assert_allclose(random.mean, [(-0.70 - 0.66 - 0.69) / 3, -0.61, -0.50])
    # Three seeds at 20 labels: t(0.975, 2) · s / √3 around the mean.
    np.testing.assert_allclose(
        [random.low[0], random.high[0]], hand_interval([-0.70, -0.66, -0.69])
    )
    # Two seeds at 40: s = 0.02/√2, so mean ± 12.706 · 0.01.
    np.testing.assert_allclose(
        [random.low[1], random.high[1]], [-0.61 - 0.12706205, -0.61 + 0.12706205]
    )
    assert (random.low[2], random.high[2]) == (None, None)  # one seed: no interval
    np.testing.assert_allclose(targeted.mean, [-0.66, -0.56, -0.52])
    np.testing.assert_allclose([targeted.low[1], targeted.high[1]], hand_interval([-0.55, -0.57]))
    assert targeted.seeds == [2, 2, 1]
    assert found.yardstick == YARDSTICK
    assert found.seeds == 3
    assert found.target_share == pytest.approx(0.95)  # (-0.52 + 0.71) / (-0.51 + 0.71)
    assert found.command == curves.MEASUREMENT_COMMAND
    table = curves.measurement_table(found)
    assert [labels for labels, _ in table] == [20, 40, 80]
    assert table[2][1][0] == (pytest.approx(-0.50), None, None, 1)


def test_a_non_finite_figure_counts_as_a_seed_that_did_not_run(shipped):
    runs = [("random", 0, [20, 40], [-0.7, float("nan")]), ("random", 1, [20, 40], [-0.6, -0.5])]
    shipped(json.dumps(document(runs)))  # json writes NaN, and reads it back
    (curve,) = curves.strategy_efficiency().curves
    assert curve.seeds == [2, 1]
    np.testing.assert_allclose(curve.mean, [-0.65, -0.5])


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        json.dumps({"runs": [], "yardstick": YARDSTICK}),
        json.dumps(document(yardstick={"start": -0.7, "full": -0.5})),  # no target
        json.dumps(document(yardstick=YARDSTICK | {"full": "high"})),
        json.dumps(document([("random", 0, [20, 40], [-0.7])])),  # lengths differ
        json.dumps(document([("random", 0, [40, 20], [-0.7, -0.6])])),  # not increasing
        json.dumps(document([("random", 0, [20.5], [-0.7])])),
        json.dumps(document([("random", 0, [20], ["-0.7"])])),
        json.dumps({"runs": [{"seed": 0, "labels": [20], "loglik": [-0.7]}], "yardstick": {}}),
    ],
)
def test_a_malformed_file_is_no_measurement(shipped, content):
    shipped(content)
    assert curves.strategy_efficiency() is None


def test_a_missing_file_is_no_measurement(shipped):
    assert curves.strategy_efficiency() is None


def test_the_file_is_read_once_per_version(shipped, monkeypatch):
    shipped(document())
    reads = []
    real = curves.measurement_from
    monkeypatch.setattr(curves, "measurement_from", lambda data: reads.append(1) or real(data))
    first = curves.strategy_efficiency()
    assert curves.strategy_efficiency() is first
    assert len(reads) == 1
    shipped(document(RUNS[:1]))  # a new file (other size): read again
    assert [c.strategy for c in curves.strategy_efficiency().curves] == ["random"]


def explore(make_version, study, *, answers, loglik, ci, watermark, **extra):
    rng = np.random.default_rng(watermark)
    root = rng.normal(size=(5, 5))
    diagnostics = {"converged": True, "spectrum": list(range(5))}
    if loglik is not None:
        diagnostics |= {"heldout_loglik": loglik, "heldout_loglik_ci": ci}
    return make_version(
        study,
        root @ root.T,
        method="explore",
        label=f"explore-{watermark}",
        watermark=watermark,
        diagnostics=diagnostics,
        counts={"judgments": answers, "comparable": 1, "incomparable": 1, "unsure": 0},
        **extra,
    )


@pytest.fixture
def two_versions(study, make_version):
    later = explore(make_version, study, answers=120, loglik=-0.55, ci=[-0.6, -0.5], watermark=30)
    earlier = explore(
        make_version, study, answers=40, loglik=-0.65, ci=[-0.72, -0.58], watermark=10
    )
    return earlier, later


def test_the_study_curve_has_one_point_per_ready_explore_version(study, make_version, two_versions):
    earlier, later = two_versions
    make_version(study, np.eye(5), diagnostics={"heldout_loglik": -0.1}, watermark=40)  # FACE
    explore(
        make_version,
        study,
        answers=200,
        loglik=-0.4,
        ci=[-0.5, -0.3],
        watermark=50,
        status=MetricVersion.Status.FAILED,
    )
    explore(make_version, study, answers=160, loglik=None, ci=None, watermark=60)
    curve = curves.study_curve(study)
    assert [(p.version_id, p.answers, p.loglik, p.low, p.high) for p in curve.points] == [
        (earlier.pk, 40, -0.65, -0.72, -0.58),
        (later.pk, 120, -0.55, -0.6, -0.5),
    ]
    assert curve.without_figure == 1


def test_the_study_curve_is_one_query(study, make_version, two_versions, django_assert_num_queries):
    with django_assert_num_queries(1):
        curves.study_curve(study)


def test_the_dashboard_shows_both_panels(client, study, users, two_versions, shipped):
    shipped(document())
    study.strategy = "targeted"
    study.save(update_fields=["strategy"])
    client.force_login(users["reviewer"])
    response = client.get(reverse("learning:study-dashboard", args=[study.pk]))
    assert response.status_code == 200
    charts = response.context["charts"]
    assert charts["curve"]["answers"] == [40, 120]
    assert charts["curve"]["low"] == [-0.72, -0.6]
    measured = charts["efficiency"]
    assert measured["strategy"] == "targeted"
    assert measured["yardstick"] == {"start": -0.71, "full": -0.51, "target": -0.52}
    assert [c["strategy"] for c in measured["curves"]] == ["random", "targeted"]
    page = response.content.decode()
    assert 'id="chart-curve"' in page
    assert 'id="chart-efficiency"' in page
    assert "targeted (this study)" in page
    assert curves.MEASUREMENT_COMMAND in page
    assert "docs/active_learning.md" in page
    assert "more answers of this kind add little" in page
    assert "target (start + 95 % of the gain)" in page
    assert "No strategy measurement is installed" not in page


def test_the_dashboard_says_when_no_measurement_is_shipped(client, study, users, shipped):
    shipped("{not json")
    client.force_login(users["reviewer"])
    response = client.get(reverse("learning:study-dashboard", args=[study.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "No strategy measurement is installed" in page
    assert 'id="chart-efficiency"' not in page
    assert "No ready EXPLORE version with a held-out log-likelihood yet." in page
    assert response.context["charts"]["efficiency"] is None


def test_dashboard_queries_do_not_grow_with_versions(
    client, study, users, make_version, two_versions, shipped, django_assert_max_num_queries
):
    shipped(document())
    client.force_login(users["reviewer"])
    url = reverse("learning:study-dashboard", args=[study.pk])
    client.get(url)  # figures computed and cached once
    with django_assert_max_num_queries(25) as few:
        assert client.get(url).status_code == 200
    for watermark in (70, 80, 90, 100):
        explore(
            make_version, study, answers=watermark * 2, loglik=-0.5, ci=[-0.6, -0.4],
            watermark=watermark,
        )  # fmt: skip
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get(url)
    assert len(response.context["charts"]["curve"]["answers"]) == 6


def test_the_shipped_measurement_is_readable():
    """The benchmark's committed output (the dashboard's panel) is there and readable."""
    assert curves.MEASUREMENT_PATH.exists(), (
        "learning/dashboards/data/label_efficiency.json is not shipped"
    )
    found = curves.strategy_efficiency()
    assert found is not None, (
        "learning/dashboards/data/label_efficiency.json is malformed (see the log)"
    )
    assert found.curves
    assert all(len(c.labels) == len(c.mean) == len(c.seeds) for c in found.curves)


def test_the_curve_marks_where_a_second_annotator_arrived(client, study, users, make_version):
    """The curve fell from −0.03 to −0.65 when a second annotator's answers came in, with no
    word why: the point where the fit reads more people is marked (dotted line, a note), and
    the simulated studies' chart sits apart under a heading of its own."""
    counts = {"judgments": 60, "comparable": 30, "incomparable": 30, "unsure": 0}
    diagnostics = {"heldout_loglik": -0.03, "heldout_loglik_ci": [-0.05, -0.01]}
    one = make_version(
        study,
        np.eye(5),
        method="explore",
        watermark=10,
        diagnostics=diagnostics,
        counts=counts | {"annotators": 1},
    )
    two = make_version(
        study,
        np.eye(5),
        method="explore",
        watermark=20,
        diagnostics=diagnostics | {"heldout_loglik": -0.65, "heldout_loglik_ci": [-0.7, -0.6]},
        counts=counts | {"judgments": 110, "annotators": 2},
    )
    curve = curves.study_curve(study)
    assert [(p.version_id, n) for p, n in curve.annotator_changes] == [(two.pk, 1)]
    assert one.pk != two.pk
    client.force_login(users["reviewer"])
    response = client.get(reverse("learning:study-dashboard", args=[study.pk]))
    assert response.context["charts"]["curve"]["annotator_changes"] == [
        {"answers": 110, "before": 1, "after": 2}
    ]
    page = response.content.decode()
    assert f'data-annotator-change="{two.pk}"' in page
    assert "reads 2 annotators' answers instead of 1" in page
    assert page.index('id="simulated-studies"') < page.index('data-testid="strategy-efficiency"')
