"""The refit hook on the answer path: one read while a refit is queued; a lost one is re-sent."""

from __future__ import annotations

import uuid
from datetime import timedelta

import redis
from django.utils import timezone

from learning.models import RefitState
from learning.refits.scheduling import refit_mark_due
from tests.annotation.factories import make_space, make_study
from tests.celery_support import app_pointed_at


def test_a_queued_refit_costs_one_read_and_a_lost_one_is_resent(
    db, settings, media_root, redis_url, django_assert_num_queries
):
    queue = f"hook-{uuid.uuid4().hex[:8]}"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    settings.LEARNING_LOST_AFTER_SECONDS = 5
    study = make_study(space=make_space())
    messages = redis.Redis.from_url(redis_url)
    try:
        with app_pointed_at(redis_url):
            assert refit_mark_due(study_id=study.pk) is True
            assert messages.llen(queue) == 1
            with django_assert_num_queries(1):  # riding along: one read, no write
                assert refit_mark_due(study_id=study.pk) is False
            assert messages.llen(queue) == 1

            state = RefitState.objects.filter(study=study)
            state.update(due_at=timezone.now() - timedelta(seconds=4))  # late, not lost yet
            assert refit_mark_due(study_id=study.pk) is False
            state.update(due_at=timezone.now() - timedelta(seconds=6))  # lost: send again
            assert refit_mark_due(study_id=study.pk) is True
            assert messages.llen(queue) == 2
            assert state.get().due_at > timezone.now()
    finally:
        messages.delete(queue)
