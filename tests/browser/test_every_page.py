"""Every page, in real Chromium, in the light and the dark theme (``prefers-color-scheme``), at a
phone's width (375 px) and a laptop's (1280 px): no sideways scroll on the phone, and axe-core
(vendored under static/vendor/axe-core, served by the app) finds no serious or critical
accessibility violation — contrast included, so the dark theme's colours are checked too (on
the phone; ``AXE_IN``).
``page_urls`` must name every page route: a new page without an entry fails
``test_every_page_route_is_checked``."""

from __future__ import annotations

import json
from datetime import timedelta

import pandas as pd
import pytest
from django.core.files.base import ContentFile
from django.db import transaction
from django.urls import reverse
from django.utils.timezone import now

from accounts.tokens import api_token_create
from annotation.models import ComparableGroup, MemberAttribute, Membership
from learning.evaluation.weat_tests import own_suite
from learning.models import WeatTest
from spaces.models import EmbeddingImport
from spaces.records.create import record_space_create
from tests.annotation.factories import PASSWORD as STAFF_PASSWORD
from tests.annotation.factories import make_user
from tests.browser.conftest import collect_errors
from tests.browser.test_dashboards import (
    PASSWORD,
    metric_study,  # noqa: F401  (fixture)
)
from tests.learning.audits.factories import audit_create_done

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 375, "height": 740}
LAPTOP = {"width": 1280, "height": 900}
AXE_URL = "/static/vendor/axe-core/axe.min.js"
BLOCKING = {"serious", "critical"}


def page_urls(world) -> dict[str, tuple[str, str]]:
    """URL name → (who, path) for every page (HTML, GET) of the app."""
    study, versions, test = world["study"], world["versions"], world["test"]
    s = study.pk
    return {
        "home": ("rev", reverse("home")),
        "accounts:login": ("anon", reverse("accounts:login")),
        "annotation:study-list": ("rev", reverse("annotation:study-list")),
        "annotation:study-detail": ("rev", reverse("annotation:study-detail", args=[s])),
        "annotation:label": ("ann1", reverse("annotation:label", args=[s])),
        "annotation:groups": ("ann1", reverse("annotation:groups", args=[s])),
        "annotation:review": ("rev", reverse("annotation:review", args=[s])),
        "annotation:adjudication": ("rev", reverse("annotation:adjudication", args=[s])),
        "learning:study-dashboard": ("rev", reverse("learning:study-dashboard", args=[s])),
        "learning:study-weat": ("rev", reverse("learning:study-weat", args=[s])),
        "learning:study-weat-test": ("rev", reverse("learning:study-weat-test", args=[s, test.pk])),
        "learning:study-weat-new": ("adm", reverse("learning:study-weat-new", args=[s])),
        "learning:study-weat-test-edit": (
            "adm",
            reverse("learning:study-weat-test-edit", args=[s, world["own_test"].pk]),
        ),
        "learning:study-drift": ("rev", reverse("learning:study-drift", args=[s])),
        "learning:study-learning-settings": (
            "adm",
            reverse("learning:study-learning-settings", args=[s]),
        ),
        "learning:version-detail": (
            "adm",
            reverse("learning:version-detail", args=[versions[1].pk]),
        ),
        "learning:version-compare": (
            "rev",
            reverse("learning:version-compare") + f"?a={versions[0].pk}&b={versions[1].pk}",
        ),
        "learning:audits": ("rev", reverse("learning:audits", args=[s])),
        "learning:audit-detail": (
            "adm",
            reverse("learning:audit-detail", args=[s, world["audit"].pk]),
        ),
        "learning:audit-compare": (
            "rev",
            reverse("learning:audit-compare", args=[s])
            + f"?a={world['audit'].pk}&b={world['audit'].pk}",
        ),
        "accounts:tokens": ("rev", reverse("accounts:tokens")),
        "spaces:list": ("staff", reverse("spaces:list")),
        "spaces:upload": ("staff", reverse("spaces:upload")),
        "spaces:import": ("staff", reverse("spaces:import", args=[world["import"].pk])),
        "spaces:records-upload": ("staff", reverse("spaces:records-upload")),
        "spaces:records-columns": (
            "staff",
            reverse("spaces:records-columns", args=[world["records_import"].pk]),
        ),
        "spaces:records-shown": (
            "staff",
            reverse("spaces:records-shown", args=[world["records_space"].pk]),
        ),
        "spaces:texts-upload": ("staff", reverse("spaces:texts-upload")),
        # A space no study uses (what goes with it, the button), and one in use (refused).
        "spaces:delete": ("staff", reverse("spaces:delete", args=[world["records_space"].pk])),
        "spaces:delete (in use)": ("staff", reverse("spaces:delete", args=[study.space_id])),
        "spaces:sharing": (
            "staff",
            reverse("spaces:sharing", args=[world["records_space"].pk]),
        ),
        # Study set-up (staff creates, the study's admins manage) and the annotator's last page.
        "annotation:study-new": ("staff", reverse("annotation:study-new")),
        "annotation:study-settings": ("adm", reverse("annotation:study-settings", args=[s])),
        "annotation:study-items": ("adm", reverse("annotation:study-items", args=[s])),
        "annotation:study-browse": (
            "adm",
            reverse("annotation:study-browse", args=[s]) + "?q=a",
        ),
        "annotation:study-item": (
            "adm",
            reverse("annotation:study-item", args=[s, world["item"].pk]),
        ),
        "annotation:study-pairs": ("adm", reverse("annotation:study-pairs", args=[s])),
        "annotation:study-gold": ("adm", reverse("annotation:study-gold", args=[s])),
        "annotation:study-members": ("adm", reverse("annotation:study-members", args=[s])),
        "annotation:study-import": ("adm", reverse("annotation:study-import", args=[s])),
        "annotation:study-webhooks": ("adm", reverse("annotation:study-webhooks", args=[s])),
        "annotation:study-done": ("ann1", reverse("annotation:study-done", args=[s])),
        # Member attributes (ann2 has no value yet: asked once), the cohorts (none compared).
        "annotation:study-about-you": ("ann2", reverse("annotation:study-about-you", args=[s])),
        "learning:study-cohorts": ("adm", reverse("learning:study-cohorts", args=[s])),
        "accounts:invitation": (
            "anon",
            reverse("accounts:invitation", args=["MQ", "set-password"]),
        ),
    }


