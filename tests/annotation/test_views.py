"""Pages: study list and detail, labelling and group pages, the reviewer's tables, the
completion page and the progress shown."""

from __future__ import annotations

import re
import uuid

from django.test import Client
from django.urls import reverse

from annotation.groups.services import group_create
from annotation.labelling.services import judgment_create
from annotation.models import PairJudgment, Study

from .factories import make_study


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_pages_need_a_login(study):
    response = Client().get(f"/studies/{study.pk}/label/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_study_list_shows_the_users_studies_and_links_their_pages(
    study, space, annotator, outsider
):
    make_study(space=space, name="Not yours")
    html = page_client(annotator).get("/studies/").content.decode()
    assert "Test study" in html
    assert "Not yours" not in html
    assert f"/studies/{study.pk}/label/" in html
    assert f"/studies/{study.pk}/review/" not in html  # annotators do not review
    assert "not a member of any study" in page_client(outsider).get("/studies/").content.decode()


def test_home_links_to_the_studies(study, annotator):
    html = page_client(annotator).get("/").content.decode()
    assert f"/studies/{study.pk}/" in html
    assert 'href="/studies/"' in html


def test_instructions_are_markdown_and_sanitised(study, annotator):
    study.instructions = (
        "Answer **quickly**.\n\n<script>alert(1)</script><a href='javascript:x'>x</a>"
    )
    study.save()
    html = page_client(annotator).get(f"/studies/{study.pk}/").content.decode()
    assert "<strong>quickly</strong>" in html
    assert "<script>alert(1)" not in html
    assert "javascript:x" not in html


def test_labelling_page_for_members_only(study, annotator, outsider, staff):
    response = page_client(annotator).get(f"/studies/{study.pk}/label/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="label-app"' in html
    assert f'data-next-url="/api/studies/{study.pk}/next-pair/"' in html
    assert 'data-target="20"' in html
    assert "js/label.js" in html
    assert 'name="csrf-token"' in html
    assert page_client(outsider).get(f"/studies/{study.pk}/label/").status_code == 404
    assert page_client(staff).get(f"/studies/{study.pk}/label/").status_code == 200


def test_pages_follow_the_study_mode(study, annotator):
    Study.objects.filter(pk=study.pk).update(mode=Study.Mode.PAIRS)
    assert page_client(annotator).get(f"/studies/{study.pk}/groups/").status_code == 404
    Study.objects.filter(pk=study.pk).update(mode=Study.Mode.GROUPS)
    assert page_client(annotator).get(f"/studies/{study.pk}/label/").status_code == 404
    response = page_client(annotator).get(f"/studies/{study.pk}/groups/")
    assert response.status_code == 200
    assert "js/groups.js" in response.content.decode()


def test_review_page_is_for_reviewers_and_admins(
    study,
    annotator,
    other_annotator,
    reviewer,
    study_admin,
    items,
    django_assert_max_num_queries,
):
    for user, b in [(annotator, items[1]), (other_annotator, items[2])]:
        judgment_create(
            study=study,
            annotator=user,
            item_a_id=items[0].pk,
            item_b_id=b.pk,
            label="incomparable",
            client_id=uuid.uuid4(),
            elapsed_ms=400,
        )
    group_create(study=study, user=annotator, name="pair of w", member_ids=[items[3].pk])
    assert page_client(annotator).get(f"/studies/{study.pk}/review/").status_code == 403
    client = page_client(reviewer)
    # 15: three of them count the disagreements resolved (marks, label counts, adjudications)
    with django_assert_max_num_queries(15):
        response = client.get(f"/studies/{study.pk}/review/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "ann2" in html
    assert "w002" in html
    assert "pair of w" in html
    filtered = (
        page_client(study_admin)
        .get(f"/studies/{study.pk}/review/", {"annotator": other_annotator.pk})
        .content.decode()
    )
    assert "w002" in filtered
    assert "w001" not in filtered


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
