"""Rate limit of judgment POSTs: a token bucket per user, taken atomically in the database.

The bucket holds at most ``JUDGMENT_BURST`` answers and refills at ``JUDGMENT_RATE`` per second,
so a person can answer in quick bursts but a script cannot flood a study. ``JUDGMENT_RATE=0``
turns the limit off. Each POST takes its token with one atomic statement
(``audit.limits.bucket_take``), so concurrent POSTs of one user cannot share a token: at most
``JUDGMENT_BURST + JUDGMENT_RATE · t`` answers are accepted in any ``t`` seconds, in any number
of gunicorn processes and threads. (The bucket was read-then-write in the cache: 150 concurrent
POSTs were all accepted against a bucket of 60.)

The counter lives in the database, the source of truth every POST needs anyway: a cache outage
(Redis restarting) neither refuses answers nor lifts the limit. A refused POST writes nothing
else.
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
        granted, self.retry_after = bucket_take(
            f"judgment:{request.user.pk}", rate=self.rate, burst=self.burst
        )
        return granted

    def wait(self) -> float | None:
        return self.retry_after or None
