"""Counterfactual twins: the admin declares the sensitive columns, reviewers download the twins,
the model scores them as they are, and the audit reports per column how many scores moved and
how many decisions flipped — through the API, on the twins world."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from common.errors import InvalidInput, NotAllowed
from learning.audits import run, services
from learning.audits import twins as twin_room
from learning.core.fairness.counterfactual import twin_figures
from learning.models import ModelAudit

from .conftest import TWINS, csv_upload, twin_scores

pytestmark = pytest.mark.django_db


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def download(world, columns: str | None = "sex", user="reviewer") -> pd.DataFrame:
    url = reverse("api-counterfactuals", args=[world["study"].pk])
    response = client_of(world["users"][user]).get(url, {"columns": columns} if columns else {})
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/csv")
    body = b"".join(response.streaming_content).decode()
    return pd.read_csv(io.StringIO(body), dtype=str)


def scored(world, table: pd.DataFrame, *, sex: bool) -> pd.DataFrame:
    """The model's scores of the originals and of the twins (scored from their own fields)."""
    frame = table.copy()
    frame["id"] = table["key"]
    frame["age"] = frame["age"].astype(int)
    return twin_scores(frame, sex=sex)


def audited(world, table: pd.DataFrame, **kwargs) -> ModelAudit:
    audit = services.audit_create(
        user=world["users"]["reviewer"], study=world["study"], upload=csv_upload(table), **kwargs
    )
    assert run.audit_run(audit_id=audit.pk) == "done"
    audit.refresh_from_db()
    return audit


def test_the_twins_file_has_one_row_per_item_and_other_value(twins):
    twins_table = download(twins, "sex,job")
    assert list(twins_table.columns[:4]) == ["key", "of", "column", "value"]
    assert set(twins_table.columns[4:]) == {"id", "age", "job", "sex"}  # income is hidden
    # sex: one other value per record; job: two of three
    assert (twins_table["column"] == "sex").sum() == 2 * TWINS
    assert (twins_table["column"] == "job").sum() == 2 * 2 * TWINS
    assert twins_table["key"].is_unique
    frame = twins["frame"].set_index("id")
    for row in twins_table.itertuples():
        original = frame.loc[row.of]
        assert row.key == f"{row.of}~{row.column}={row.value}"
        assert getattr(row, row.column) == row.value != str(original[row.column])
        others = [c for c in ("age", "job", "sex") if c != row.column]
        assert all(str(original[c]) == getattr(row, c) for c in others)


def test_a_model_that_uses_sex_moves_its_twins_and_one_that_does_not_moves_none(twins):
    originals = twins["frame"].drop(columns=["income"]).rename(columns={"id": "key"})
    table = pd.concat([originals, download(twins, "sex")], ignore_index=True)
    found = {}
    for sex in (True, False):
        scores = scored(twins, table, sex=sex)
        # the twins' fields may be left out: the app knows them from the key
        audit = audited(twins, scores[["key", "score", "decision"]], k=3, name=f"sex={sex}")
        assert audit.item_count == 2 * TWINS  # the twins stay out of the neighbour search
        assert audit.summary["twins"] == 2 * TWINS
        found[sex] = audit.summary["counterfactual"]["sex"]
    with_sex, without = found[True], found[False]
    assert with_sex["pairs"] == without["pairs"] == 2 * TWINS
    assert with_sex["moved_share"] == 1.0
    assert without["moved_share"] == 0.0
    assert with_sex["intervals"]["moved_share"][0] > without["intervals"]["moved_share"][1]
    # by hand: the change of each twin is |σ(a + 1.5) − σ(a)| (a man's logit is 1.5 higher)
    age = (twins["frame"]["age"].to_numpy() - 45) / 10
    change = np.abs(1 / (1 + np.exp(-age - 1.5)) - 1 / (1 + np.exp(-age)))
    assert with_sex["mean_abs_change"] == pytest.approx(change.mean(), abs=1e-5)
    assert with_sex["max_abs_change"] == pytest.approx(change.max(), abs=1e-5)
    flips = ((age >= 0) != (age + 1.5 >= 0)).mean()
    assert with_sex["decision_flips"] == pytest.approx(flips)
    assert without["decision_flips"] == 0.0
    worst = with_sex["worst"]
    assert len(worst) == 20
    assert worst[0]["change"] ** 2 == pytest.approx(with_sex["max_abs_change"] ** 2, abs=1e-9)
    assert worst[0]["key"] == f"{worst[0]['of']}~sex={worst[0]['value']}"
    # the API's shape
    detail = client_of(twins["users"]["reviewer"]).get(
        reverse("api-audit", args=[twins["study"].pk, audit.pk])
    )
    shown = detail.json()["counterfactual"]["sex"]
    assert set(shown) >= {
        "pairs",
        "moved_share",
        "mean_abs_change",
        "max_abs_change",
        "decision_flips",
        "intervals",
    }
    assert "worst" not in shown
    assert detail.json()["delta"] == 0.01


