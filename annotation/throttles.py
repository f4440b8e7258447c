"""Rate limit of judgment POSTs: a token bucket per user, kept in the shared cache.

The bucket holds at most ``JUDGMENT_BURST`` answers and refills at ``JUDGMENT_RATE`` per second,
so a person can answer in quick bursts but a script cannot flood a study. ``JUDGMENT_RATE=0``
turns the limit off. The read-modify-write is not atomic across processes: concurrent requests
of one user may each see the same bucket, which only makes the limit slightly lenient.

An unreachable cache (Redis restarting) lets the request through, with a warning: the answer
matters more than the limit, and a rate limit must not turn a cache outage into lost answers
(loadtest/faults.py found every POST failing with 500 while Redis restarted).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)


class JudgmentRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self.rate = float(settings.JUDGMENT_RATE)
        self.burst = float(settings.JUDGMENT_BURST)
        self.retry_after = 0.0

    def allow_request(self, request, view) -> bool:
        if self.rate <= 0 or not request.user.is_authenticated:
            return True
        try:
            return self._take(f"throttle:judgment:{request.user.pk}")
        except Exception:  # any cache failure: fail open, the answer counts
            logger.warning("rate-limit cache unreachable; judgment POST let through", exc_info=True)
            return True

    def _take(self, key: str) -> bool:
        now = time.time()
        tokens, stamp = cache.get(key) or (self.burst, now)
        tokens = min(self.burst, tokens + (now - stamp) * self.rate)
        ttl = int(self.burst / self.rate) + 1  # a full bucket needs no row
        if tokens < 1.0:
            self.retry_after = (1.0 - tokens) / self.rate
            cache.set(key, (tokens, now), timeout=ttl)
            return False
        cache.set(key, (tokens - 1.0, now), timeout=ttl)
        return True

    def wait(self) -> float | None:
        return self.retry_after or None
