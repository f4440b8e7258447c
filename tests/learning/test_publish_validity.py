"""A publish that says what it knows: the ``validity`` object (``learning/versions/validity.py``)
from the stored verdicts, the reason an admin must give to publish a version that is not
informative (service, API, page), and the object wherever the metric goes (metadata, the
published endpoints, the Sigma download's header, the schema)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.tokens import api_token_create
from audit.models import AuditEvent
from common.errors import Conflict, InvalidInput
from learning.evaluation.checks import _auto_publish_failures
from learning.models import MetricVersion, StudyLearningSettings
from learning.versions import storage
from learning.versions.validity import (
    HEADER,
    NotInformative,
    validity_header,
    validity_of,
    verdict_line,
)

pytestmark = pytest.mark.django_db

# The contract's shape (held-out items) and the older pair-level one, as the evaluation stores them.
ITEMS_INFORMATIVE = {
    "verdict": "informative",
    "basis": "new items",
    "gain": 0.041,
    "gain_interval": [0.012, 0.070],
    "auc": 0.66,
    "items": 120,
    "pairs": 340,
    "needs": "",
    "summary": "held-out items: gain +0.041",
    "judged_at_watermark": 40,
}
ITEMS_CANNOT_TELL = ITEMS_INFORMATIVE | {
    "verdict": "cannot tell yet",
    "gain": None,
    "gain_interval": None,
    "auc": None,
    "items": 9,
    "pairs": 4,
    "needs": "about 30 more items",
}
# The Adult demo's fitted EXPLORE version as the pair-level rule judged it (issue #35).
PAIRS_ADULT = {
    "informative": {"informative": False, "summary": "gain -0.055", "missing": "more answers"},
    "heldout_baselines": {
        "constant": {"loglik": -0.69, "gain": -0.055, "gain_ci": [-0.065, -0.045]},
        "prior": {"loglik": -0.70, "gain": -0.05, "gain_ci": [-0.06, -0.04]},
    },
    "heldout_auc": 0.493,
    "heldout_pairs": 5000,
}


def baselines(low: float, high: float, prior_high: float = 0.1) -> dict:
    gain = (low + high) / 2
    return {
        "constant": {"loglik": -0.6, "gain": gain, "gain_ci": [low, high]},
        "prior": {"loglik": -0.6, "gain": 0.0, "gain_ci": [prior_high - 0.2, prior_high]},
    }


@pytest.fixture
def version(study, make_version, sigma_a):
    return make_version(study, sigma_a, method="explore", label="fit", watermark=5)


def with_diagnostics(version: MetricVersion, diagnostics: dict) -> MetricVersion:
    MetricVersion.objects.filter(pk=version.pk).update(diagnostics=diagnostics)
    version.refresh_from_db()
    return version


def bearer(user) -> APIClient:
    _, key = api_token_create(user=user, name="job")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


# --- the object ---------------------------------------------------------------------------


def test_the_new_items_verdict_is_read_as_stored(version):
    validity = validity_of(with_diagnostics(version, {"validity": ITEMS_INFORMATIVE}))
    assert validity["verdict"] == "informative"
    assert validity["figures"] == {
        "basis": "new items",
        "gain": 0.041,
        "gain_interval": [0.012, 0.070],
        "auc": 0.66,
        "items": 120,
        "pairs": 340,
    }
    assert validity["override"] is None
    later = validity_of(with_diagnostics(version, {"validity": ITEMS_CANNOT_TELL}))
    assert (later["verdict"], later["needs"]) == ("cannot tell yet", "about 30 more items")
    assert later["figures"]["gain"] is None
    assert later["figures"]["items"] == 9


def test_the_new_items_verdict_wins_over_the_pair_level_one(version):
    validity = validity_of(with_diagnostics(version, PAIRS_ADULT | {"validity": ITEMS_INFORMATIVE}))
    assert (validity["verdict"], validity["figures"]["basis"]) == ("informative", "new items")


def test_an_unknown_stored_verdict_is_never_informative(version):
    stored = ITEMS_INFORMATIVE | {"verdict": "probably fine"}
    assert validity_of(with_diagnostics(version, {"validity": stored}))["verdict"] == (
        "cannot tell yet"
    )


def test_the_adult_fit_is_not_informative_on_held_out_pairs(version):
    validity = validity_of(with_diagnostics(version, PAIRS_ADULT))
    assert validity["verdict"] == "not informative"
    assert validity["figures"] == {
        "basis": "held-out pairs",
        "gain": -0.055,
        "gain_interval": [-0.065, -0.045],
        "auc": 0.493,
        "items": None,
        "pairs": 5000,
    }


@pytest.mark.parametrize(
    ("interval", "prior_high", "verdict"),
    [
        ((0.01, 0.05), 0.1, "informative"),
        ((0.01, 0.05), -0.01, "not informative"),  # its prior predicts better
        ((-0.02, 0.05), 0.1, "cannot tell yet"),  # the interval holds 0
        ((-0.05, -0.01), 0.1, "not informative"),
    ],
)
def test_the_pair_level_rule_in_three_values(version, interval, prior_high, verdict):
    diagnostics = {"heldout_baselines": baselines(*interval, prior_high=prior_high)}
    assert validity_of(with_diagnostics(version, diagnostics))["verdict"] == verdict


@pytest.mark.parametrize(
    "diagnostics",
    [
        {},  # a projection, an import: nobody judged it
        {"informative": {"informative": True, "summary": "", "missing": ""}},  # FACE's default
    ],
)
def test_a_version_nobody_judged_is_never_informative(version, diagnostics):
    validity = validity_of(with_diagnostics(version, diagnostics))
    assert (validity["verdict"], validity["needs"]) == ("cannot tell yet", "not judged")


def test_the_header_is_a_structured_dictionary(version):
    validity = validity_of(with_diagnostics(version, PAIRS_ADULT))
    assert validity_header(validity) == (
        'verdict="not informative", basis="held-out pairs", gain=-0.055, gain-low=-0.065, '
        "gain-high=-0.045, auc=0.493, pairs=5000, override=?0"
    )
    odd = validity | {"figures": validity["figures"] | {"basis": 'new "items" é\\'}}
    assert validity_header(odd).split(", ")[1] == 'basis="new \\"items\\" \\\\"'
    assert verdict_line(validity).startswith(
        "not informative on held-out pairs: gain over the constant -0.055 per answer "
        "(95 % interval -0.065 to -0.045), held-out AUC 0.493"
    )


# --- publishing -------------------------------------------------------------------------------


def test_publishing_what_is_not_informative_needs_a_reason(version, users):
    with_diagnostics(version, PAIRS_ADULT)
    with pytest.raises(NotInformative, match="not informative on held-out pairs") as refused:
        storage.metric_version_publish(version=version, user=users["admin"], reason="  ")
    assert refused.value.validity["verdict"] == "not informative"
    version.refresh_from_db()
    assert not version.is_published
    assert version.publish_override is None
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.PUBLISH).exists()

    storage.metric_version_publish(version=version, user=users["admin"], reason=" paper replica ")
    version.refresh_from_db()
    assert version.is_published
    override = validity_of(version)["override"]
    assert (override["reason"], override["by"]) == ("paper replica", "adm")
    event = AuditEvent.objects.get(action=AuditEvent.Action.PUBLISH)
    assert event.actor == users["admin"]
    assert event.detail["verdict"] == "not informative"
    assert event.detail["override"] == override


def test_automatic_publishing_never_publishes_what_is_not_informative(version):
    with_diagnostics(version, {"validity": ITEMS_CANNOT_TELL})
    with pytest.raises(NotInformative):
        storage.version_publish(version_id=version.pk, user=None)
    storage.version_publish(version_id=version.pk, user=None, reason="demo", by="load_demo")
    version.refresh_from_db()
    assert version.is_published
    assert version.publish_override["by"] == "load_demo"


def test_an_informative_version_is_published_without_a_reason(version, users):
    with_diagnostics(version, {"validity": ITEMS_INFORMATIVE})
    storage.metric_version_publish(version=version, user=users["admin"], reason="ignored")
    version.refresh_from_db()
    assert version.is_published
    assert version.publish_override is None
    event = AuditEvent.objects.get(action=AuditEvent.Action.PUBLISH)
    assert (event.detail["verdict"], event.detail["override"]) == ("informative", None)


def test_a_version_published_before_the_rule_is_refused_until_a_reason(version, users):
    MetricVersion.objects.filter(pk=version.pk).update(is_published=True)
    with pytest.raises(NotInformative):
        storage.metric_version_publish(version=version, user=users["admin"])
    storage.metric_version_publish(version=version, user=users["admin"], reason="kept")
    storage.metric_version_publish(version=version, user=users["admin"])  # now it stands
    version.refresh_from_db()
    assert version.publish_override["reason"] == "kept"


@pytest.mark.parametrize(
    ("reason", "message"),
    [(5, "must be text"), ("x" * 1001, "longer than 1000"), ("a\x00b", "NUL")],
)
def test_a_bad_reason_is_refused(version, users, reason, message):
    with pytest.raises(InvalidInput, match=message):
        storage.metric_version_publish(version=version, user=users["admin"], reason=reason)


def test_auto_publish_checks_read_the_verdict(version, study):
    learning = StudyLearningSettings.objects.get_or_create(study=study)[0]
    with_diagnostics(version, {"validity": ITEMS_CANNOT_TELL, "converged": True})
    assert any("cannot tell yet" in f for f in _auto_publish_failures(version, learning))
    with_diagnostics(version, {"validity": ITEMS_INFORMATIVE, "converged": True})
    assert not any("verdict" in f for f in _auto_publish_failures(version, learning))


# --- the API ------------------------------------------------------------------------------


def test_the_publish_endpoint(version, users):
    with_diagnostics(version, PAIRS_ADULT)
    url = reverse("api-version-publish", args=[version.pk])
    admin = bearer(users["admin"])
    refused = admin.post(url, {}, format="json")
    assert refused.status_code == 409
    assert refused.json()["validity"]["verdict"] == "not informative"
    assert "needs a reason" in refused.json()["detail"]
    assert admin.post(url, {"reason": 3}, format="json").status_code == 400
    assert admin.post(url, {"why": "x"}, format="json").json()["detail"].startswith("Unknown")
    assert admin.post(url, [1], format="json").status_code == 400
    assert bearer(users["reviewer"]).post(url, {"reason": "x"}, format="json").status_code == 403
    assert bearer(users["outsider"]).post(url, {"reason": "x"}, format="json").status_code == 404
    assert APIClient().post(url, {"reason": "x"}, format="json").status_code == 401
    assert not MetricVersion.objects.get(pk=version.pk).is_published

    done = admin.post(url, {"reason": "reproducing the paper"}, format="json")
    assert done.status_code == 200
    body = done.json()
    assert body["is_published"] is True
    assert body["validity"]["override"]["reason"] == "reproducing the paper"
    assert body["validity"]["override"]["by"] == "adm"


def test_validity_travels_with_the_metric(version, users, study):
    with_diagnostics(version, {"validity": ITEMS_INFORMATIVE})
    reviewer = bearer(users["reviewer"])
    assert reviewer.post(reverse("api-version-publish", args=[version.pk])).status_code == 403
    storage.metric_version_publish(version=version, user=users["admin"])
    meta = reviewer.get(reverse("api-version", args=[version.pk])).json()
    assert meta["validity"]["verdict"] == "informative"
    published = reviewer.get(reverse("api-published", args=[study.pk, "explore"])).json()
    assert published["validity"] == meta["validity"]
    for url in (
        reverse("api-version-sigma", args=[version.pk, "npy"]),
        reverse("api-published-sigma", args=[study.pk, "explore", "csv"]),
    ):
        response = reviewer.get(url)
        assert response[HEADER] == (
            'verdict="informative", basis="new items", gain=0.041, gain-low=0.012, '
            "gain-high=0.070, auc=0.660, items=120, pairs=340, override=?0"
        )
        cached = reviewer.get(url, HTTP_IF_NONE_MATCH=response["ETag"])
        assert cached.status_code == 304
        assert cached[HEADER] == response[HEADER]


def test_the_schema_documents_validity_and_the_publish_endpoint(admin_client):
    schema = admin_client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/versions/{version_id}/publish/" in schema
    for name in ("Validity", "ValidityFigures", "gain_interval", "cannot tell yet", "override"):
        assert name in schema, name


# --- the version page ---------------------------------------------------------------------


def test_the_page_asks_for_a_reason_and_shows_it(client, version, users):
    with_diagnostics(version, PAIRS_ADULT)
    client.force_login(users["admin"])
    page = client.get(reverse("learning:version-detail", args=[version.pk])).content.decode()
    assert "not informative" in page
    assert 'name="reason"' in page
    url = reverse("learning:version-publish", args=[version.pk])
    refused = client.post(url, {"reason": ""})
    assert refused.status_code == 400
    assert 'id="publish-error"' in refused.content.decode()
    assert not MetricVersion.objects.get(pk=version.pk).is_published
    assert client.post(url, {"reason": "the paper's table"}).status_code == 302
    page = client.get(reverse("learning:version-detail", args=[version.pk])).content.decode()
    assert "the paper&#x27;s table" in page
    assert 'data-testid="override"' in page


def test_an_informative_version_page_asks_for_no_reason(client, version, users):
    with_diagnostics(version, {"validity": ITEMS_INFORMATIVE})
    client.force_login(users["admin"])
    page = client.get(reverse("learning:version-detail", args=[version.pk])).content.decode()
    assert 'name="reason"' not in page
    response = client.post(reverse("learning:version-publish", args=[version.pk]))
    assert response.status_code == 302
    assert MetricVersion.objects.get(pk=version.pk).is_published


def test_publishing_a_failed_version_is_still_a_conflict(version, users):
    MetricVersion.objects.filter(pk=version.pk).update(status="failed")
    with pytest.raises(Conflict, match="only a ready version"):
        storage.metric_version_publish(version=version, user=users["admin"], reason="x")
    assert json.dumps(validity_of(version))  # the object is plain JSON
