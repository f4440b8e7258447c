"""What the virtual annotators saw (loadtest/client.py): every request's endpoint, status and
latency, the answers sent and acknowledged, and the contract violations clients noticed."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Record:
    """What all annotators saw."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    connection_errors: Counter = field(default_factory=Counter)
    failures_at: list[tuple[float, str]] = field(default_factory=list)  # (time, 5xx or error)
    acknowledged: dict[str, int] = field(default_factory=dict)  # client_id -> judgment id
    sent: set[str] = field(default_factory=set)  # every client_id ever sent
    problems: list[str] = field(default_factory=list)  # contract violations seen by clients
    unacknowledged: set[str] = field(default_factory=set)  # sent, never acknowledged (gave up)
    judgments_created: int = 0  # 201 responses read
    lost_simulated: int = 0
    done_answers: int = 0  # next-pair said "done"
    started: float = 0.0  # the measured window (after the warm-up)
    finished: float = 0.0

    def measuring(self) -> bool:
        return time.perf_counter() >= self.started

    def note(self, endpoint: str, status: int, seconds: float) -> None:
        if status >= 500:
            self.failures_at.append((time.perf_counter(), f"{endpoint} {status}"))
        if status >= 500 or self.measuring():  # a 5xx counts even during the warm-up
            self.latencies[endpoint].append(seconds * 1000.0)
            self.statuses[endpoint][status] += 1

    def count_5xx(self) -> int:
        return sum(n for c in self.statuses.values() for s, n in c.items() if s >= 500)

    def unexpected_statuses(self) -> dict[str, dict[int, int]]:
        """Statuses other than 200/201 (302 for the login form; 5xx/429 counted separately)."""
        out = {}
        for endpoint, counts in self.statuses.items():
            fine = (302,) if endpoint.startswith("POST login") else (200, 201)
            odd = {s: n for s, n in counts.items() if s not in fine and s < 500 and s != 429}
            if odd:
                out[endpoint] = odd
        return out

    def summary(self) -> dict:
        seconds = max(1e-9, self.finished - self.started)
        endpoints = {}
        for name, values in sorted(self.latencies.items()):
            arr = np.asarray(values)
            p50, p95, p99 = np.percentile(arr, [50, 95, 99])
            endpoints[name] = {
                "requests": len(arr),
                "per_second": len(arr) / seconds,
                "p50_ms": float(p50),
                "p95_ms": float(p95),
                "p99_ms": float(p99),
                "max_ms": float(arr.max()),
                "statuses": dict(sorted(self.statuses[name].items())),
            }
        total = sum(len(v) for v in self.latencies.values())
        return {
            "seconds": seconds,
            "requests": total,
            "requests_per_second": total / seconds,
            "judgments_created": self.judgments_created,
            "judgments_per_second": self.judgments_created / seconds,
            "acknowledged": len(self.acknowledged),
            "lost_responses_simulated": self.lost_simulated,
            "connection_errors": dict(self.connection_errors),
            "endpoints": endpoints,
        }
