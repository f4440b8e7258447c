"""Reads of the set-up pages: counts, a sample of the pool, the latest candidate and gold pairs,
the members with their answer counts."""

from __future__ import annotations

from django.db.models import Count

from annotation.models import CandidatePair, GoldPair, Membership, PairJudgment, Study
from annotation.selectors import pool_items
from spaces.models import Item

SETUP_LIST = 200


def pool_sample(*, study: Study, limit: int = 50) -> list[Item]:
    return list(pool_items(study=study).order_by("key")[:limit])


def candidate_pairs(*, study: Study, limit: int = SETUP_LIST) -> list[CandidatePair]:
    return list(
        CandidatePair.objects.filter(study=study)
        .select_related("item_a", "item_b")
        .order_by("-id")[:limit]
    )


def gold_pairs(*, study: Study, limit: int = SETUP_LIST) -> list[GoldPair]:
    return list(
        GoldPair.objects.filter(study=study)
        .select_related("item_a", "item_b")
        .order_by("-id")[:limit]
    )


def setup_counts(*, study: Study) -> dict:
    """What the set-up pages show: pool size, candidate and gold pairs."""
    return {
        "pool": pool_items(study=study).count(),
        "candidates": CandidatePair.objects.filter(study=study).count(),
        "gold": GoldPair.objects.filter(study=study).count(),
        "members": Membership.objects.filter(study=study).count(),
    }


def members_of(*, study: Study) -> list[Membership]:
    """The study's memberships with users and each one's answer count, by role then name."""
    counts = dict(
        PairJudgment.objects.filter(study=study, annotator__isnull=False)
        .values_list("annotator_id")
        .annotate(n=Count("id"))
        .values_list("annotator_id", "n")
    )
    members = list(
        Membership.objects.filter(study=study)
        .select_related("user")
        .order_by("role", "user__username")
    )
    for member in members:
        member.answers = counts.get(member.user_id, 0)
    return members
