"""At a phone's width (375 px) the labelling page's field-by-field comparison of two records
fits its card: a wage table's values ("2. Middle Atlantic", "4. College Grad") made it 423 px
wide in a 349 px card."""

from __future__ import annotations

import pandas as pd
import pytest
from django.contrib.auth import get_user_model

from spaces.records.create import record_space_create
from tests.annotation.factories import PASSWORD, make_study
from tests.browser.test_every_page import PHONE

pytestmark = pytest.mark.browser

WAGE = pd.DataFrame(
    {
        "id": ["231655", "86582", "161300", "155159"],
        "year": ["2006", "2004", "2003", "2003"],
        "age": ["18", "24", "45", "43"],
        "maritl": ["1. Never Married", "1. Never Married", "2. Married", "2. Married"],
        "race": ["1. White", "1. White", "1. White", "3. Asian"],
        "education": ["1. < HS Grad", "4. College Grad", "3. Some College", "4. College Grad"],
        "region": ["2. Middle Atlantic"] * 4,
        "jobclass": ["1. Industrial", "2. Information", "1. Industrial", "2. Information"],
        "health": ["1. <=Good", "2. >=Very Good", "1. <=Good", "2. >=Very Good"],
        "health_ins": ["2. No", "2. No", "1. Yes", "1. Yes"],
        "wage": ["75.04315402", "70.47601965", "130.9821774", "154.6852937"],
    }
)


@pytest.fixture
def admin(transactional_db):
    return get_user_model().objects.create_user("boss", password=PASSWORD, is_staff=True)


def test_the_record_comparison_fits_its_card_on_a_phone(admin, media_root, browser, live_server):
    space = record_space_create(
        name="wage",
        frame=WAGE,
        numeric=["age", "year"],
        categorical=["maritl", "race", "education", "jobclass", "health", "health_ins"],
        excluded=["region"],
        label_column="wage",
        key_column="id",
    )
    study = make_study(space=space, name="Wage on a phone")
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
        table, card = page.evaluate(
            """() => {
              const box = document.getElementById("record-compare");
              const table = box.querySelector("table.compare");
              return [table.getBoundingClientRect().width, box.clientWidth];
            }"""
        )
        assert table <= card, f"the table is {table:.0f} px wide in a {card} px card"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    finally:
        context.close()
