"""Study set-up: services (every rule; bad input → a clear message and nothing written), the
model-level gold pair rule (service, form, admin), the pages, invitations, completion."""

from __future__ import annotations

import io
import re
import uuid

import pyarrow.parquet as pq
import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import selectors, setup
from annotation.admin import GoldPairForm
from annotation.models import CandidatePair, GoldPair, Membership, PairJudgment, Study
from annotation.sampling import next_pair
from annotation.services import gold_pair_set
from annotation.setup_files import parse_keys, parse_pairs
from audit.models import AuditEvent
from common.errors import Conflict, InvalidInput, NotAllowed
from spaces.models import Item, Tag

from .factories import make_space, make_user

Role = Membership.Role


def counts() -> dict:
    return {
        "gold": GoldPair.objects.count(),
        "candidates": CandidatePair.objects.count(),
        "pool": Study.pool_keys.through.objects.count(),
        "members": Membership.objects.count(),
        "studies": Study.objects.count(),
    }


def settings_data(space, **change) -> dict:
    data = {
        "name": "Fresh study",
        "instructions": "# Hello",
        "mode": Study.Mode.PAIRS,
        "space": space,
        "pool": Study.Pool.ALL,
        "strategy": Study.Strategy.RANDOM,
        "overlap": 2,
        "gold_rate": 0.1,
        "target_per_annotator": 5,
        "stop_at_target": True,
        "is_active": True,
        "tags": [],
    }
    return {**data, **change}


# --- Files --------------------------------------------------------------------------------------


def test_key_files_csv_tsv_jsonl_and_pasted():
    assert parse_keys("key,text\nw001,x\nw002,y\nw001,z\n") == ["w001", "w002"]
    assert parse_keys("w001\tfoo\nw002\tbar\n") == ["w001", "w002"]
    assert parse_keys('{"key": "w001"}\n"w002"\n') == ["w001", "w002"]
    assert parse_keys("w001, w002\nw003", pasted=True) == ["w001", "w002", "w003"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("{bad json\n", "Line 1: not valid JSON"),
        ('{"key": 5}\n', "Line 1: an empty or non-text item key"),
        ("w001,w002,maybe\n", "Line 1: the label must be comparable or incomparable"),
        ("w001,w002\n", "Line 1: expected 3 columns"),
        ("w001,w001,1\n", "Line 1: a pair needs two different items"),
    ],
)
def test_bad_pair_and_key_files_name_the_line(text, message):
    keys = message == "empty" or "item key" in message
    with pytest.raises(InvalidInput, match=message):
        (parse_keys(text) if keys else parse_pairs(text, labelled=True))


def test_pairs_accept_a_header_labels_as_numbers_and_jsonl():
    rows = parse_pairs("key_a,key_b,label\nw001,w002,1\nw003,w004,incomparable\n", labelled=True)
    assert [(r.key_a, r.key_b, r.label) for r in rows] == [
        ("w001", "w002", "comparable"),
        ("w003", "w004", "incomparable"),
    ]
    rows = parse_pairs('{"key_a": "w001", "key_b": "w002"}\n', labelled=False)
    assert (rows[0].line, rows[0].key_a) == (1, "w001")


# --- Study settings -----------------------------------------------------------------------------


def test_staff_create_a_study_and_every_change_is_audited(space, staff, study_admin, study):
    created = setup.study_save(user=staff, data=settings_data(space))
    assert created.stop_at_target
    assert created.pool == Study.Pool.ALL
    assert AuditEvent.objects.filter(action="study.create", study_id=created.pk).exists()
    with pytest.raises(NotAllowed):
        setup.study_save(user=study_admin, data=settings_data(space, name="Mine"))

    changed = setup.study_save(
        user=study_admin, study=study, data=settings_data(space, name=study.name, overlap=3)
    )
    assert changed.overlap == 3
    event = AuditEvent.objects.filter(action="study.change", study_id=study.pk).get()
    assert event.detail["changes"]["overlap"] == [2, 3]


def test_study_rules_refuse_and_write_nothing(space, staff, study, annotator, reviewer):
    before = counts()
    with pytest.raises(Conflict, match="already exists"):
        setup.study_save(user=staff, data=settings_data(space, name=study.name))
    with pytest.raises(InvalidInput, match="at least one tag"):
        setup.study_save(user=staff, data=settings_data(space, pool=Study.Pool.TAGS))
    with pytest.raises(InvalidInput, match="between 0 and 1"):
        setup.study_save(user=staff, data=settings_data(space, gold_rate=1.5))
    with pytest.raises(NotAllowed):
        setup.study_save(user=reviewer, study=study, data=settings_data(space))
    with pytest.raises(NotAllowed):
        setup.study_save(user=annotator, study=study, data=settings_data(space))
    assert counts() == before


