"""The audit's fixes: the field filter on the page and in the CSV (a field of the items' records
and of new records, on SQLite and PostgreSQL), a CSV whose query fails failing before its first
byte, the per-pair Euclidean distance on the summary's scale, and asked pairs offered before the
other candidate pairs."""

from __future__ import annotations

import csv
import io
import uuid

import numpy as np
import pandas as pd
import pytest
from django.db import DatabaseError
from django.urls import reverse

from annotation.labelling.sampling import next_pair
from annotation.labelling.services import judgment_create
from annotation.setup.files import PairRow
from annotation.setup.pairs import candidate_pairs_upload
from learning.audits import run, selectors, services
from learning.models import AuditViolation

from .conftest import csv_upload, twin_scores

pytestmark = pytest.mark.django_db


def audited(world, table, **kwargs):
    audit = services.audit_create(
        user=world["users"]["reviewer"], study=world["study"], upload=csv_upload(table), **kwargs
    )
    assert run.audit_run(audit_id=audit.pk) == "done"
    audit.refresh_from_db()
    return audit


def csv_rows(response) -> list[dict]:
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def with_new_records(frame: pd.DataFrame) -> pd.DataFrame:
    """The twins' scores and four new records (each a twin's other sex)."""
    table = twin_scores(frame, sex=True)
    extra = frame.head(4).copy()
    extra["id"] = [f"new{i}" for i in range(4)]
    extra["sex"] = ["Male", "Female", "Male", "Female"]
    new = twin_scores(extra, sex=True).join(extra[["age", "job", "sex"]])
    table = table.reindex(columns=[*table.columns, "age", "job", "sex"])
    return pd.concat([table, new], ignore_index=True)


def test_the_field_filter_follows_the_items_and_the_new_records(twins, client):
    audit = audited(twins, with_new_records(twins["frame"]), k=3)
    everything = list(audit.violations.all())
    clerks = selectors.Filters(field="job", value="clerk")
    found = list(selectors.violations_filtered(audit=audit, filters=clerks))

    def job(item, record):
        return (record or item.payload)["job"]

    expected = {
        v.pk
        for v in everything
        if "clerk" in (job(v.item_a, v.record_a), job(v.item_b, v.record_b))
    }
    assert expected
    assert len(expected) < len(everything)
    assert {v.pk for v in found} == expected
    # a number field matches its text, as the page shows it
    age = everything[0].item_a.payload["age"]
    by_age = selectors.violations_filtered(
        audit=audit, filters=selectors.Filters(field="age", value=str(age))
    )
    assert by_age.exists()
    assert all(
        age in ((v.record_a or v.item_a.payload)["age"], (v.record_b or v.item_b.payload)["age"])
        for v in by_age
    )
    # a new record's own fields count too (new0 is p00 as a man)
    new = selectors.violations_filtered(
        audit=audit, filters=selectors.Filters(field="sex", value="Male")
    )
    assert any(v.key_b == "new0" for v in new)

    client.force_login(twins["users"]["reviewer"])
    page = client.get(
        reverse("learning:audit-detail", args=[twins["study"].pk, audit.pk]),
        {"field": "job", "value": "clerk"},
    )
    assert page.status_code == 200
    assert page.content.decode().count('class="card violation"') == min(len(expected), 50)
    rows = csv_rows(
        client.get(
            reverse("api-audit-violations", args=[twins["study"].pk, audit.pk]),
            {"field": "job", "value": "clerk"},
        )
    )
    assert len(rows) == len(expected)
    assert {int(r["rank"]) for r in rows} == {v.rank for v in found}


def test_a_csv_whose_query_fails_fails_before_its_first_byte(twins, client, monkeypatch):
    audit = audited(twins, twin_scores(twins["frame"], sex=True), k=3)
    client.force_login(twins["users"]["reviewer"])

    def broken(**kwargs):  # a query the database refuses when it runs
        return AuditViolation.objects.extra(where=["no_such_column = 1"])

    monkeypatch.setattr(selectors, "violations_filtered", broken)
    with pytest.raises(DatabaseError):
        client.get(reverse("api-audit-violations", args=[twins["study"].pk, audit.pk]))


def test_the_stored_euclidean_distance_is_on_the_summarys_scale(twins):
    audit = audited(twins, twin_scores(twins["frame"], sex=True), k=3)
    scale = audit.summary["euclidean_scale"]
    assert scale != pytest.approx(1.0)
    space = twins["space"]
    vectors = space.load_matrix()
    for v in audit.violations.all()[:20]:
        raw = np.linalg.norm(vectors[v.item_a.row] - vectors[v.item_b.row])
        assert v.euclidean == pytest.approx(raw * scale, rel=1e-6)


def test_asked_pairs_come_before_the_other_candidate_pairs(twins):
    study, admin = twins["study"], twins["users"]["admin"]
    keys = list(twins["frame"]["id"])
    other = [PairRow(line=n, key_a=keys[n], key_b=keys[n + 40]) for n in range(30)]
    candidate_pairs_upload(user=admin, study=study, rows=other)
    audit = audited(twins, twin_scores(twins["frame"], sex=True), k=3)
    chosen = list(audit.violations.order_by("rank")[:5])
    services.audit_ask_annotators(user=admin, audit=audit, violation_ids=[v.pk for v in chosen])
    asked = {(v.item_a_id, v.item_b_id) for v in chosen}
    annotator = twins["users"]["annotator"]
    for _ in range(5):
        offered = next_pair(study=study, user=annotator, rng=np.random.default_rng())
        pair = tuple(sorted((offered.left.pk, offered.right.pk)))
        assert pair in asked
        judgment_create(
            study=study,
            annotator=annotator,
            item_a_id=pair[0],
            item_b_id=pair[1],
            label="comparable",
            client_id=uuid.uuid4(),
        )
    loop = selectors.audit_loop(audit=audit)
    assert (loop.asked, loop.answered) == (5, 5)
