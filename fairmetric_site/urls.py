from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.views.static import serve
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation import urls_api as annotation_api
from learning import urls_api as learning_api

from . import views

# The API: one prefix; each app contributes its routes (names are global: "api-…").
api_urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    *annotation_api.urlpatterns,
    *learning_api.urlpatterns,
]

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("", include("accounts.urls")),
    path("admin/", admin.site.urls),
    path("api/", include(api_urlpatterns)),
    path("studies/", include("annotation.urls")),
    path("spaces/", include("spaces.urls")),
    path("", include("learning.urls")),
]

if settings.DEBUG:
    # Media (uploaded embedding matrices) only in development; production serves it elsewhere.
    urlpatterns += [path("media/<path:path>", serve, {"document_root": settings.MEDIA_ROOT})]
