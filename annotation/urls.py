"""Page routes, included under /studies/ by fairmetric_site/urls.py."""

from django.urls import path

from . import views
from .review import views as review_views
from .setup import browse, import_views
from .setup import views as setup_views
from .setup.cohorts import views as cohort_views
from .webhooks import views as webhook_views

app_name = "annotation"

urlpatterns = [
    path("", views.study_list, name="study-list"),
    path("<int:study_id>/", views.study_detail, name="study-detail"),
    path("<int:study_id>/label/", views.label_pairs, name="label"),
    path("<int:study_id>/groups/", views.curate_groups, name="groups"),
    path("<int:study_id>/review/", review_views.review, name="review"),
    path(
        "<int:study_id>/review/disagreements/",
        review_views.adjudication,
        name="adjudication",
    ),
    path("<int:study_id>/done/", views.study_done, name="study-done"),
    path("<int:study_id>/about-you/", cohort_views.about_you, name="study-about-you"),
    # Set-up: reviewers read, admins of the study (and staff) change.
    path("new/", setup_views.study_new, name="study-new"),
    path("preview/", setup_views.markdown_preview, name="markdown-preview"),
    path("<int:study_id>/settings/", setup_views.study_settings, name="study-settings"),
    path("<int:study_id>/duplicate/", setup_views.study_duplicate, name="study-duplicate"),
    path("<int:study_id>/archive/", setup_views.study_archive, name="study-archive"),
    path("<int:study_id>/items/", setup_views.study_items, name="study-items"),
    path("<int:study_id>/items/browse/", browse.study_browse, name="study-browse"),
    path("<int:study_id>/items/pool/", browse.study_pool_from_filter, name="study-pool-filter"),
    path("<int:study_id>/items/<int:item_id>/", browse.study_item, name="study-item"),
    path("<int:study_id>/pairs/", setup_views.study_pairs, name="study-pairs"),
    path("<int:study_id>/gold/", setup_views.study_gold, name="study-gold"),
    path("<int:study_id>/members/", setup_views.study_members, name="study-members"),
    path("<int:study_id>/import/", import_views.study_import, name="study-import"),
    path("<int:study_id>/webhooks/", webhook_views.study_webhooks, name="study-webhooks"),
    path(
        "<int:study_id>/webhooks/<int:hook_id>/",
        webhook_views.webhook_action,
        name="study-webhook",
    ),
    path(
        "<int:study_id>/members/<int:membership_id>/",
        setup_views.study_member,
        name="study-member",
    ),
    path(
        "<int:study_id>/members/attributes/",
        cohort_views.attribute_save,
        name="study-member-attribute",
    ),
    path(
        "<int:study_id>/members/<int:membership_id>/attributes/",
        cohort_views.member_attributes,
        name="study-member-attributes",
    ),
    path(
        "<int:study_id>/members/<int:membership_id>/remove/",
        setup_views.study_member_remove,
        name="study-member-remove",
    ),
]
