"""The site's URLs plus one that fails, to see the production 500 page."""

from django.urls import path

from fairmetric_site.urls import urlpatterns as site_urlpatterns


def boom(request):
    raise RuntimeError("secret internal detail")


urlpatterns = [path("boom/", boom), *site_urlpatterns]
