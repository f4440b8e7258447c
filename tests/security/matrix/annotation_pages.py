"""Matrix rows of the annotation pages: labelling, groups and review (members), and the study
set-up pages (reviewers read, admins of the study and staff write; annotators see none)."""

from __future__ import annotations

from django.urls import reverse

from annotation.models import Membership, Webhook
from spaces.models import Item

from ..conftest import World
from .policies import (
    LOGGED_IN,
    MEMBER_PAGE,
    PAGE_GATE,
    REVIEWER_PAGE,
    STAFF_PAGE,
    A,
    Row,
    statuses,
)


def extra_membership(world: World) -> int:
    """The second reviewer of A, for the removal row: made a member again after a removal."""
    user = world.users["extra"]
    return Membership.objects.get_or_create(study=world.study_a, user=user, role="reviewer")[0].pk


def first_item(world: World) -> int:
    return Item.objects.filter(space_id=world.study_a.space_id).order_by("row")[0].pk


def a_webhook(world: World) -> int:
    hook, _ = Webhook.objects.get_or_create(
        study=world.study_a, url="https://93.184.216.34/hook", defaults={"events": ["audit.done"]}
    )
    return hook.pk


def ann_a_membership(world: World) -> int:
    return Membership.objects.get(study=world.study_a, user=world.users["ann_a"]).pk


# Set-up pages: reviewers read, admins of the study (and staff) write; annotators see none.
SETUP_PAGE = REVIEWER_PAGE
SETUP_POST_EMPTY = statuses(302, 403, 404, 403, 400, 400)  # an empty form: 400 with errors
SETUP_POST_DONE = statuses(302, 403, 404, 403, 302, 302)


def setup_row(name: str) -> Row:
    return Row(
        lambda w: reverse(name, args=[A(w)]),
        {"get": SETUP_PAGE, "post": SETUP_POST_EMPTY},
        PAGE_GATE,
    )


ROWS: dict[str, Row] = {
    "annotation:study-list": Row(
        lambda w: reverse("annotation:study-list"), {"get": LOGGED_IN}, PAGE_GATE
    ),
    "annotation:study-detail": Row(
        lambda w: reverse("annotation:study-detail", args=[A(w)]), {"get": MEMBER_PAGE}, PAGE_GATE
    ),
    "annotation:label": Row(
        lambda w: reverse("annotation:label", args=[A(w)]), {"get": MEMBER_PAGE}, PAGE_GATE
    ),
    "annotation:groups": Row(
        lambda w: reverse("annotation:groups", args=[A(w)]), {"get": MEMBER_PAGE}, PAGE_GATE
    ),
    "annotation:review": Row(
        lambda w: reverse("annotation:review", args=[A(w)]), {"get": REVIEWER_PAGE}, PAGE_GATE
    ),
    "annotation:adjudication": Row(  # reviewers and admins resolve disagreements
        lambda w: reverse("annotation:adjudication", args=[A(w)]),
        {"get": REVIEWER_PAGE, "post": statuses(302, 403, 404, 302, 302, 302)},
        PAGE_GATE,
        body=lambda w, r: {"item_a": w.items[0].pk, "item_b": w.items[1].pk, "label": "comparable"},
    ),
    "annotation:study-done": Row(
        lambda w: reverse("annotation:study-done", args=[A(w)]), {"get": MEMBER_PAGE}, PAGE_GATE
    ),
    # --- study set-up
    "annotation:study-new": Row(
        lambda w: reverse("annotation:study-new"),
        {"get": STAFF_PAGE, "post": statuses(302, 403, 403, 403, 403, 400)},
        PAGE_GATE,  # the method is checked before the staff rule
    ),
    "annotation:markdown-preview": Row(
        lambda w: reverse("annotation:markdown-preview"),
        {"post": LOGGED_IN},
        PAGE_GATE,
        body=lambda w, r: {"text": "*hi*"},
    ),
    "annotation:study-settings": setup_row("annotation:study-settings"),
    "annotation:study-items": setup_row("annotation:study-items"),
    "annotation:study-browse": Row(
        lambda w: reverse("annotation:study-browse", args=[A(w)]), {"get": SETUP_PAGE}, PAGE_GATE
    ),
    "annotation:study-item": Row(
        lambda w: reverse("annotation:study-item", args=[A(w), first_item(w)]),
        {"get": SETUP_PAGE},
        PAGE_GATE,
    ),
    "annotation:study-pool-filter": Row(
        lambda w: reverse("annotation:study-pool-filter", args=[A(w)]),
        {"post": SETUP_POST_DONE},  # no filter: every item added to the pool
        PAGE_GATE,
    ),
    "annotation:study-pairs": setup_row("annotation:study-pairs"),
    "annotation:study-gold": setup_row("annotation:study-gold"),
    "annotation:study-members": setup_row("annotation:study-members"),
    "annotation:study-import": setup_row("annotation:study-import"),
    "annotation:study-webhooks": setup_row("annotation:study-webhooks"),
    "annotation:study-webhook": Row(
        lambda w: reverse("annotation:study-webhook", args=[A(w), a_webhook(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
        body=lambda w, r: {"action": "test"},
    ),
    "annotation:study-duplicate": Row(
        lambda w: reverse("annotation:study-duplicate", args=[A(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
        body=lambda w, r: {"name": f"copy by {r}"},
    ),
    "annotation:study-archive": Row(
        lambda w: reverse("annotation:study-archive", args=[A(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
        body=lambda w, r: {"archive": "0"},
    ),
    "annotation:study-member": Row(
        lambda w: reverse("annotation:study-member", args=[A(w), ann_a_membership(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
        body=lambda w, r: {"role": "annotator", "target": "7"},
    ),
    "annotation:study-member-remove": Row(
        lambda w: reverse("annotation:study-member-remove", args=[A(w), extra_membership(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
    ),
    # Member attributes (issue 37): admins define them and give values; a member answers the
    # one-time question (none asked here: every member goes on to the labelling page).
    "annotation:study-member-attribute": Row(
        lambda w: reverse("annotation:study-member-attribute", args=[A(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
        body=lambda w, r: {"name": f"region of {r}", "values": "EU, US"},
    ),
    "annotation:study-member-attributes": Row(
        lambda w: reverse("annotation:study-member-attributes", args=[A(w), ann_a_membership(w)]),
        {"post": SETUP_POST_DONE},
        PAGE_GATE,
    ),
    "annotation:study-about-you": Row(
        lambda w: reverse("annotation:study-about-you", args=[A(w)]),
        {
            "get": statuses(302, 302, 404, 302, 302, 302),
            "post": statuses(302, 302, 404, 302, 302, 302),
        },
        PAGE_GATE,
    ),
}
