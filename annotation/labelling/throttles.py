"""Rate limit of answers: a token bucket per user, taken atomically (``audit.limits``).

The bucket holds at most ``JUDGMENT_BURST`` answers and refills at ``JUDGMENT_RATE`` per second,
so a person can answer in quick bursts but a script cannot flood a study. ``JUDGMENT_RATE=0``
turns the limit off. The limit counts **answers**, not requests: a batch takes one token per
answer it carries (``view.answer_count(request)``); when the bucket holds fewer, the batch is
served for as many answers as it got (``view.answers_granted``) and the others are answered
"throttled"; with none left, the request gets 429 with Retry-After.

Each request takes its tokens with one atomic operation (``audit.limits.bucket_take``: a Lua
script in Redis, or one database statement when the cache is not Redis or does not answer), so
concurrent requests of one user cannot share a token: at most ``JUDGMENT_BURST +
JUDGMENT_RATE · t`` answers are accepted in any ``t`` seconds, in any number of gunicorn
processes and threads. A refused request writes nothing else.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import BaseThrottle

from audit.limits import bucket_take


class JudgmentRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self.rate = float(settings.JUDGMENT_RATE)
        self.burst = float(settings.JUDGMENT_BURST)
        self.retry_after = 0.0

    def allow_request(self, request, view) -> bool:
        if self.rate <= 0 or not request.user.is_authenticated:
            return True
        counter = getattr(view, "answer_count", None)
        cost = max(1, counter(request)) if counter is not None else 1
        granted, self.retry_after = bucket_take(
            f"judgment:{request.user.pk}", rate=self.rate, burst=self.burst, cost=cost
        )
        if view is not None:
            view.answers_granted = granted
            view.answers_retry_after = self.retry_after
        return granted > 0

    def wait(self) -> float | None:
        return self.retry_after or None
