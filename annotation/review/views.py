"""The reviewer's pages: the review page (every answer, filterable; comments; groups; how many
disagreements are resolved) and the adjudication page (a study's shared pairs, disagreements
first, the most important to the fit on top; one pair at a time with both items, every answer
and comment; a decision with one key: 1 comparable, 2 incomparable). Reviewers and admins
(``annotation.access``)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_safe

from annotation import selectors as study_selectors
from annotation.access import Action, may, study_get
from annotation.review import selectors, services
from annotation.review.forms import AnswerFilterForm, DecisionForm, PairFilterForm
from annotation.serializers import error_text
from common.errors import InvalidInput, NotFound

LISTED = 50  # pairs listed under the one shown
REVIEW_PAGE = 100  # answers per page of the review page


@login_required
@require_safe
def review(request: HttpRequest, study_id: int) -> HttpResponse:
    """Every judgment (newest first, filterable), comments, groups and the disagreements."""
    study = study_get(request.user, study_id, Action.REVIEW, message=services.REFUSED_REVIEW)
    annotators = selectors.answering_annotators(study=study)
    form = AnswerFilterForm(request.GET or None, annotators=annotators)
    filters: dict = {}
    before = annotator_id = None
    if form.is_valid():
        data = form.cleaned_data
        annotator_id = data["annotator"]
        filters = {name: data[name] for name in ("label", "source") if data[name]}
        before = data["before"]
    elif form.is_bound:  # bad filters: the unfiltered table, a 400 and the reason on top
        messages.error(request, "Filters ignored: " + error_text(form.errors))
    rows = study_selectors.judgments_newest(
        study=study,
        limit=REVIEW_PAGE + 1,
        before_id=before,
        annotator_id=annotator_id,
        filters=filters,
    )
    next_query = None
    if len(rows) > REVIEW_PAGE:
        rows = rows[:REVIEW_PAGE]
        query = request.GET.copy()
        query["before"] = rows[-1].pk
        next_query = query.urlencode()
    counts = study_selectors.study_counts(study=study)
    resolved, disagreements = selectors.disagreement_progress(study=study)
    context = {
        "study": study,
        "form": form,
        "judgments": rows,
        "next_query": next_query,
        "annotators": counts["per_annotator"],
        "counts": counts,
        "resolved": resolved,
        "disagreements": disagreements,
        "groups": study_selectors.groups_visible(study=study, user=request.user)[:200],
        "comments": study_selectors.pair_comments(study=study),
    }
    status = 400 if form.is_bound and not form.is_valid() else 200
    return render(request, "annotation/review.html", context, status=status)


def _filters(request: HttpRequest, study) -> tuple[PairFilterForm, dict, tuple | None]:
    annotators = selectors.answering_annotators(study=study)
    form = PairFilterForm(request.GET or None, annotators=annotators)
    if not form.is_valid():
        return form, {}, None
    data = form.cleaned_data
    filters = {
        "agreement": data["agreement"],
        "label": data["label"],
        "annotator_id": data["annotator"],
    }
    return form, filters, data["pair"]


def _decide(request: HttpRequest, study) -> str | None:
    """Apply the POSTed decision; the error's text when it was refused as bad input."""
    form = DecisionForm(request.POST)
    if not form.is_valid():
        return error_text(form.errors)
    data = form.cleaned_data
    pair = {"item_a_id": data["item_a"], "item_b_id": data["item_b"]}
    try:
        if data["label"] == "reopen":
            services.adjudication_remove(study=study, user=request.user, **pair)
            messages.success(request, "Decision taken back: the fit reads the answers again.")
        else:
            services.adjudicate(
                study=study, user=request.user, label=data["label"], gold=data["gold"], **pair
            )
            gold = " and made a gold pair" if data["gold"] else ""
            messages.success(request, f"Resolved as {data['label']}{gold}.")
    except (InvalidInput, NotFound) as error:
        return error.message
    return None


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def adjudication(request: HttpRequest, study_id: int) -> HttpResponse:
    study = study_get(request.user, study_id, Action.REVIEW, message=services.REFUSED)
    error = None
    if request.method == "POST":
        error = _decide(request, study)
        if error is None:
            query = request.GET.copy()
            query.pop("pair", None)  # on to the next pair
            url = reverse("annotation:adjudication", args=[study.pk])
            return redirect(f"{url}?{query.urlencode()}" if query else url)
    form, filters, focus = _filters(request, study)
    review = selectors.review_pairs(study=study, limit=LISTED, **filters)
    if focus is None and review.pairs:
        focus = (review.pairs[0].item_a, review.pairs[0].item_b)
    detail = None
    if focus is not None:
        detail = selectors.pair_detail(study=study, item_a=focus[0], item_b=focus[1])
        if detail is None and request.GET.get("pair"):
            raise NotFound("Nobody answered this pair in this study.")
    summary = next((p for p in review.pairs if focus and (p.item_a, p.item_b) == focus), None)
    query = request.GET.copy()
    query.pop("pair", None)
    context = {
        "study": study,
        "form": form,
        "review": review,
        "listed": selectors.keys_attach(review.pairs),
        "detail": detail,
        "summary": summary,
        "compare": selectors.record_compare(detail.left, detail.right, detail.answers)
        if detail and detail.left.payload is not None and detail.right.payload is not None
        else None,
        "may_gold": may(request.user, study, Action.MANAGE),
        "query": query.urlencode(),
        "error": error,
    }
    failed = error is not None or (form.is_bound and not form.is_valid())
    return render(
        request, "annotation/review/adjudication.html", context, status=400 if failed else 200
    )
