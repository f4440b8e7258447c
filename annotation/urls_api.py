"""API routes, included under /api/ by fairmetric_site/urls.py."""

from django.urls import path

from .groups import api as groups_api
from .labelling import api as labelling_api
from .review import api as review_api
from .setup import api as setup_api
from .setup.cohorts import api as cohort_api

urlpatterns = [
    path("studies/", setup_api.StudyListCreate.as_view(), name="api-studies"),
    path("studies/<int:study_id>/", setup_api.StudySettings.as_view(), name="api-study"),
    path("studies/<int:study_id>/pool/", setup_api.PoolUpload.as_view(), name="api-study-pool"),
    path(
        "studies/<int:study_id>/candidate-pairs/",
        setup_api.CandidatePairsUpload.as_view(),
        name="api-study-candidate-pairs",
    ),
    path(
        "studies/<int:study_id>/gold-pairs/",
        setup_api.GoldPairsUpload.as_view(),
        name="api-study-gold-pairs",
    ),
    path(
        "studies/<int:study_id>/members/", setup_api.MemberAdd.as_view(), name="api-study-members"
    ),
    path(
        "studies/<int:study_id>/members/<int:membership_id>/",
        cohort_api.MemberDetail.as_view(),
        name="api-study-member",
    ),
    path(
        "studies/<int:study_id>/member-attributes/",
        cohort_api.MemberAttributes.as_view(),
        name="api-study-member-attributes",
    ),
    path(
        "studies/<int:study_id>/next-pair/",
        labelling_api.NextPairView.as_view(),
        name="api-next-pair",
    ),
    path(
        "studies/<int:study_id>/judgments/",
        labelling_api.JudgmentListCreate.as_view(),
        name="api-judgments",
    ),
    path(
        "studies/<int:study_id>/judgments/batch/",
        labelling_api.JudgmentBatch.as_view(),
        name="api-judgments-batch",
    ),
    path(
        "studies/<int:study_id>/judgments/<str:ref>/",
        labelling_api.JudgmentUndo.as_view(),
        name="api-judgment",
    ),
    path("studies/<int:study_id>/skips/", labelling_api.PairSkipCreate.as_view(), name="api-skips"),
    path(
        "studies/<int:study_id>/comments/",
        labelling_api.PairCommentCreate.as_view(),
        name="api-comments",
    ),
    path("studies/<int:study_id>/groups/", groups_api.GroupListCreate.as_view(), name="api-groups"),
    path(
        "studies/<int:study_id>/groups/<int:group_id>/",
        groups_api.GroupDetail.as_view(),
        name="api-group",
    ),
    path(
        "studies/<int:study_id>/suggestions/",
        groups_api.SuggestionsView.as_view(),
        name="api-suggestions",
    ),
    path(
        "studies/<int:study_id>/disagreements/",
        review_api.DisagreementList.as_view(),
        name="api-disagreements",
    ),
    path(
        "studies/<int:study_id>/adjudications/",
        review_api.AdjudicationCreate.as_view(),
        name="api-adjudications",
    ),
    path("items/", groups_api.ItemSearch.as_view(), name="api-items"),
]
