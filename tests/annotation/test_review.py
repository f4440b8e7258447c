"""Adjudication: disagreements listed most important first, filters, progress, decisions and
who may make them (annotation/review/)."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Adjudication, GoldPair, Membership, PairJudgment, Source
from annotation.review import selectors, services
from annotation.review.selectors import Agreement
from common.errors import InvalidInput, NotAllowed

from .factories import make_metric_version, make_user

C, N, U = "comparable", "incomparable", "unsure"


def answer(study, user, a, b, label):
    a, b = (a, b) if a.pk < b.pk else (b, a)
    return PairJudgment.objects.create(
        study=study, annotator=user, item_a=a, item_b=b, label=label, source=Source.ANNOTATED
    )


@pytest.fixture
def people(study):
    return [make_user(f"p{i}", study=study, role=Membership.Role.ANNOTATOR) for i in range(4)]


@pytest.fixture
def answered(study, items, people):
    """Four shared pairs: split 2-2, split 2-1, unanimous 3-0, and 1-1 with an unsure."""
    p = people
    pairs = {
        "even": (items[0], items[1], [C, N, C, N]),
        "lean": (items[2], items[3], [C, C, N]),
        "agreed": (items[4], items[5], [N, N, N]),
        "unsure": (items[6], items[7], [C, U]),
    }
    for a, b, labels in pairs.values():
        for user, label in zip(p, labels, strict=False):
            answer(study, user, a, b, label)
    answer(study, p[0], items[8], items[9], C)  # answered once: not shared
    return {name: (min(a.pk, b.pk), max(a.pk, b.pk)) for name, (a, b, _) in pairs.items()}


def refs(review):
    return [(p.item_a, p.item_b) for p in review.pairs]


def test_without_a_metric_the_most_evenly_split_disagreements_come_first(study, answered):
    review = selectors.review_pairs(study=study)
    # 2-2 (split 1/2) and 1-1 (1/2) before 2-1 (1/3); the tie: more answers first.
    assert refs(review) == [answered["even"], answered["unsure"], answered["lean"]]
    assert (review.shared, review.disagreements, review.resolved) == (4, 3, 0)
    assert review.metric == ""
    assert refs(selectors.review_pairs(study=study, agreement=Agreement.AGREED)) == [
        answered["agreed"]
    ]


def test_under_the_current_metric_the_most_uncertain_pairs_come_first(study, answered, space):
    sigma = np.diag(np.linspace(0.05, 0.6, space.dimension))
    make_metric_version(study=study, method="explore", sigma=sigma, label="explore")
    matrix = np.load(space.matrix.path)
    rows = dict(study.space.items.values_list("pk", "row"))

    def p_comparable(pair):  # EXPLORE's model, computed here from the matrix file
        z = matrix[rows[pair[0]]] - matrix[rows[pair[1]]]
        return 2 / (1 + np.exp(z @ sigma @ z))

    disagreed = [answered[k] for k in ("even", "lean", "unsure")]
    expected = sorted(disagreed, key=lambda pair: abs(p_comparable(pair) - 0.5))
    review = selectors.review_pairs(study=study)
    assert refs(review) == expected
    assert "explore" in review.metric
    for pair in review.pairs:
        assert pair.p_comparable == pytest.approx(p_comparable((pair.item_a, pair.item_b)))


def test_filters_by_annotator_label_and_agreement(study, answered, people, reviewer):
    only_p3 = selectors.review_pairs(study=study, annotator_id=people[3].pk)
    assert refs(only_p3) == [answered["even"]]  # p3 answered the 2-2 pair only
    with_unsure = selectors.review_pairs(study=study, label=U)
    assert refs(with_unsure) == [answered["unsure"]]
    a, b = answered["lean"]
    services.adjudicate(study=study, user=reviewer, item_a_id=b, item_b_id=a, label=C)
    assert answered["lean"] not in refs(selectors.review_pairs(study=study))
    assert refs(selectors.review_pairs(study=study, agreement=Agreement.RESOLVED)) == [
        answered["lean"]
    ]
    everything = selectors.review_pairs(study=study, agreement=Agreement.DISAGREED)
    assert len(everything.pairs) == 3
    assert everything.resolved == 1
    assert selectors.disagreement_progress(study=study) == (1, 3)


def test_reviewers_and_admins_decide_annotators_may_not(
    study, answered, people, reviewer, study_admin, django_capture_on_commit_callbacks
):
    a, b = answered["even"]
    with pytest.raises(NotAllowed):
        services.adjudicate(study=study, user=people[0], item_a_id=a, item_b_id=b, label=C)
    with pytest.raises(InvalidInput, match="comparable or incomparable"):
        services.adjudicate(study=study, user=reviewer, item_a_id=a, item_b_id=b, label=U)
    with pytest.raises(NotAllowed, match="gold"):  # gold pairs stay an admin's
        services.adjudicate(
            study=study, user=reviewer, item_a_id=a, item_b_id=b, label=C, gold=True
        )
    assert not Adjudication.objects.exists()
    assert not GoldPair.objects.exists()
    with django_capture_on_commit_callbacks() as callbacks:
        first = services.adjudicate(study=study, user=reviewer, item_a_id=a, item_b_id=b, label=C)
    assert len(callbacks) == 1  # the refit hook (annotation.hooks.feedback_changed)
    second = services.adjudicate(
        study=study, user=study_admin, item_a_id=a, item_b_id=b, label=N, gold=True
    )
    assert second.pk > first.pk
    assert list(Adjudication.objects.values_list("label", flat=True)) == [N]
    assert GoldPair.objects.get(study=study).label == N
    services.adjudication_remove(study=study, user=reviewer, item_a_id=a, item_b_id=b)
    assert not Adjudication.objects.exists()


def test_a_pair_nobody_answered_cannot_be_resolved(study, items, reviewer, answered):
    with pytest.raises(InvalidInput, match="Nobody answered"):
        services.adjudicate(
            study=study, user=reviewer, item_a_id=items[20].pk, item_b_id=items[21].pk, label=C
        )
    with pytest.raises(InvalidInput, match="two different"):
        services.adjudicate(
            study=study, user=reviewer, item_a_id=items[0].pk, item_b_id=items[0].pk, label=C
        )


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_page_shows_the_pair_its_answers_and_comments_and_resolves_it(
    study, answered, reviewer, people, django_assert_max_num_queries
):
    a, b = answered["even"]
    PairJudgment.objects.filter(item_a_id=a, item_b_id=b, annotator=people[1]).update(
        elapsed_ms=1234
    )
    study.pair_comments.create(
        author=people[0],
        item_a_id=a,
        item_b_id=b,
        text="same name, other spelling",
        client_id="6f1c7a52-5a49-4a4e-9b8e-3f5d2a9b1c99",
    )
    url = reverse("annotation:adjudication", args=[study.pk])
    client = client_of(reviewer)
    with django_assert_max_num_queries(20):
        html = client.get(url).content.decode()
    assert "0 of 3 disagreements resolved" in html
    assert "same name, other spelling" in html
    assert "1234" in html
    assert f'data-item-a="{a}"' in html  # the most evenly split pair is shown first
    response = client.post(url + "?label=", {"item_a": a, "item_b": b, "label": N})
    assert response.status_code == 302
    assert Adjudication.objects.get().label == N
    html = client.get(response.url).content.decode()
    assert "1 of 3 disagreements resolved" in html
    assert f'data-item-a="{a}"' not in html
    review_page = client.get(reverse("annotation:review", args=[study.pk])).content.decode()
    assert "1 of 3 disagreements resolved" in review_page
    bad = client.post(url, {"item_a": a, "item_b": b, "label": U})
    assert bad.status_code == 400
    assert "Select a valid choice" in bad.content.decode()
    assert client_of(people[0]).get(url).status_code == 403


def test_records_are_compared_field_by_field(study, items, reviewer, people):
    left, right = items[10], items[11]
    left.payload = {"id": left.key, "age": 30, "job": "clerk"}
    right.payload = {"id": right.key, "age": 30, "job": "nurse"}
    left.kind = right.kind = "record"
    left.save()
    right.save()
    answer(study, people[0], left, right, C)
    answer(study, people[1], left, right, N)
    html = client_of(reviewer).get(reverse("annotation:adjudication", args=[study.pk])).content
    html = html.decode()
    assert "≠ differs" in html
    assert "nurse" in html
    assert html.count("≠ differs") == 1  # job only: the key column and age are not marked


def test_the_reasons_of_a_disagreement_are_shown_with_its_answers(study, items, reviewer, people):
    left, right = items[10], items[11]
    left.payload = {"id": left.key, "age": 30, "job": "clerk"}
    right.payload = {"id": right.key, "age": 41, "job": "nurse"}
    left.save()
    right.save()
    answer(study, people[0], left, right, C)
    incomparable = answer(study, people[1], left, right, N)
    incomparable.reasons = ["job"]
    incomparable.save()
    despite = answer(study, people[2], left, right, C)
    despite.reasons = ["job", "age"]
    despite.save()
    html = client_of(reviewer).get(reverse("annotation:adjudication", args=[study.pk])).content
    html = html.decode()
    answers = html.split('id="pair-answers"')[1].split("</table>")[0]
    assert '<td class="reasons">job</td>' in answers
    assert '<td class="reasons">job, age</td>' in answers
    assert '<td class="reasons">—</td>' in answers
    job_row = html.split('data-cited="2"')[1].split("</tr>")[0]
    assert "p1: incomparable; p2: comparable" in job_row
    assert 'data-cited="1"' in html  # age, cited once


def test_the_api_lists_and_resolves(study, answered, reviewer, people, client_for):
    url = reverse("api-disagreements", args=[study.pk])
    data = client_for(reviewer).get(url).json()
    assert (data["resolved"], data["disagreements"], data["count"]) == (0, 3, 3)
    first = data["pairs"][0]
    assert (first["item_a"], first["item_b"]) == answered["even"]
    post = client_for(reviewer).post(
        reverse("api-adjudications", args=[study.pk]),
        {"item_a": first["item_b"], "item_b": first["item_a"], "label": C},
        format="json",
    )
    assert post.status_code == 201
    assert post.json()["label"] == C
    assert client_for(reviewer).get(url).json()["resolved"] == 1
    assert client_for(people[0]).get(url).status_code == 403
    assert client_for(reviewer).get(url, {"agreement": "maybe"}).status_code == 400


def test_with_every_disagreement_resolved_the_page_still_names_the_metric_and_marks_gold(
    study, items, answered, reviewer, space
):
    """Once all were resolved the page said "No metric fitted yet" while versions existed (no
    open pair left to score), and it did not say which pairs were gold pairs."""
    make_metric_version(
        study=study, method="explore", sigma=np.eye(space.dimension) * 0.1, label="explore"
    )
    a, b = answered["lean"]
    GoldPair.objects.create(study=study, item_a_id=a, item_b_id=b, label=C)
    for name in ("even", "lean", "unsure"):
        first, second = answered[name]
        services.adjudicate(study=study, user=reviewer, item_a_id=first, item_b_id=second, label=N)
    review = selectors.review_pairs(study=study)
    assert (review.disagreements, review.resolved, review.pairs) == (3, 3, [])
    assert "explore" in review.metric
    resolved = selectors.review_pairs(study=study, agreement=Agreement.RESOLVED)
    assert {(p.item_a, p.item_b): p.gold for p in resolved.pairs}[(a, b)] == C
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("annotation:adjudication", args=[study.pk])).content.decode()
    assert "No metric fitted yet" not in page
    assert "Every disagreement is resolved." in page
    listed = client.get(
        reverse("annotation:adjudication", args=[study.pk]), {"agreement": "resolved"}
    ).content.decode()
    assert 'data-gold="comparable"' in listed
