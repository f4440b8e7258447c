"""Export and audit API routes, included under ``api/`` by the site's urls."""

from django.urls import path

from learning.audits import api as audits
from learning.cohorts import views as cohorts
from learning.dashboards import weat_api
from learning.exports import api

urlpatterns = [
    path("versions/<int:version_id>/", api.VersionDetail.as_view(), name="api-version"),
    path(
        "versions/<int:version_id>/publish/",
        api.VersionPublish.as_view(),
        name="api-version-publish",
    ),
    path(
        "versions/<int:version_id>/sigma.<str:fmt>",
        api.VersionSigma.as_view(),
        name="api-version-sigma",
    ),
    path(
        "studies/<int:study_id>/metrics/<str:method>/published/",
        api.PublishedDetail.as_view(),
        name="api-published",
    ),
    path(
        "studies/<int:study_id>/metrics/<str:method>/published/sigma.<str:fmt>",
        api.PublishedSigma.as_view(),
        name="api-published-sigma",
    ),
    path("studies/<int:study_id>/feature-map/", api.FeatureMap.as_view(), name="api-feature-map"),
    path(
        "studies/<int:study_id>/export/judgments.<str:fmt>",
        api.JudgmentExport.as_view(),
        name="api-export-judgments",
    ),
    path(
        "studies/<int:study_id>/export/groups.<str:fmt>",
        api.GroupExport.as_view(),
        name="api-export-groups",
    ),
    path(
        "studies/<int:study_id>/weat-tests/",
        weat_api.WeatTestList.as_view(),
        name="api-weat-tests",
    ),
    path(
        "studies/<int:study_id>/weat-tests/<int:test_id>/",
        weat_api.WeatTestDetail.as_view(),
        name="api-weat-test",
    ),
    path("studies/<int:study_id>/audits/", audits.AuditList.as_view(), name="api-audits"),
    path("studies/<int:study_id>/cohorts/", cohorts.CohortList.as_view(), name="api-cohorts"),
    path(
        "studies/<int:study_id>/counterfactuals.csv",
        audits.Counterfactuals.as_view(),
        name="api-counterfactuals",
    ),
    path(
        "studies/<int:study_id>/audits/<int:audit_id>/",
        audits.AuditDetail.as_view(),
        name="api-audit",
    ),
    path(
        "studies/<int:study_id>/audits/<int:audit_id>/violations.csv",
        audits.AuditViolations.as_view(),
        name="api-audit-violations",
    ),
]
