"""Skips (S) and comments (C) on pairs: neither is an answer; a skipped pair is not offered to
that annotator again; comments reach the reviewers; both are idempotent and refuse bad input."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from django.urls import reverse

from annotation.labelling import skips
from annotation.labelling.sampling import next_pair
from annotation.models import PairComment, PairJudgment, PairSkip
from common.errors import Conflict, InvalidInput, NotFound


def url(study, tail: str) -> str:
    return f"/api/studies/{study.pk}/{tail}"


def test_a_skip_is_not_an_answer_and_the_pair_is_never_offered_again(
    study, annotator, other_annotator, items
):
    study.strategy = "random"
    study.save()
    a, b = items[0], items[1]
    skip, created = skips.pair_skip(study=study, user=annotator, item_a_id=b.pk, item_b_id=a.pk)
    assert created
    assert (skip.item_a_id, skip.item_b_id) == (a.pk, b.pk)  # canonical
    assert PairJudgment.objects.count() == 0
    _, again = skips.pair_skip(study=study, user=annotator, item_a_id=a.pk, item_b_id=b.pk)
    assert again is False  # a retry stores nothing twice
    assert PairSkip.objects.count() == 1
    rng = np.random.default_rng(0)
    offered = {
        tuple(sorted((p.left.pk, p.right.pk)))
        for p in (next_pair(study=study, user=annotator, rng=rng) for _ in range(300))
    }
    assert (a.pk, b.pk) not in offered
    assert len(offered) > 20  # the sampler still has everything else
    others = {
        tuple(sorted((p.left.pk, p.right.pk)))
        for p in (next_pair(study=study, user=other_annotator, rng=rng) for _ in range(600))
    }
    assert (a.pk, b.pk) in others  # only the one who skipped it is spared


def test_skips_and_comments_refuse_what_an_answer_refuses(study, annotator, outsider, items):
    with pytest.raises(NotFound):
        skips.pair_skip(study=study, user=outsider, item_a_id=items[0].pk, item_b_id=items[1].pk)
    with pytest.raises(InvalidInput, match="two different items"):
        skips.pair_skip(study=study, user=annotator, item_a_id=items[0].pk, item_b_id=items[0].pk)
    with pytest.raises(InvalidInput, match="not in this study's pool"):
        skips.pair_skip(study=study, user=annotator, item_a_id=items[0].pk, item_b_id=10**9)
    with pytest.raises(InvalidInput, match="needs some text"):
        skips.pair_comment(
            study=study,
            user=annotator,
            item_a_id=items[0].pk,
            item_b_id=items[1].pk,
            text=" \t \n ",
            client_id=uuid.uuid4(),
        )
    assert PairSkip.objects.count() == PairComment.objects.count() == 0


def test_a_comment_is_idempotent_on_its_client_id_and_reviewers_see_it(
    study, annotator, reviewer, items, client
):
    client_id = uuid.uuid4()
    pair = {"item_a_id": items[2].pk, "item_b_id": items[3].pk}
    note = "  both  are first names ;  one is also a place "
    first, created = skips.pair_comment(
        study=study, user=annotator, text=note, client_id=client_id, **pair
    )
    assert created
    assert first.text == "both are first names ; one is also a place"
    again, created = skips.pair_comment(
        study=study, user=annotator, text=note, client_id=client_id, **pair
    )
    assert (again.pk, created) == (first.pk, False)
    with pytest.raises(Conflict):
        skips.pair_comment(
            study=study, user=annotator, text="something else", client_id=client_id, **pair
        )
    client.force_login(reviewer)
    page = client.get(reverse("annotation:review", args=[study.pk])).content.decode()
    section = page[page.index('id="review-comments"') :].split("</table>")[0]
    assert "both are first names ; one is also a place" in section
    assert "ann" in section


def test_the_api_answers_201_then_200_and_400_for_bad_bodies(study, annotator, items, client_for):
    api = client_for(annotator)
    body = {"item_a": items[4].pk, "item_b": items[5].pk}
    assert api.post(url(study, "skips/"), body, format="json").status_code == 201
    assert api.post(url(study, "skips/"), body, format="json").status_code == 200
    too_long = body | {"text": "x" * 501, "client_id": str(uuid.uuid4())}
    response = api.post(url(study, "comments/"), too_long, format="json")
    assert response.status_code == 400
    assert "text" in response.json()
    ok = body | {"text": "hm", "client_id": str(uuid.uuid4())}
    assert api.post(url(study, "comments/"), ok, format="json").status_code == 201
    assert api.post(url(study, "comments/"), ok, format="json").status_code == 200
