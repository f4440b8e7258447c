"""Who labels what: studies, memberships, judgments and groups over the items of ``spaces``.

``studies``: a study, its members and its item pool; ``judgments``: answers about pairs, skips
and comments; ``pairs``: gold and candidate pairs; ``groups``: comparable groups; ``review``:
adjudicated labels; ``cohorts``: member attributes; ``imports``: the import page's feedback imports; ``webhooks``: URLs
that receive a study's events and their deliveries. Import them from here (``from annotation.models import Study``).
"""

from .cohorts import MAX_ATTRIBUTES, MAX_NAME, MAX_VALUES, MemberAttribute
from .groups import MAX_GROUP_NAME, MAX_GROUP_SIZE, ComparableGroup, GroupEdit, StudyCounter
from .imports import FeedbackImport
from .judgments import (
    MAX_ELAPSED_MS,
    Label,
    LabelCode,
    PairComment,
    PairJudgment,
    PairSkip,
    Source,
    canonical_pair,
)
from .pairs import CandidatePair, GoldPair, PoolPair, pair_check, pool_check
from .review import Adjudication
from .studies import MAX_OVERLAP, MAX_TARGET, Membership, Study, pool_queryset
from .webhooks import MAX_WEBHOOKS_PER_STUDY, SUBSCRIBABLE, Webhook, WebhookDelivery, WebhookEvent

__all__ = [
    "MAX_ATTRIBUTES",
    "MAX_NAME",
    "MAX_VALUES",
    "MemberAttribute",
    "MAX_OVERLAP",
    "MAX_TARGET",
    "Adjudication",
    "MAX_ELAPSED_MS",
    "MAX_GROUP_NAME",
    "MAX_GROUP_SIZE",
    "MAX_WEBHOOKS_PER_STUDY",
    "SUBSCRIBABLE",
    "CandidatePair",
    "FeedbackImport",
    "ComparableGroup",
    "GoldPair",
    "GroupEdit",
    "Label",
    "LabelCode",
    "Membership",
    "PairComment",
    "PairJudgment",
    "PairSkip",
    "PoolPair",
    "Source",
    "Study",
    "StudyCounter",
    "Webhook",
    "WebhookDelivery",
    "WebhookEvent",
    "canonical_pair",
    "pair_check",
    "pool_check",
    "pool_queryset",
]