def test_the_space_of_a_study_with_answers_cannot_change(space, staff, study, annotator, items):
    other = make_space(name="other", seed=1)
    PairJudgment.objects.create(
        study=study, item_a=items[0], item_b=items[1], label="comparable", annotator=annotator
    )
    with pytest.raises(InvalidInput, match="cannot change"):
        setup.study_save(user=staff, study=study, data=settings_data(other, name=study.name))
    study.refresh_from_db()
    assert study.space_id == space.pk


def test_duplicate_copies_settings_and_pairs_but_no_answers(study, study_admin, items):
    GoldPair.objects.create(study=study, item_a=items[0], item_b=items[1], label="comparable")
    PairJudgment.objects.create(
        study=study, item_a=items[0], item_b=items[1], label="comparable", annotator=study_admin
    )
    copy = setup.study_duplicate(user=study_admin, study=study, name="Copy")
    assert (copy.overlap, copy.target_per_annotator, copy.space_id) == (
        study.overlap,
        study.target_per_annotator,
        study.space_id,
    )
    assert copy.gold_pairs.count() == 1
    assert copy.judgments.count() == 0
    assert Membership.objects.get(study=copy).user == study_admin
    with pytest.raises(Conflict):
        setup.study_duplicate(user=study_admin, study=study, name="Copy")


def test_archive_closes_and_hides_the_study(study, study_admin, annotator):
    setup.study_archive(user=study_admin, study=study, archive=True)
    study.refresh_from_db()
    assert study.archived_at is not None
    assert not study.is_active
    assert selectors.studies_for_user(user=annotator) == []
    assert selectors.studies_archived(user=study_admin) == [study]
    assert selectors.studies_archived(user=annotator) == []
    setup.study_archive(user=study_admin, study=study, archive=False)
    study.refresh_from_db()
    assert study.archived_at is None
    assert not study.is_active


# --- Item pool ----------------------------------------------------------------------------------


def test_pool_upload_defines_and_extends_the_pool(study, study_admin):
    done = setup.pool_upload(user=study_admin, study=study, keys=["w001", "w002", "w003"])
    assert done == {"keys": 3, "added": 3, "pool": 3}
    study.refresh_from_db()
    assert study.pool == Study.Pool.KEYS
    assert sorted(i.key for i in selectors.pool_items(study=study)) == ["w001", "w002", "w003"]
    assert len(selectors.study_pool(study=study)) == 3
    setup.pool_upload(user=study_admin, study=study, keys=["w004"])
    study.refresh_from_db()
    assert len(selectors.study_pool(study=study)) == 4  # the cache follows the pool's revision
    setup.pool_upload(user=study_admin, study=study, keys=["w010", "w011"], replace=True)
    assert sorted(i.key for i in selectors.pool_items(study=study)) == ["w010", "w011"]


def test_unknown_keys_are_all_listed_and_nothing_changes(study, study_admin):
    setup.pool_upload(user=study_admin, study=study, keys=["w001", "w002"])
    before = counts()
    with pytest.raises(InvalidInput) as error:
        setup.pool_upload(user=study_admin, study=study, keys=["w003", "nope", "zilch"])
    assert "2 unknown key(s)" in error.value.message
    assert "'nope'" in error.value.message
    assert "'zilch'" in error.value.message
    assert "Nothing was changed" in error.value.message
    assert counts() == before


def test_a_replacement_may_not_drop_items_of_gold_pairs(study, study_admin):
    setup.pool_upload(user=study_admin, study=study, keys=["w001", "w002", "w003"])
    setup.gold_pairs_upload(
        user=study_admin, study=study, rows=parse_pairs("w001,w002,1", labelled=True)
    )
    before = counts()
    with pytest.raises(InvalidInput, match="would leave the pool: w001, w002"):
        setup.pool_upload(user=study_admin, study=study, keys=["w003"], replace=True)
    assert counts() == before


# --- Candidate and gold pairs ---------------------------------------------------------------------


def test_candidate_pairs_come_first_in_the_sampler(study, study_admin, annotator):
    setup.candidate_pairs_upload(
        user=study_admin, study=study, rows=parse_pairs("w005,w001\nw007,w008", labelled=False)
    )
    keys = {
        tuple(sorted(Item.objects.filter(pk__in=p).values_list("key", flat=True)))
        for p in CandidatePair.objects.values_list("item_a_id", "item_b_id")
    }
    assert keys == {("w001", "w005"), ("w007", "w008")}
    first = next_pair(study=study, user=annotator)
    assert first.reason == "candidate"
    assert tuple(sorted((first.left.key, first.right.key))) in keys


