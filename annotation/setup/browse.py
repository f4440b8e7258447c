"""The data browser of a study's space: search and filter its items (``spaces.search``: words,
fields, comparisons, ranges), sort them by a field, count the values of a field among them (the
pool's balance of a categorical field, with "in the pool only"), open one, and make the study's
pool from a filter. Reviewers and admins browse (reviewers see the
fields annotators see; admins every field); admins make pools."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, F
from django.db.models.fields.json import KT
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.access import Action, require, study_get
from annotation.models import Study
from annotation.selectors import may_manage, pool_items
from annotation.setup import pool, selectors
from common.errors import AppError, InvalidInput
from spaces.models import EmbeddingSpace, Item, first_record
from spaces.records.columns import record_columns
from spaces.search import items_matching, numeric_fields

SETUP_REFUSED = "Only reviewers and admins of this study can see its set-up."
SHOWN = 100  # rows a page of the browser shows
COUNTS_SHOWN = 50  # values a field's counts list
POOL_FROM_FILTER_MAX = 100_000


def _study(request: HttpRequest, study_id: int) -> tuple[Study, bool]:
    study = study_get(request.user, study_id, Action.REVIEW, message=SETUP_REFUSED)
    return study, may_manage(user=request.user, study=study)


def matching(study: Study, query: str, *, every_field: bool):
    """The space's items matching ``query``; the hidden columns searchable only with
    ``every_field`` (the study's admins)."""
    hidden = () if every_field else study.space.hidden_columns
    return items_matching(space_id=study.space_id, query=query, hidden=hidden)


def _fields(space: EmbeddingSpace, every_field: bool, first: dict) -> list[str]:
    names = record_columns(space, first) if first else []
    return names if every_field else [n for n in names if n not in set(space.hidden_columns)]


def _field_choice(value: str, fields: list[str], what: str) -> str:
    """A field named in the browser's sort or count parameter: one the user may see."""
    if value and value not in fields:
        known = ", ".join(fields) or "none: not a record space"
        raise InvalidInput(f"No field named {value!r} to {what} (fields: {known}).")
    return value


def _ordered(found, sort: str):
    """The items by a field (``age`` ascending, ``-age`` descending; missing values last),
    then by row; by row alone without one. JSON numbers sort as numbers."""
    if not sort:
        return found.order_by("row")
    key = F(f"payload__{sort.lstrip('-')}")
    by = key.desc(nulls_last=True) if sort.startswith("-") else key.asc(nulls_last=True)
    return found.order_by(by, "row")


def value_counts(found, field: str) -> list[tuple[str, int]]:
    """How many of ``found`` hold each value of ``field`` (the most frequent first, at most
    ``COUNTS_SHOWN``; missing values as None): the pool's balance of a categorical field."""
    rows = (
        found.annotate(value=KT(f"payload__{field}"))
        .values("value")
        .annotate(n=Count("pk"))
        .order_by("-n", "value")[:COUNTS_SHOWN]
    )
    return [(row["value"], row["n"]) for row in rows]


@login_required
@require_GET
def study_browse(request: HttpRequest, study_id: int) -> HttpResponse:
    study, can_manage = _study(request, study_id)
    query = request.GET.get("q", "").strip()[:500]
    first = first_record(study.space_id)  # read once: the columns and which hold numbers
    fields = _fields(study.space, can_manage, first)
    pool_only = request.GET.get("pool") == "1"
    context = {
        "study": study,
        "can_manage": can_manage,
        "active": "items",
        "counts": selectors.setup_counts(study=study),
        "q": query,
        "fields": fields,
        "hidden": set(study.space.hidden_columns),
        "numeric": sorted(numeric_fields(study.space, first) & set(fields), key=fields.index),
        "sort": request.GET.get("sort", "")[:210],
        "count": request.GET.get("count", "")[:210],
        "pool_only": pool_only,
    }
    try:
        sort = _field_choice(context["sort"].removeprefix("-"), fields, "sort by")
        count = _field_choice(context["count"], fields, "count")
        found = matching(study, query, every_field=can_manage)
        if pool_only:
            found = found.filter(pk__in=pool_items(study=study).values("pk"))
        total = found.count()
        ordered = _ordered(found, context["sort"] if sort else "")
        rows = list(ordered.prefetch_related("tags")[:SHOWN])
        if count:
            context["value_counts"] = [
                (value, n, n / total if total else 0.0) for value, n in value_counts(found, count)
            ]
    except InvalidInput as error:
        context["error"] = error.message
        return render(request, "annotation/setup/browse.html", context, status=400)
    in_pool = set(
        pool_items(study=study).filter(pk__in=[i.pk for i in rows]).values_list("pk", flat=True)
    )
    for item in rows:
        item.in_pool = item.pk in in_pool
        item.values = [(item.payload or {}).get(name) for name in fields]
    context |= {"rows": rows, "total": total, "shown": len(rows)}
    return render(request, "annotation/setup/browse.html", context)


@login_required
@require_POST
def study_pool_from_filter(request: HttpRequest, study_id: int) -> HttpResponse:
    """The study's pool becomes (or gains) the items matching the posted filter."""
    study, _ = _study(request, study_id)
    require(request.user, study, Action.MANAGE, "Only an admin of the study can change its items.")
    query = request.POST.get("q", "").strip()[:500]
    replace = request.POST.get("replace") == "1"
    try:
        found = matching(study, query, every_field=True)
        keys = list(found.order_by("row").values_list("key", flat=True)[: POOL_FROM_FILTER_MAX + 1])
        if not keys:
            raise InvalidInput("No item matches the filter: the pool is unchanged.")
        if len(keys) > POOL_FROM_FILTER_MAX:
            raise InvalidInput(
                f"More than {POOL_FROM_FILTER_MAX:,} items match: narrow the filter, or choose "
                "“every item of the space” in the study's settings."
            )
        done = pool.pool_upload(user=request.user, study=study, keys=keys, replace=replace)
    except AppError as error:
        messages.error(request, error.message)
        browse = reverse("annotation:study-browse", args=[study.pk])
        return redirect(f"{browse}?{urlencode({'q': query})}")
    messages.success(
        request,
        f"{done['added']:,} items added from the filter “{query or 'all'}”; "
        f"the pool has {done['pool']:,} items.",
    )
    return redirect("annotation:study-items", study.pk)


@login_required
@require_GET
def study_item(request: HttpRequest, study_id: int, item_id: int) -> HttpResponse:
    """One item of the study's space: its fields (or text), tags, and whether it is pooled."""
    study, can_manage = _study(request, study_id)
    item = get_object_or_404(
        Item.objects.prefetch_related("tags"), pk=item_id, space_id=study.space_id
    )
    hidden = set(study.space.hidden_columns)
    payload = item.payload if isinstance(item.payload, dict) else {}
    shown = [(k, v, k in hidden) for k, v in payload.items() if can_manage or k not in hidden]
    context = {
        "study": study,
        "can_manage": can_manage,
        "active": "items",
        "counts": selectors.setup_counts(study=study),
        "item": item,
        "fields": shown,
        "in_pool": pool_items(study=study).filter(pk=item.pk).exists(),
    }
    return render(request, "annotation/setup/item.html", context)
