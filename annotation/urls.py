"""Page routes, included under /studies/ by fairmetric_site/urls.py."""

from django.urls import path

from . import views

app_name = "annotation"

urlpatterns = [
    path("", views.study_list, name="study-list"),
    path("<int:study_id>/", views.study_detail, name="study-detail"),
    path("<int:study_id>/label/", views.label_pairs, name="label"),
    path("<int:study_id>/groups/", views.curate_groups, name="groups"),
    path("<int:study_id>/review/", views.review, name="review"),
]