def test_gold_upload_checks_every_key_against_the_pool(study, study_admin):
    setup.pool_upload(user=study_admin, study=study, keys=["w001", "w002", "w003"])
    before = counts()
    with pytest.raises(InvalidInput, match="1 unknown key.*not in this study's item pool.*'w009'"):
        setup.gold_pairs_upload(
            user=study_admin,
            study=study,
            rows=parse_pairs("w001,w002,1\nw001,w009,0", labelled=True),
        )
    assert counts() == before
    done = setup.gold_pairs_upload(
        user=study_admin, study=study, rows=parse_pairs("w002,w001,1\nw001,w003,0", labelled=True)
    )
    assert done == {"rows": 2, "added": 2, "relabelled": 0}
    preview = setup.pairs_resolve(study=study, rows=parse_pairs("w001,w002,0", labelled=True))
    assert preview[0].state == "changed"
    assert all(g.item_a_id < g.item_b_id for g in GoldPair.objects.all())


def test_a_cross_space_gold_pair_is_refused_by_the_service(study, study_admin, media_root):
    foreign = make_space(name="foreign", seed=3).items.order_by("row")[0]
    mine = study.space.items.order_by("row")[0]
    before = counts()
    with pytest.raises(InvalidInput, match="not in this study's pool"):
        gold_pair_set(
            study=study,
            user=study_admin,
            item_a_id=mine.pk,
            item_b_id=foreign.pk,
            label="comparable",
        )
    with pytest.raises(ValidationError, match="another embedding space"):
        GoldPair.objects.create(study=study, item_a=mine, item_b=foreign, label="comparable")
    assert counts() == before


def test_a_cross_space_gold_pair_is_refused_by_the_model_form(study, media_root):
    foreign = make_space(name="foreign", seed=3).items.order_by("row")[0]
    mine = study.space.items.order_by("row")[0]
    form = GoldPairForm(
        {"study": study.pk, "item_a": mine.pk, "item_b": foreign.pk, "label": "comparable"}
    )
    assert not form.is_valid()
    assert "another embedding space" in str(form.errors)
    tag = Tag.objects.create(name="few")
    study.pool, study.pool_revision = Study.Pool.TAGS, 1
    study.save()
    study.pool_tags.add(tag)
    other = study.space.items.order_by("row")[1]
    form = GoldPairForm(
        {"study": study.pk, "item_a": mine.pk, "item_b": other.pk, "label": "comparable"}
    )
    assert not form.is_valid()
    assert "not in this study's item pool" in " ".join(form.errors["__all__"])


def test_a_cross_space_gold_pair_is_refused_by_the_django_admin(study, client_for, media_root):
    superuser = make_user("root", is_staff=True, is_superuser=True)
    foreign = make_space(name="foreign", seed=3).items.order_by("row")[0]
    mine = study.space.items.order_by("row")[0]
    response = client_for(superuser).post(
        reverse("admin:annotation_goldpair_add"),
        {"study": study.pk, "item_a": mine.pk, "item_b": foreign.pk, "label": "comparable"},
    )
    assert response.status_code == 200  # the form again, with the error
    assert "another embedding space" in response.content.decode()
    assert GoldPair.objects.count() == 0


# --- Members and invitations ----------------------------------------------------------------------


def test_members_add_change_target_and_remove(study, study_admin, annotator, outsider, items):
    PairJudgment.objects.create(
        study=study, item_a=items[0], item_b=items[1], label="comparable", annotator=outsider
    )
    member = setup.member_add(
        user=study_admin, study=study, who="OUTSIDER@example.org", role="reviewer"
    )
    assert member.user == outsider
    assert member.role == "reviewer"
    with pytest.raises(Conflict, match="already a member"):
        setup.member_add(user=study_admin, study=study, who="outsider", role="annotator")
    with pytest.raises(InvalidInput, match="invite them instead"):
        setup.member_add(user=study_admin, study=study, who="ghost", role="annotator")
    with pytest.raises(InvalidInput, match="The role is one of"):
        setup.member_add(user=study_admin, study=study, who="ann", role="boss")

    annotator_membership = Membership.objects.get(user=annotator, study=study)
    setup.member_change(
        user=study_admin, membership=annotator_membership, role="annotator", target=3
    )
    assert selectors.progress_for(study=study, user=annotator).target == 3
    event = AuditEvent.objects.filter(action="membership.change").latest("id")
    assert event.detail["changes"]["target"] == [None, 3]

    setup.member_remove(user=study_admin, membership=member)
    assert PairJudgment.objects.filter(annotator=outsider).count() == 1  # answers stay
    own = Membership.objects.get(user=study_admin, study=study)
    with pytest.raises(NotAllowed, match="only admin"):
        setup.member_remove(user=study_admin, membership=own)
    with pytest.raises(NotAllowed):
        setup.member_add(user=annotator, study=study, who="outsider", role="admin")


