"""Bad inputs of the study set-up pages (admins of the study; staff for a new study):
settings, items, candidate and gold pairs, members, copies, the Markdown preview."""

from __future__ import annotations

from django.urls import reverse

from .cases import A, Bad

CASES: list[Bad] = [
    # --- study set-up pages (admins of the study; staff for a new study) ----------------------
    Bad(
        "annotation:study-new",
        "gold rate over 1, overlap 0",
        "post",
        lambda w: reverse("annotation:study-new"),
        400,
        "between 0 and 1",
        {
            "name": "n",
            "mode": "pairs",
            "space": "1",
            "pool": "all",
            "strategy": "random",
            "overlap": "0",
            "gold_rate": "2",
            "target_per_annotator": "5",
        },
        "multipart",
        role="su",
    ),
    Bad(
        "annotation:study-new",
        "a taken name",
        "post",
        lambda w: reverse("annotation:study-new"),
        400,
        "already exists",
        lambda w: {
            "name": "Study A",
            "mode": "pairs",
            "space": w.study_a.space_id,
            "pool": "all",
            "strategy": "random",
            "overlap": "2",
            "gold_rate": "0",
            "target_per_annotator": "5",
        },
        "multipart",
        role="su",
    ),
    Bad(
        "annotation:study-settings",
        "no name, tags pool without tags",
        "post",
        lambda w: reverse("annotation:study-settings", args=[A(w)]),
        400,
        "Choose at least one tag",
        lambda w: {
            "name": "",
            "mode": "pairs",
            "space": w.study_a.space_id,
            "pool": "tags",
            "strategy": "random",
            "overlap": "2",
            "gold_rate": "0",
            "target_per_annotator": "5",
        },
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-items",
        "unknown keys",
        "post",
        lambda w: reverse("annotation:study-items", args=[A(w)]),
        400,
        "2 unknown key(s)",
        {"text": "w001\nnot-a-key\nnor-this"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-items",
        "neither file nor text",
        "post",
        lambda w: reverse("annotation:study-items", args=[A(w)]),
        400,
        "Choose a file or paste some lines",
        {},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-pairs",
        "three columns",
        "post",
        lambda w: reverse("annotation:study-pairs", args=[A(w)]),
        400,
        "expected 2 columns",
        {"text": "w001,w002,w003"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-gold",
        "a bad label",
        "post",
        lambda w: reverse("annotation:study-gold", args=[A(w)]),
        400,
        "the label must be comparable or incomparable",
        {"text": "w001,w002,maybe", "confirm": "1"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-gold",
        "a key of no item of the pool",
        "post",
        lambda w: reverse("annotation:study-gold", args=[A(w)]),
        400,
        "not in this study",
        {"text": "w001,ghost,comparable", "confirm": "1"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-members",
        "add someone unknown",
        "post",
        lambda w: reverse("annotation:study-members", args=[A(w)]),
        400,
        "invite them instead",
        {"action": "add", "add-who": "ghost", "add-role": "annotator"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-members",
        "invite with a bad e-mail and a taken username",
        "post",
        lambda w: reverse("annotation:study-members", args=[A(w)]),
        400,
        "Enter a valid email address",
        {
            "action": "invite",
            "invite-username": "x",
            "invite-email": "no",
            "invite-role": "annotator",
        },
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-members",
        "invite a taken username",
        "post",
        lambda w: reverse("annotation:study-members", args=[A(w)]),
        400,
        "is taken",
        {"action": "invite", "invite-username": "ann_b", "invite-role": "annotator"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-member",
        "an unknown role",
        "post",
        lambda w: reverse(
            "annotation:study-member", args=[A(w), w.users["ann_a"].memberships.get().pk]
        ),
        400,
        "Select a valid choice",
        {"role": "boss"},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-member-remove",
        "another study's member",
        "post",
        lambda w: reverse(
            "annotation:study-member-remove", args=[A(w), w.users["ann_b"].memberships.get().pk]
        ),
        404,
        "No such member",
        {},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:study-duplicate",
        "no name",
        "post",
        lambda w: reverse("annotation:study-duplicate", args=[A(w)]),
        400,
        "Give the copy a name",
        {"name": ""},
        "multipart",
        role="adm_a",
    ),
    Bad(
        "annotation:markdown-preview",
        "text over 100,000 characters",
        "post",
        lambda w: reverse("annotation:markdown-preview"),
        400,
        "too long",
        {"text": "x" * 100_001},
        "multipart",
    ),
]

CASES += [
    Bad(
        "annotation:study-browse",
        "a field the space does not have",
        "get",
        lambda w: reverse("annotation:study-browse", args=[A(w)]) + "?q=colour:red",
        400,
        "No field named &#x27;colour&#x27;",
        None,
        "multipart",
        role="adm_a",
    ),
]

# (endpoint, bad input, the test that covers it)
ELSEWHERE = [
    (
        "annotation:study-items",
        "a file that is not UTF-8",
        "tests.annotation.test_setup_pages::test_upload_pages_show_unknown_keys_and_write_nothing",
    ),
    (
        "annotation:study-gold",
        "a key of another space (service, model form, Django admin)",
        "tests.annotation.test_setup::test_a_cross_space_gold_pair_is_refused_by_the_django_admin",
    ),
    (
        "annotation:study-pool-filter",
        "a filter matching nothing, an unknown field, one dropping a paired item (the message "
        "after the redirect)",
        "tests.annotation.test_browse::"
        "test_a_filter_that_would_drop_a_paired_item_or_matches_nothing_changes_nothing",
    ),
    (
        "annotation:study-item",
        "an item of another space",
        "tests.annotation.test_browse::test_one_item_opened",
    ),
]

# Taking no input beyond authentication (covered by the authorization matrix).
NO_INPUT = {"annotation:study-archive"}