def test_delta_sets_what_moves(twins):
    originals = twins["frame"].drop(columns=["income"]).rename(columns={"id": "key"})
    table = pd.concat([originals, download(twins, "sex")], ignore_index=True)
    scores = scored(twins, table, sex=True)[["key", "score"]]
    audit = audited(twins, scores, k=3, delta=0.5)
    figures = audit.summary["counterfactual"]["sex"]
    assert figures["delta"] == 0.5
    assert figures["moved_share"] == 0.0  # no change reaches 0.5 (at most σ(1.5) − ½ ≈ 0.32)
    assert figures["decision_flips"] is None  # no decisions given


def test_declaring_sensitive_columns_is_for_admins_and_checked(twins):
    study, users = twins["study"], twins["users"]
    with pytest.raises(NotAllowed, match="Only admins"):
        twin_room.sensitive_columns_set(user=users["reviewer"], study=study, columns=["sex"])
    with pytest.raises(InvalidInput, match="Unknown column 'colour'"):
        twin_room.sensitive_columns_set(user=users["admin"], study=study, columns=["colour"])
    with pytest.raises(InvalidInput, match="more than 50 values"):
        twin_room.sensitive_columns_set(user=users["admin"], study=study, columns=["id"])
    assert twin_room.sensitive_columns(study) == []
    twin_room.sensitive_columns_set(user=users["admin"], study=study, columns=["sex", "job"])
    assert twin_room.sensitive_columns(study) == ["sex", "job"]
    # without ?columns= the download gives the declared ones
    table = download(twins, None)
    assert set(table["column"]) == {"sex", "job"}


BAD = [
    ("columns=colour", 400, "Unknown column 'colour'"),
    ("columns=", 400, "declare the study's sensitive columns first"),
    ("columns=id", 400, "more than 50 values"),
]


@pytest.mark.parametrize(("query", "status", "message"), BAD)
def test_bad_requests_are_400_with_the_reason(twins, query, status, message):
    url = reverse("api-counterfactuals", args=[twins["study"].pk]) + "?" + query
    response = client_of(twins["users"]["reviewer"]).get(url)
    assert response.status_code == status
    assert message in response.json()["detail"]


def test_twins_beyond_what_an_audit_reads_are_refused(twins, settings):
    settings.AUDIT_MAX_ROWS = 100  # sex and job: 80 + 160 twins
    url = reverse("api-counterfactuals", args=[twins["study"].pk]) + "?columns=sex,job"
    response = client_of(twins["users"]["reviewer"]).get(url)
    assert response.status_code == 400
    assert "would be 240 rows; an audit reads at most 100" in response.json()["detail"]


def test_annotators_and_outsiders_get_no_twins(twins):
    url = reverse("api-counterfactuals", args=[twins["study"].pk]) + "?columns=sex"
    assert client_of(twins["users"]["annotator"]).get(url).status_code == 403
    assert client_of(twins["users"]["outsider"]).get(url).status_code == 404
    assert APIClient().get(url).status_code in (401, 403)


def test_a_study_of_words_has_no_twins(words):
    words_url = reverse("api-counterfactuals", args=[words["study"].pk]) + "?columns=x"
    response = client_of(words["users"]["reviewer"]).get(words_url)
    assert response.status_code == 400
    assert "need a study of records" in response.json()["detail"]