# Routes that are not pages: the API, JSON endpoints, form targets (POST), the admin site.
NOT_PAGES = {
    "healthz",
    "readyz",
    "favicon",  # an image
    "accounts:logout",
    "schema",
    "api-docs",  # Swagger UI: a third-party page
    "learning:study-dashboard-status",
    "spaces:import-status",
    "learning:version-publish",
    "learning:audit-ask",  # POST: sends violations to the annotators
    "learning:audit-sensitive",  # POST: declares the sensitive columns (tests/browser/test_audit_curves.py)
    "learning:study-weat-test-delete",  # POST
    "accounts:token-revoke",
    "annotation:markdown-preview",  # POST: the live preview's fragment
    "annotation:study-duplicate",
    "annotation:study-archive",
    "annotation:study-pool-filter",
    "annotation:study-member",
    "annotation:study-member-remove",
    "annotation:study-member-attribute",  # POST: defines a member attribute
    "annotation:study-member-attributes",  # POST: a member's values
    "annotation:study-webhook",  # POST: test, pause, resume, remove a webhook
    "accounts:sso",  # a redirect to the team's provider (404 while single sign-on is off)
    "accounts:sso-callback",  # the provider's way back (tests/browser/test_single_sign_on.py)
}


def test_every_page_route_is_checked():
    from tests.security.routes import DEBUG_ONLY, app_patterns

    fake = {
        "study": type("S", (), {"pk": 1, "space_id": 1})(),
        "versions": [type("V", (), {"pk": 1})()] * 2,
        "test": type("T", (), {"pk": 1})(),
        "import": type("I", (), {"pk": 1})(),
        "records_import": type("I", (), {"pk": 1})(),
        "records_space": type("R", (), {"pk": 1})(),
        "audit": type("A", (), {"pk": 1})(),
        "item": type("It", (), {"pk": 1})(),
        "own_test": type("T", (), {"pk": 1})(),
    }
    checked = set(page_urls(fake))
    routes = {
        name
        for route, name in app_patterns()
        if not route.startswith("api/") and route not in DEBUG_ONLY and name not in NOT_PAGES
    }
    assert routes - checked == set(), "pages missing from tests/browser/test_every_page.py"


