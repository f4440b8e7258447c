from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from annotation.models import Membership


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """Landing page after login: the studies the user belongs to, with their role."""
    memberships = (
        Membership.objects.filter(user=request.user, study__is_active=True)
        .select_related("study", "study__space")
        .order_by("study__name")
    )
    return render(request, "home.html", {"memberships": memberships})


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and database reachability, for load balancers and the start script."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})
