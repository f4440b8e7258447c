from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.decorators.http import require_http_methods
from django.views.static import serve
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.views_setup import InvitationView
from audit import login_throttle

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/login/", login_throttle.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/invitation/<uidb64>/<token>/",
        require_http_methods(["GET", "POST"])(InvitationView.as_view()),
        name="invitation",
    ),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/", include("annotation.urls_api")),
    path("studies/", include("annotation.urls")),
    path("spaces/", include("spaces.urls")),
    path("api/", include("learning.urls_api")),
    path("", include("learning.urls")),
]

if settings.DEBUG:
    # Media (uploaded embedding matrices) only in development; production serves it elsewhere.
    urlpatterns += [path("media/<path:path>", serve, {"document_root": settings.MEDIA_ROOT})]