@pytest.fixture
def world(metric_study):  # noqa: F811
    study = metric_study["study"]
    users = dict(metric_study["users"])
    users["staff"] = make_user("staffer", is_staff=True)
    group = ComparableGroup.objects.create(study=study, name="names", created_by=users["ann1"])
    MemberAttribute.objects.create(study=study, name="region", values=["EU", "US"], ask=True)
    Membership.objects.filter(study=study, user=users["ann1"]).update(attributes={"region": "EU"})
    group.members.add(*study.space.items.order_by("row")[:3])
    job = EmbeddingImport(name="imported space", status="done", created_by=users["staff"])
    job.file.save("phone.npy", ContentFile(b"\x93NUMPY"), save=False)
    job.save()
    records = EmbeddingImport(
        name="records", format="records-csv", stage="columns", created_by=users["staff"]
    )
    columns = "id,age,workclass,education,marital_status,occupation,sex,hours_per_week,income"
    row = "p1,39,State-gov,Bachelors,Never-married,Adm-clerical,Male,40,<=50K"
    records.file.save("people.csv", ContentFile(f"{columns}\n{row}\n".encode()), save=False)
    records.save()
    people = record_space_create(
        name="people",
        frame=pd.DataFrame({"id": ["p1", "p2"], "age": [39, 50], "income": ["<=50K", ">50K"]}),
        numeric=["age"],
        categorical=[],
        label_column="income",
        key_column="id",
    )
    type(people).objects.filter(pk=people.pk).update(owner=users["rev"])  # home lists it
    assert Membership.objects.filter(user=users["rev"], role="reviewer").exists()
    # The token page lists a token limited to the study and expiring, and one expired.
    api_token_create(
        user=users["rev"], name="nightly", study_ids=[study.pk], expires_at=now() + timedelta(7)
    )
    old, _ = api_token_create(user=users["rev"], name="old", expires_at=now() + timedelta(1))
    type(old).objects.filter(pk=old.pk).update(expires_at=now() - timedelta(1))
    items = list(study.space.items.order_by("row"))
    audit = audit_create_done(study, metric_study["versions"][0], items)
    with transaction.atomic():
        suite = own_suite(study)  # the study's own WEAT suite, which its admins edit
    own_test = WeatTest.objects.create(
        suite=suite,
        name="own test",
        kind="unfair",
        **{f"{s}_name": s.upper() for s in "xyab"},
        **{f"{s}_words": [f"word{10 + 2 * i}", f"word{11 + 2 * i}"] for i, s in enumerate("xyab")},
    )
    return {
        **metric_study,
        "own_test": own_test,
        "audit": audit,
        "item": items[0],
        "users": users,
        "import": job,
        "records_import": records,
        "records_space": people,
    }


def blocking_violations(page, live_server) -> list[str]:
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(url=live_server.url + AXE_URL)
    results = page.evaluate(
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))})))"
    )
    return [json.dumps(v) for v in results if v["impact"] in BLOCKING]


CONFIGURATIONS = [("light", PHONE), ("dark", PHONE), ("light", LAPTOP), ("dark", LAPTOP)]
# axe-core in every configuration but the dark laptop: the dark theme's colours (contrast) are
# checked on the phone, the laptop's layout in the light theme; the dark laptop pass checks width,
# the theme and the console (axe there cost ~35 s of the suite and found nothing the others miss).
AXE_IN = {("light", 375), ("dark", 375), ("light", 1280)}


def test_every_page_fits_and_passes_axe(browser, live_server, world, screenshot):
    """The four configurations (light and dark, 375 and 1280 px) in one test on one ``world``:
    a test of its own each built the world and emptied the database four times (~40 s of the
    suite on 2 busy cores). Every configuration is checked to the end; the problems of all of
    them are reported together."""
    problems = []
    for scheme, viewport in CONFIGURATIONS:
        problems += [
            f"{scheme}-{viewport['width']}: {p}"
            for p in configuration_problems(
                browser, live_server, world, screenshot, scheme, viewport
            )
        ]
    assert problems == [], "\n".join(problems)


