"""Pages of learning (dashboards and metric versions), included at the root: the study pages
live under ``studies/<id>/`` beside annotation's, the version pages under ``versions/``."""

from django.urls import path

from learning.audits import views as audits
from learning.cohorts import views as cohorts
from learning.dashboards import learning_settings, views, weat_pages

app_name = "learning"

urlpatterns = [
    path("studies/<int:study_id>/dashboard/", views.study_dashboard, name="study-dashboard"),
    path(
        "studies/<int:study_id>/dashboard/status.json",
        views.study_dashboard_status,
        name="study-dashboard-status",
    ),
    path("studies/<int:study_id>/weat/", views.study_weat, name="study-weat"),
    path(
        "studies/<int:study_id>/weat/<int:test_id>/", views.study_weat_test, name="study-weat-test"
    ),
    path("studies/<int:study_id>/weat/tests/new/", weat_pages.weat_test_new, name="study-weat-new"),
    path(
        "studies/<int:study_id>/weat/tests/<int:test_id>/",
        weat_pages.weat_test_edit,
        name="study-weat-test-edit",
    ),
    path(
        "studies/<int:study_id>/weat/tests/<int:test_id>/delete/",
        weat_pages.weat_test_delete,
        name="study-weat-test-delete",
    ),
    path("studies/<int:study_id>/drift/", views.study_drift, name="study-drift"),
    path(
        "studies/<int:study_id>/learning-settings/",
        learning_settings.study_learning_settings,
        name="study-learning-settings",
    ),
    path("studies/<int:study_id>/cohorts/", cohorts.study_cohorts, name="study-cohorts"),
    path("versions/compare/", views.version_compare, name="version-compare"),
    path("versions/<int:version_id>/", views.version_detail, name="version-detail"),
    path("versions/<int:version_id>/publish/", views.version_publish, name="version-publish"),
    path("studies/<int:study_id>/audits/", audits.audit_list, name="audits"),
    path("studies/<int:study_id>/audits/compare/", audits.audit_compare, name="audit-compare"),
    path(
        "studies/<int:study_id>/audits/sensitive/", audits.audit_sensitive, name="audit-sensitive"
    ),
    path("studies/<int:study_id>/audits/<int:audit_id>/", audits.audit_detail, name="audit-detail"),
    path("studies/<int:study_id>/audits/<int:audit_id>/ask/", audits.audit_ask, name="audit-ask"),
]
