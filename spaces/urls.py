"""Embedding space pages, included under /spaces/ by fairmetric_site/urls.py."""

from django.urls import path

from . import views

app_name = "spaces"

urlpatterns = [
    path("", views.space_list, name="list"),
    path("upload/", views.space_upload, name="upload"),
    path("imports/<int:import_id>/", views.import_detail, name="import"),
    path("imports/<int:import_id>/status.json", views.import_status, name="import-status"),
]
