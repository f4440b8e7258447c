from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from annotation.models import Membership
from spaces.models import EmbeddingSpace

from .health import health, readiness


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """Landing page after login: the studies the user belongs to, with their role."""
    memberships = (
        Membership.objects.filter(user=request.user, study__is_active=True)
        .select_related("study", "study__space")
        .order_by("study__name")
    )
    # Staff manage every space on the Spaces page; others see the ones they own (to delete).
    owned = [] if request.user.is_staff else EmbeddingSpace.objects.filter(owner=request.user)
    return render(request, "home.html", {"memberships": memberships, "owned_spaces": owned})


FAVICON = settings.BASE_DIR / "static" / "favicon.svg"


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for whatever the page says: the app's icon (SVG),
    not a 404 in every log."""
    response = HttpResponse(FAVICON.read_bytes(), content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Each dependency and the verdict: ok, degraded (200: the database answers, Redis does
    not) or unhealthy (503: no database) — for load balancers, monitors and the start script."""
    report, status = health()
    return JsonResponse(report, status=status)


@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: 200 when the database and the task broker answer, else 503 (``health.py``)."""
    report, status = readiness()
    return JsonResponse(report, status=status)
