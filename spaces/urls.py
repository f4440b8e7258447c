"""Embedding space pages, included under /spaces/ by fairmetric_site/urls.py."""

from django.urls import path

from spaces import views
from spaces.records import views as records
from spaces.texts import views as texts
from spaces.vectors import views as vectors

app_name = "spaces"

urlpatterns = [
    path("", views.space_list, name="list"),
    path("upload/", vectors.space_upload, name="upload"),
    path("imports/<int:import_id>/", views.import_detail, name="import"),
    path("imports/<int:import_id>/status.json", views.import_status, name="import-status"),
    path("records/upload/", records.records_upload, name="records-upload"),
    path("records/<int:import_id>/columns/", records.records_columns, name="records-columns"),
    path("texts/upload/", texts.texts_upload, name="texts-upload"),
    path("<int:space_id>/shown/", records.records_shown, name="records-shown"),
    path("<int:space_id>/sharing/", views.space_sharing, name="sharing"),
    path("<int:space_id>/delete/", views.space_delete_page, name="delete"),
]
