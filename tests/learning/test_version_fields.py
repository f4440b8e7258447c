"""A record study's metric in the team's words: each field's share of Σ's trace, the fields it
ignores, the fields two versions differ on — by hand on a diagonal Σ, on the version page, the
compare page and in the metadata JSON; words keep their item lists."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from annotation.models import Membership
from learning.evaluation.fields import fields_differ, version_fields
from spaces.models import EmbeddingSpace, Item
from spaces.records.create import record_space_create
from spaces.records.featuremap import field_blocks
from tests.annotation.factories import make_metric_version, make_space, make_study, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(media_root):
    frame = pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(8)],
            "age": [21, 30, 38, 45, 52, 61, 27, 33],
            "job": ["clerk", "nurse", "pilot", "clerk", "nurse", "pilot", "clerk", "nurse"],
            "sex": ["F", "M", "F", "M", "F", "M", "F", "M"],
            "income": ["a", "b", "a", "b", "a", "b", "a", "b"],
        }
    )
    space = record_space_create(
        name="fields",
        frame=frame,
        numeric=["age"],
        categorical=["job", "sex"],
        label_column="income",
        key_column="id",
    )
    study = make_study(space=space, name="Fields")
    names = space.feature_map["feature_names"]  # age, job=…×3, sex=…×2
    no_sex = np.diag([0.0 if n.startswith("sex=") else 1.0 for n in names])
    a = make_metric_version(study=study, method="explore", sigma=no_sex, label="a")
    b = make_metric_version(
        study=study, method="explore", sigma=np.eye(len(names)), label="b", judgment_watermark=1
    )
    reviewer = make_user("rev", study=study, role=Membership.Role.REVIEWER)
    return {"space": space, "study": study, "a": a, "b": b, "reviewer": reviewer}


def test_field_blocks_follow_phi_columns(world):
    names, starts = field_blocks(world["space"].feature_map)
    assert names == ["age", "job", "sex"]
    assert starts.tolist() == [0, 1, 4]


def test_version_fields_by_hand(world):
    found = version_fields(world["a"])
    shares = {f.field: (round(f.share, 6), round(f.weight, 6), f.ignored) for f in found.fields}
    # on the directions records differ in (a field of c levels has c − 1): age 1, job 2, sex 1;
    # Σ keeps age (1) and job (trace 2 there), drops sex: tr = 3; weight = share / (free / 4)
    assert shares == {
        "age": (round(1 / 3, 6), round(4 / 3, 6), False),
        "job": (round(2 / 3, 6), round(4 / 3, 6), False),
        "sex": (0.0, 0.0, True),
    }
    assert found.ignored == ["sex"]
    assert [d.fields for d in found.sensitive] == [(("sex", 1.0),), (("sex", 1.0),)]
    moved = fields_differ(found, version_fields(world["b"]))
    assert [(c.field, round(c.share_b, 4), c.ignored_a, c.ignored_b) for c in moved] == [
        ("sex", 0.25, True, False),  # identity: 1/4, 2/4, 1/4
        ("job", 0.5, False, False),
        ("age", 0.25, False, False),
    ]


def test_words_have_no_fields(media_root):
    space = make_space()
    study = make_study(space=space)
    version = make_metric_version(study=study, method="face", sigma=np.eye(space.dimension))
    assert version_fields(version) is None


def test_metadata_json_lists_each_fields_share(world, client):
    client.force_login(world["reviewer"])
    data = client.get(f"/api/versions/{world['a'].pk}/").json()
    assert [(f["field"], f["share"], f["ignored"]) for f in data["fields"]] == [
        ("age", round(1 / 3, 6), False),
        ("job", round(2 / 3, 6), False),
        ("sex", 0.0, True),
    ]
    world["b"].is_published = True
    world["b"].save()
    study_id = world["study"].pk
    published = client.get(f"/api/studies/{study_id}/metrics/explore/published/").json()
    assert published["fields"][2] == {
        "field": "sex",
        "share": 0.25,
        "weight": 1.0,
        "leading": pytest.approx(published["fields"][2]["leading"]),
        "ignored": False,
    }


def test_the_version_page_names_the_ignored_fields_not_item_ids(world, client):
    client.force_login(world["reviewer"])
    page = client.get(f"/versions/{world['a'].pk}/").content.decode()
    assert "ignores sex" in page
    assert 'data-field="job"' in page
    assert "vocabulary items" not in page
    assert "p3" not in page.split('id="fields"')[1].split("Parameters")[0]  # no item keys


def test_the_compare_page_leads_with_the_fields(world, client):
    client.force_login(world["reviewer"])
    page = client.get(f"/versions/compare/?a={world['a'].pk}&b={world['b'].pk}").content.decode()
    moved = page.split('data-testid="fields-moved"')[1].split("</p>")[0]
    assert "<strong>sex</strong> (0 % → 25 %, ignored by" in moved
    assert page.index('id="compare-fields"') < page.index('<details id="compare-details">')


def test_a_text_space_lists_texts_by_their_first_words_and_words_keep_their_keys(
    media_root, client
):
    texts = make_space(name="texts", n_words=12, dimension=4, kind="text")
    EmbeddingSpace.objects.filter(pk=texts.pk).update(kind="texts")
    long = "The nurse finished her night shift and drove home through the rain " * 2
    Item.objects.filter(space=texts).update(text=long)
    words = make_space(name="words", n_words=12, dimension=4)
    sigma = np.diag([0.0, 1.0, 1.0, 1.0])  # one direction ignored
    pages = {}
    for space in (texts, words):
        study = make_study(space=space, name=f"S {space.name}")
        version = make_metric_version(study=study, method="face", sigma=sigma)
        reviewer = make_user(f"rev-{space.name}", study=study, role=Membership.Role.REVIEWER)
        client.force_login(reviewer)
        pages[space.name] = client.get(f"/versions/{version.pk}/").content.decode()
    assert "the texts most aligned with it" in pages["texts"]
    assert "The nurse finished her night shift and drove home through…" in pages["texts"]
    assert "the vocabulary items most aligned with it" in pages["words"]
    assert 'class="word" title="cos' in pages["words"]
    assert 'id="fields"' not in pages["texts"] + pages["words"]