def test_an_invitation_creates_the_account_and_its_link_sets_the_password(
    study, study_admin, client_for, client
):
    page = client_for(study_admin).post(
        reverse("annotation:study-members", args=[study.pk]),
        {
            "action": "invite",
            "invite-username": "newbie",
            "invite-email": "newbie@example.org",
            "invite-role": "annotator",
        },
    )
    assert page.status_code == 200, page.content.decode()[:2000]
    link = re.search(r'id="invitation-link" value="([^"]+)"', page.content.decode()).group(1)
    assert len(mail.outbox) == 1
    assert link in mail.outbox[0].body
    newbie = Membership.objects.get(study=study, user__username="newbie").user
    assert not newbie.has_usable_password()
    assert AuditEvent.objects.filter(action="membership.invite", study_id=study.pk).exists()

    form = client.get(link, follow=True)
    assert b"Choose a password" in form.content
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a-long-enough-pass-42", "new_password2": "a-long-enough-pass-42"},
    )
    assert done.status_code == 302
    assert done["Location"] == reverse("annotation:study-list")
    newbie.refresh_from_db()
    assert newbie.check_password("a-long-enough-pass-42")
    again = client.get(link, follow=True)  # used once: no longer valid
    assert b"does not work" in again.content


def test_invitation_rules(study, study_admin, annotator):
    before = counts()
    with pytest.raises(Conflict, match="taken"):
        setup.member_invite(
            user=study_admin,
            study=study,
            username="ANN",
            email="",
            role="annotator",
            link_for=lambda u, t: "x",
        )
    with pytest.raises(InvalidInput, match="not an e-mail address"):
        setup.member_invite(
            user=study_admin,
            study=study,
            username="x1",
            email="nope",
            role="annotator",
            link_for=lambda u, t: "x",
        )
    with pytest.raises(NotAllowed):
        setup.member_invite(
            user=annotator,
            study=study,
            username="x2",
            email="",
            role="annotator",
            link_for=lambda u, t: "x",
        )
    assert counts() == before


# --- Finishing ------------------------------------------------------------------------------------


def test_reaching_the_target_leads_to_the_completion_page(study, annotator, client_for, items):
    study.stop_at_target, study.target_per_annotator = True, 2
    study.save()
    client = client_for(annotator)
    for b in (items[1], items[2]):
        PairJudgment.objects.create(
            study=study,
            item_a=items[0],
            item_b=b,
            label="comparable",
            annotator=annotator,
            client_id=uuid.uuid4(),
        )
    answer = client.get(reverse("api-next-pair", args=[study.pk])).json()
    assert answer["done"] is True
    assert answer["complete"] is True
    label = client.get(reverse("annotation:label", args=[study.pk]))
    assert label.status_code == 302
    assert label["Location"] == reverse("annotation:study-done", args=[study.pk])
    done = client.get(label["Location"]).content.decode()
    assert "Thank you" in done
    assert "What happens next" in done
    more = client.post(
        reverse("api-judgments", args=[study.pk]),
        {
            "item_a": items[0].pk,
            "item_b": items[5].pk,
            "label": "comparable",
            "client_id": str(uuid.uuid4()),
        },
        format="json",
    )
    assert more.status_code == 400
    assert "reached your target" in more.json()["detail"]
    assert PairJudgment.objects.filter(annotator=annotator).count() == 2


def test_progress_never_shows_more_than_the_target(study, annotator, client_for, items):
    study.target_per_annotator = 2
    study.save()
    for b in items[1:5]:
        PairJudgment.objects.create(
            study=study,
            item_a=items[0],
            item_b=b,
            label="comparable",
            annotator=annotator,
            client_id=uuid.uuid4(),
        )
    client = client_for(annotator)
    for name in ("annotation:label", "annotation:study-detail"):
        text = client.get(reverse(name, args=[study.pk])).content.decode()
        assert not re.search(r"4</strong> of 2|>4</span> / <span id=\"target\">2", text), name
    label = client.get(reverse("annotation:label", args=[study.pk])).content.decode()
    assert '<span id="answered">2</span> / <span id="target">2</span>' in label
    assert "+2 beyond the target" in label
    # The API keeps going when the study does not stop at the target.
    assert client.get(reverse("api-next-pair", args=[study.pk])).json()["done"] is False