def test_a_twin_without_its_original_is_refused(twins):
    with pytest.raises(InvalidInput, match=re.escape("needs its original's score")):
        services.audit_create(
            user=twins["users"]["reviewer"],
            study=twins["study"],
            upload=csv_upload("key,score\np00F~sex=Male,0.3\np01F,0.2\np01M,0.4\n"),
            k=1,
        )
    assert not ModelAudit.objects.exists()


def test_twin_figures_by_hand_and_their_bound_at_zero():
    before = np.array([0.1, 0.2, 0.3, 0.4])
    after = np.array([0.1, 0.25, 0.3, 0.9])
    figures = twin_figures(
        before,
        after,
        np.array([0, 1, 1, 2]),
        delta=0.01,
        original_decisions=np.array([0, 0, 0, 0]),
        twin_decisions=np.array([0, 0, 0, 1]),
    )
    assert (figures.pairs, figures.originals, figures.moved) == (4, 3, 2)
    assert figures.moved_share.estimate == 0.5
    assert figures.mean_abs_change.estimate == pytest.approx(0.55 / 4)
    assert figures.max_abs_change.estimate == pytest.approx(0.5)
    assert figures.decision_flips.estimate == 0.25
    none = twin_figures(before, before, np.arange(4), delta=0.01)
    assert none.moved_share.estimate == 0.0
    # no spread in the bootstrap: the exact bound over 4 originals, 1 − 0.025^(1/4)
    assert none.moved_share.high == pytest.approx(1 - 0.025**0.25)


def test_the_moved_shares_interval_covers_at_its_level():
    """Simulated truth: 2,000 originals with 4 twins each, twins of one original correlated;
    the 95 % interval covers the true share in about 95 % of 300 worlds."""
    rng = np.random.default_rng(11)
    truth, covered = 0.3, 0
    for world in range(300):
        tendency = rng.beta(0.6, 1.4, size=2000)  # an original's chance of moving: mean 0.3
        moved = rng.random((2000, 4)) < tendency[:, None]
        change = np.where(moved, 0.5, 0.0).ravel()
        figures = twin_figures(
            np.zeros(change.size), change, np.repeat(np.arange(2000), 4), n_boot=200, seed=world
        )
        covered += figures.moved_share.low <= truth <= figures.moved_share.high
    assert 0.91 <= covered / 300 <= 0.99


def test_the_pages_declare_link_and_show_the_twins_first(twins, client):
    study, users = twins["study"], twins["users"]
    url = reverse("learning:audit-sensitive", args=[study.pk])
    client.force_login(users["reviewer"])
    assert client.post(url, {"column": ["sex"]}).status_code == 403
    client.force_login(users["admin"])
    refused = client.post(url, {"column": ["id"]})
    assert refused.status_code == 400
    assert "more than 50 values" in refused.content.decode()
    assert client.post(url, {"column": ["sex"]}).status_code == 302
    listing = client.get(reverse("learning:audits", args=[study.pk])).content.decode()
    assert 'id="twins-download"' in listing
    assert "counterfactuals.csv?columns=sex" in listing

    originals = twins["frame"].drop(columns=["income"]).rename(columns={"id": "key"})
    table = pd.concat([originals, download(twins, "sex")], ignore_index=True)
    audit = audited(twins, scored(twins, table, sex=True)[["key", "score", "decision"]], k=3)
    page = client.get(reverse("learning:audit-detail", args=[study.pk, audit.pk])).content.decode()
    assert page.index('id="audit-twins"') < page.index('id="audit-summary"')  # the twins lead
    assert "100.0 %" in page
    assert 'id="twins-worst-sex"' in page
    other = audited(twins, scored(twins, table, sex=False)[["key", "score", "decision"]], k=3)
    compare = client.get(
        reverse("learning:audit-compare", args=[study.pk]) + f"?a={audit.pk}&b={other.pk}"
    ).content.decode()
    twins_table = compare[compare.index('id="compare-twins"') : compare.index('id="audit-compare"')]
    assert "100.0 %" in twins_table
    assert "0.0 %" in twins_table
    plain = audited(twins, twin_scores(twins["frame"], sex=True), k=3)
    page = client.get(reverse("learning:audit-detail", args=[study.pk, plain.pk])).content.decode()
    assert 'id="twins-hint"' in page
