"""Study set-up services: every rule (bad input → a clear message and nothing written), and the
model-level gold pair rule (service, form, admin)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation import selectors
from annotation.admin import GoldPairForm
from annotation.labelling.sampling import next_pair
from annotation.models import CandidatePair, GoldPair, Membership, PairJudgment, Study
from annotation.setup import pairs, pool, studies
from annotation.setup.files import parse_pairs
from audit.models import AuditEvent
from common.errors import Conflict, InvalidInput, NotAllowed
from spaces.models import Item, Tag

from .factories import make_space, make_user


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


# --- Study settings -----------------------------------------------------------------------------


def test_staff_create_a_study_and_every_change_is_audited(space, staff, study_admin, study):
    created = studies.study_save(user=staff, data=settings_data(space))
    assert created.stop_at_target
    assert created.pool == Study.Pool.ALL
    assert AuditEvent.objects.filter(action="study.create", study_id=created.pk).exists()
    with pytest.raises(NotAllowed):
        studies.study_save(user=study_admin, data=settings_data(space, name="Mine"))

    changed = studies.study_save(
        user=study_admin, study=study, data=settings_data(space, name=study.name, overlap=3)
    )
    assert changed.overlap == 3
    event = AuditEvent.objects.filter(action="study.change", study_id=study.pk).get()
    assert event.detail["changes"]["overlap"] == [2, 3]


def test_study_rules_refuse_and_write_nothing(space, staff, study, annotator, reviewer):
    before = counts()
    with pytest.raises(Conflict, match="already exists"):
        studies.study_save(user=staff, data=settings_data(space, name=study.name))
    with pytest.raises(InvalidInput, match="at least one tag"):
        studies.study_save(user=staff, data=settings_data(space, pool=Study.Pool.TAGS))
    with pytest.raises(InvalidInput, match="between 0 and 1"):
        studies.study_save(user=staff, data=settings_data(space, gold_rate=1.5))
    with pytest.raises(NotAllowed):
        studies.study_save(user=reviewer, study=study, data=settings_data(space))
    with pytest.raises(NotAllowed):
        studies.study_save(user=annotator, study=study, data=settings_data(space))
    assert counts() == before


def test_the_space_of_a_study_with_answers_cannot_change(space, staff, study, annotator, items):
    other = make_space(name="other", seed=1)
    PairJudgment.objects.create(
        study=study, item_a=items[0], item_b=items[1], label="comparable", annotator=annotator
    )
    with pytest.raises(InvalidInput, match="cannot change"):
        studies.study_save(user=staff, study=study, data=settings_data(other, name=study.name))
    study.refresh_from_db()
    assert study.space_id == space.pk


def test_duplicate_copies_settings_and_pairs_but_no_answers(study, study_admin, items):
    GoldPair.objects.create(study=study, item_a=items[0], item_b=items[1], label="comparable")
    PairJudgment.objects.create(
        study=study, item_a=items[0], item_b=items[1], label="comparable", annotator=study_admin
    )
    copy = studies.study_duplicate(user=study_admin, study=study, name="Copy")
    assert (copy.overlap, copy.target_per_annotator, copy.space_id) == (
        study.overlap,
        study.target_per_annotator,
        study.space_id,
    )
    assert copy.gold_pairs.count() == 1
    assert copy.judgments.count() == 0
    assert Membership.objects.get(study=copy).user == study_admin
    with pytest.raises(Conflict):
        studies.study_duplicate(user=study_admin, study=study, name="Copy")


def test_archive_closes_and_hides_the_study(study, study_admin, annotator):
    studies.study_archive(user=study_admin, study=study, archive=True)
    study.refresh_from_db()
    assert study.archived_at is not None
    assert not study.is_active
    assert selectors.studies_for_user(user=annotator) == []
    assert selectors.studies_archived(user=study_admin) == [study]
    assert selectors.studies_archived(user=annotator) == []
    studies.study_archive(user=study_admin, study=study, archive=False)
    study.refresh_from_db()
    assert study.archived_at is None
    assert not study.is_active


# --- Item pool ----------------------------------------------------------------------------------


def test_pool_upload_defines_and_extends_the_pool(study, study_admin):
    done = pool.pool_upload(user=study_admin, study=study, keys=["w001", "w002", "w003"])
    assert done == {"keys": 3, "added": 3, "pool": 3}
    study.refresh_from_db()
    assert study.pool == Study.Pool.KEYS
    assert sorted(i.key for i in selectors.pool_items(study=study)) == ["w001", "w002", "w003"]
    assert len(selectors.study_pool(study=study)) == 3
    pool.pool_upload(user=study_admin, study=study, keys=["w004"])
    study.refresh_from_db()
    assert len(selectors.study_pool(study=study)) == 4  # the cache follows the pool's revision
    pool.pool_upload(user=study_admin, study=study, keys=["w010", "w011"], replace=True)
    assert sorted(i.key for i in selectors.pool_items(study=study)) == ["w010", "w011"]


def test_unknown_keys_are_all_listed_and_nothing_changes(study, study_admin):
    pool.pool_upload(user=study_admin, study=study, keys=["w001", "w002"])
    before = counts()
    with pytest.raises(InvalidInput) as error:
        pool.pool_upload(user=study_admin, study=study, keys=["w003", "nope", "zilch"])
    assert "2 unknown key(s)" in error.value.message
    assert "'nope'" in error.value.message
    assert "'zilch'" in error.value.message
    assert "Nothing was changed" in error.value.message
    assert counts() == before


def test_a_replacement_may_not_drop_items_of_gold_pairs(study, study_admin):
    pool.pool_upload(user=study_admin, study=study, keys=["w001", "w002", "w003"])
    pairs.gold_pairs_upload(
        user=study_admin, study=study, rows=parse_pairs("w001,w002,1", labelled=True)
    )
    before = counts()
    with pytest.raises(InvalidInput, match="would leave the pool: w001, w002"):
        pool.pool_upload(user=study_admin, study=study, keys=["w003"], replace=True)
    assert counts() == before


# --- Candidate and gold pairs ---------------------------------------------------------------------


def test_candidate_pairs_come_first_in_the_sampler(study, study_admin, annotator):
    pairs.candidate_pairs_upload(
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


def test_the_candidate_share_mixes_uploaded_pairs_with_the_strategy(study, study_admin, annotator):
    """Uploaded candidate pairs always came first (189 of them, and switching the strategy to
    "targeted" changed nothing). ``candidate_rate`` draws that share of the pairs from them,
    the strategy the rest; 1 keeps them all first."""
    rows = "\n".join(f"w{i:03d},w{i + 1:03d}" for i in range(1, 20, 2))
    pairs.candidate_pairs_upload(
        user=study_admin, study=study, rows=parse_pairs(rows, labelled=False)
    )
    rng = np.random.default_rng(7)

    def reasons(n: int) -> Counter:
        study.refresh_from_db()
        return Counter(next_pair(study=study, user=annotator, rng=rng).reason for _ in range(n))

    assert reasons(50) == {"candidate": 50}  # the default, 1: all of them first
    studies.study_save(
        user=study_admin, study=study, data=settings_data(study.space, candidate_rate=0.5)
    )
    drawn = reasons(300)
    assert set(drawn) == {"candidate", "random"}
    assert 0.4 < drawn["candidate"] / 300 < 0.6  # ±3.5 binomial standard deviations
    studies.study_save(
        user=study_admin, study=study, data=settings_data(study.space, candidate_rate=0.0)
    )
    assert reasons(50) == {"random": 50}
    with pytest.raises(InvalidInput, match="share of candidate pairs is between 0 and 1"):
        studies.study_save(
            user=study_admin, study=study, data=settings_data(study.space, candidate_rate=1.5)
        )


def test_gold_upload_checks_every_key_against_the_pool(study, study_admin):
    pool.pool_upload(user=study_admin, study=study, keys=["w001", "w002", "w003"])
    before = counts()
    with pytest.raises(InvalidInput, match="1 unknown key.*not in this study's item pool.*'w009'"):
        pairs.gold_pairs_upload(
            user=study_admin,
            study=study,
            rows=parse_pairs("w001,w002,1\nw001,w009,0", labelled=True),
        )
    assert counts() == before
    done = pairs.gold_pairs_upload(
        user=study_admin, study=study, rows=parse_pairs("w002,w001,1\nw001,w003,0", labelled=True)
    )
    assert done == {"rows": 2, "added": 2, "relabelled": 0}
    preview = pairs.pairs_resolve(study=study, rows=parse_pairs("w001,w002,0", labelled=True))
    assert preview[0].state == "changed"
    assert all(g.item_a_id < g.item_b_id for g in GoldPair.objects.all())


def test_a_cross_space_gold_pair_is_refused_by_the_service(study, study_admin, media_root):
    foreign = make_space(name="foreign", seed=3).items.order_by("row")[0]
    mine = study.space.items.order_by("row")[0]
    before = counts()
    with pytest.raises(InvalidInput, match="not in this study's pool"):
        pairs.gold_pair_set(
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


def test_study_admins_set_gold_pairs_canonically(study, study_admin, annotator, items):
    gold = pairs.gold_pair_set(
        study=study,
        user=study_admin,
        item_a_id=items[4].pk,
        item_b_id=items[1].pk,
        label="incomparable",
    )
    assert (gold.item_a_id, gold.item_b_id) == (items[1].pk, items[4].pk)
    again = pairs.gold_pair_set(
        study=study,
        user=study_admin,
        item_a_id=items[1].pk,
        item_b_id=items[4].pk,
        label="comparable",
    )
    assert again.pk == gold.pk
    assert GoldPair.objects.get().label == "comparable"
    with pytest.raises(NotAllowed):
        pairs.gold_pair_set(
            study=study,
            user=annotator,
            item_a_id=items[0].pk,
            item_b_id=items[1].pk,
            label="comparable",
        )
    with pytest.raises(InvalidInput):
        pairs.gold_pair_set(
            study=study,
            user=study_admin,
            item_a_id=items[0].pk,
            item_b_id=items[1].pk,
            label="unsure",
        )


def test_the_admin_form_stores_gold_pairs_canonically(study, items):
    form = GoldPairForm(
        data={
            "study": study.pk,
            "item_a": items[7].pk,
            "item_b": items[3].pk,
            "label": "comparable",
        }
    )
    assert form.is_valid(), form.errors
    gold = form.save()
    assert (gold.item_a_id, gold.item_b_id) == (items[3].pk, items[7].pk)
