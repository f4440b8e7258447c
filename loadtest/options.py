"""The options of the load and fault runs (``--quick`` and the rest), their quick form, and the
throwaway stack they describe. Shared by loadtest.load, loadtest.faults and loadtest.profile."""

from __future__ import annotations

import argparse
from pathlib import Path

from .stack import Stack


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="the short form (tests)")
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=3.0, help="untimed load before")
    parser.add_argument(
        "--lost-share",
        type=float,
        default=0.1,
        help="share of answers whose response is 'lost' and retried",
    )
    parser.add_argument(
        "--think-ms",
        type=float,
        default=2000.0,
        help="the think phase: mean time an annotator looks at a pair",
    )
    parser.add_argument(
        "--phases",
        choices=["both", "saturated", "think"],
        default="both",
        help="saturated (no think time), think (--think-ms), or both, in that order",
    )
    parser.add_argument(
        "--batch", type=int, default=1, help="answers per request (> 1: the batch endpoint)"
    )
    parser.add_argument(
        "--profile-answers", type=int, default=300, help="answers profiled in-process (0: none)"
    )
    parser.add_argument(
        "--two-requests",
        action="store_true",
        help="GET next-pair before every POST (the pattern before ?next=1)",
    )
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--history", type=int, default=20_000, help="answers before the run")
    parser.add_argument(
        "--web-hosts",
        type=int,
        default=1,
        help="gunicorn masters ('machines') sharing the database and Redis; annotators spread",
    )
    parser.add_argument("--web-workers", type=int, default=3)
    parser.add_argument("--web-threads", type=int, default=4)
    parser.add_argument(
        "--judgment-rate",
        type=int,
        default=50,
        help="JUDGMENT_RATE of the run: POSTs/s per user (the throttle stays on)",
    )
    parser.add_argument("--recovery-timeout", type=float, default=120.0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (logs)")


def quick_defaults(args: argparse.Namespace) -> None:
    args.annotators, args.seconds, args.warmup = 5, 5.0, 0.0
    args.phases, args.profile_answers = "saturated", 30
    args.items, args.dim, args.history = 500, 10, 500
    args.web_workers, args.web_threads = 2, 2
    args.recovery_timeout = 60.0


def make_stack(args: argparse.Namespace, *, lost_after_seconds: int = 30, **kwargs) -> Stack:
    # The judgment throttle stays active, at a rate above one load annotator's pace (a person
    # answers about once a second; a virtual annotator without think time, several times).
    throttle = {
        "JUDGMENT_RATE": str(args.judgment_rate),
        "JUDGMENT_BURST": str(max(60, 2 * args.judgment_rate)),
        "LEARNING_LOST_AFTER_SECONDS": str(lost_after_seconds),
        "AUDIT_LEASE_SECONDS": str(max(5, lost_after_seconds)),  # audits a broker restart lost
    }
    return Stack(
        web_workers=args.web_workers,
        web_threads=args.web_threads,
        web_hosts=getattr(args, "web_hosts", 1),
        keep=args.keep,
        extra_env=throttle,
        **kwargs,
    )