# --- Pages ----------------------------------------------------------------------------------------


def test_new_study_page_creates_a_study_and_shows_form_errors(space, staff, client_for):
    client = client_for(staff)
    bad = client.post(
        reverse("annotation:study-new"),
        {
            "name": "",
            "mode": "pairs",
            "space": space.pk,
            "pool": "all",
            "strategy": "random",
            "overlap": 0,
            "gold_rate": 2,
            "target_per_annotator": 5,
        },
    )
    assert bad.status_code == 400
    text = bad.content.decode()
    assert "This field is required" in text
    assert "between 0 and 1" in text
    assert Study.objects.count() == 0
    good = client.post(
        reverse("annotation:study-new"),
        {
            "name": "Team study",
            "mode": "pairs",
            "space": space.pk,
            "pool": "all",
            "strategy": "random",
            "overlap": 2,
            "gold_rate": 0.2,
            "target_per_annotator": 5,
            "instructions": "**bold**",
            "is_active": "on",
            "stop_at_target": "on",
        },
    )
    study = Study.objects.get(name="Team study")
    assert good.status_code == 302
    assert study.stop_at_target
    preview = client.post(
        reverse("annotation:markdown-preview"), {"text": "**b**<script>x</script>"}
    )
    assert preview.json()["html"] == "<p><strong>b</strong></p>"


def test_upload_pages_show_unknown_keys_and_write_nothing(study, study_admin, client_for):
    client = client_for(study_admin)
    before = counts()
    upload = SimpleUploadedFile("keys.csv", b"key\nw001\nmissing-one\n", content_type="text/csv")
    response = client.post(reverse("annotation:study-items", args=[study.pk]), {"file": upload})
    assert response.status_code == 400
    assert "1 unknown key(s)" in response.content.decode()
    assert "missing-one" in response.content.decode()
    binary = SimpleUploadedFile("keys.csv", b"\xff\xfe\x00bad", content_type="text/csv")
    response = client.post(reverse("annotation:study-items", args=[study.pk]), {"file": binary})
    assert response.status_code == 400
    assert "not UTF-8" in response.content.decode()
    assert counts() == before
    response = client.post(
        reverse("annotation:study-gold", args=[study.pk]), {"text": "w001,w002,comparable"}
    )
    assert response.status_code == 200
    assert "Preview: 1 pairs" in response.content.decode()
    assert counts() == before  # a preview writes nothing
    response = client.post(
        reverse("annotation:study-gold", args=[study.pk]),
        {"text": "w001,w002,comparable", "confirm": "1"},
    )
    assert response.status_code == 302
    assert GoldPair.objects.count() == 1


def test_reviewers_read_the_set_up_and_annotators_see_none(
    study, reviewer, annotator, outsider, client_for
):
    url = reverse("annotation:study-members", args=[study.pk])
    assert client_for(reviewer).get(url).status_code == 200
    assert client_for(reviewer).post(url, {"action": "add"}).status_code == 403
    assert client_for(annotator).get(url).status_code == 403
    assert client_for(outsider).get(url).status_code == 404


def test_parquet_exports_hold_the_same_rows_as_csv(study, reviewer, annotator, client_for, items):
    PairJudgment.objects.create(
        study=study, item_a=items[0], item_b=items[1], label="comparable", annotator=annotator
    )
    client = client_for(reviewer)
    response = client.get(reverse("api-export-judgments", args=[study.pk, "parquet"]))
    assert response.status_code == 200
    table = pq.read_table(io.BytesIO(b"".join(response.streaming_content)))
    assert table.num_rows == 1
    assert table.column("item_a_key").to_pylist() == ["w000"]
    groups = client.get(reverse("api-export-groups", args=[study.pk, "parquet"]))
    assert pq.read_table(io.BytesIO(b"".join(groups.streaming_content))).num_rows == 0


def test_archived_studies_are_listed_apart_for_their_admins(
    study, study_admin, annotator, client_for
):
    setup.study_archive(user=study_admin, study=study, archive=True)
    admin_list = client_for(study_admin).get(reverse("annotation:study-list")).content.decode()
    assert 'id="archived-studies"' in admin_list
    assert reverse("annotation:study-settings", args=[study.pk]) in admin_list
    annotator_list = client_for(annotator).get(reverse("annotation:study-list")).content.decode()
    assert study.name not in annotator_list