def configuration_problems(browser, live_server, world, screenshot, scheme, viewport) -> list:
    """Every page in one colour scheme at one width: its problems (width, axe, the top bar on a
    phone, the dark background, console errors), each a line."""
    contexts = {}
    phone = viewport is PHONE

    def page_for(who):
        if who not in contexts:
            context = browser.new_context(
                viewport=viewport, is_mobile=phone, has_touch=phone, color_scheme=scheme
            )
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.console_errors = collect_errors(page)
            if who != "anon":
                page.goto(f"{live_server.url}/accounts/login/")
                page.fill("input[name=username]", world["users"][who].username)
                page.fill("input[name=password]", STAFF_PASSWORD if who == "staff" else PASSWORD)
                page.click("button[type=submit]")
                page.wait_for_url(f"{live_server.url}/")
            contexts[who] = page
        return contexts[who]

    problems = []
    try:
        for name, (who, path) in page_urls(world).items():
            page = page_for(who)
            response = page.goto(live_server.url + path)
            if response.status != 200:
                problems.append(f"{name}: HTTP {response.status}")
                continue
            page.wait_for_load_state("load")
            if page.locator(".chart").count():
                page.wait_for_selector(".chart .plot-container svg.main-svg")
            if name == "annotation:label":
                page.wait_for_selector("#card-left[data-item-id]")
                screenshot(page, f"{scheme}-{viewport['width']}-label")
            width = page.evaluate(
                "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
            )
            if width > viewport["width"]:
                screenshot(page, f"{scheme}-{viewport['width']}-{name.replace(':', '-')}")
                problems.append(f"{name}: {width} px wide at {viewport['width']} px")
            if (scheme, viewport["width"]) in AXE_IN:
                problems += [f"{name}: {v}" for v in blocking_violations(page, live_server)]
        if phone:  # the collapsed top bar opens and shows the navigation
            page = page_for("rev")
            page.goto(live_server.url + reverse("home"))
            if page.is_visible("#site-nav"):
                problems.append("home: the navigation shows before the menu is opened")
            page.click(".menu-toggle")
            if not page.is_visible("#site-nav >> text=API tokens"):
                problems.append("home: the opened menu does not show the navigation")
        if scheme == "dark":  # the theme took: the page's background is dark
            page = page_for("rev")
            page.goto(live_server.url + reverse("home"))
            background = page.evaluate("getComputedStyle(document.body).backgroundColor")
            red = int(background.split("(")[1].split(",")[0])
            if red >= 60:
                problems.append(f"home: the dark theme's background is {background}")
        for who, page in contexts.items():
            problems += [f"{who}'s console: {error}" for error in page.console_errors]
    finally:
        for page in contexts.values():
            page.context.close()
    return problems


def test_label_and_groups_pages_in_use_pass_axe_on_a_laptop(
    media_root, logged_in_page, live_server
):
    """The states the phone pass does not reach: answers listed, the keyboard help open,
    search results and a heterogeneity line on the groups page (1366 px wide)."""
    from tests.annotation.factories import make_space, make_study

    study = make_study(space=make_space(name="axe-space"), name="Axe study")
    annotator = make_user("axel", study=study, role="annotator")
    page = logged_in_page(annotator, password=STAFF_PASSWORD)
    page.goto(f"{live_server.url}/studies/{study.pk}/label/")
    page.wait_for_selector("#card-left[data-item-id]")
    page.keyboard.press("1")
    page.wait_for_selector("#recent li.recent-saved")
    assert blocking_violations(page, live_server) == []
    page.keyboard.press("?")
    page.wait_for_selector("#key-help[open]")
    assert blocking_violations(page, live_server) == []
    page.keyboard.press("Escape")

    page.goto(f"{live_server.url}/studies/{study.pk}/groups/")
    for prefix in ["w001", "w002"]:
        page.fill("#search", prefix)
        page.wait_for_selector(f"#results li >> text={prefix}")
        page.press("#search", "Enter")
    page.fill("#search", "w00")
    page.wait_for_selector("#results li >> text=w003")
    page.wait_for_selector("#heterogeneity:not(:empty)")
    assert blocking_violations(page, live_server) == []
    assert page.console_errors == []
