"""Correctness invariants of a run, read from the scratch database after the load stopped.

* every acknowledged ``client_id`` is stored, once, under the id the server acknowledged;
* nothing is stored that no client sent (and, with no give-ups, stored == acknowledged);
* no duplicate metric version: at most one ``fitting``/``ready`` version per study, method,
  watermarks and fingerprint (the data a fit saw), and versions sharing a judgment watermark
  are reported;
* a final version of each method covers the last judgment (recovery without manual steps), no
  ``fitting`` row is left behind, and every ready version's Sigma file matches its sha256.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from .record import Record
from .seed import LOAD_USER_PREFIX

METHODS = ("explore", "face")


def judgment_checks(record: Record, study_id: int) -> tuple[dict, list[str]]:
    from annotation.models import PairJudgment

    rows = list(
        PairJudgment.objects.filter(
            study_id=study_id, annotator__username__startswith=LOAD_USER_PREFIX
        ).values_list("client_id", "id")
    )
    stored: dict[str, int] = {}
    doubles = 0
    for client_id, pk in rows:
        key = str(client_id)
        doubles += key in stored
        stored[key] = pk
    acked = record.acknowledged
    lost = [c for c in acked if c not in stored]
    wrong_id = [c for c, pk in acked.items() if c in stored and stored[c] != pk]
    unknown = [c for c in stored if c not in record.sent]
    extra = [c for c in stored if c not in acked]  # stored but the client gave up on it
    problems = []
    if lost:
        problems.append(f"{len(lost)} acknowledged answers are not stored (e.g. {lost[0]})")
    if wrong_id:
        problems.append(f"{len(wrong_id)} answers are stored under another id than acknowledged")
    if doubles:
        problems.append(f"{doubles} client_ids are stored more than once")
    if unknown:
        problems.append(f"{len(unknown)} stored answers were never sent")
    if extra and not record.unacknowledged:
        problems.append(f"{len(extra)} stored answers were never acknowledged")
    facts = {
        "stored": len(rows),
        "unique_acknowledged": len(acked),
        "lost": len(lost),
        "doubles": doubles,
        "stored_not_acknowledged": len(extra),
        "given_up": len(record.unacknowledged),
    }
    return facts, problems


def version_checks(study_id: int) -> tuple[dict, list[str]]:
    from django.db.models import Count

    from learning.models import MetricVersion

    live = MetricVersion.objects.filter(study_id=study_id, status__in=["fitting", "ready"])
    same_data = list(
        live.values("method", "judgment_watermark", "group_watermark", "fingerprint")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    same_watermark = list(
        live.values("method", "judgment_watermark").annotate(n=Count("id")).filter(n__gt=1)
    )
    by_status = dict(
        MetricVersion.objects.filter(study_id=study_id)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    interrupted = MetricVersion.objects.filter(
        study_id=study_id, status="failed", transient=True
    ).count()
    bad_files = []
    for version in MetricVersion.objects.filter(study_id=study_id, status="ready"):
        path = Path(version.sigma.path) if version.sigma else None
        if path is None or not path.exists():
            bad_files.append(f"v{version.pk}: missing")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != version.sigma_sha256:
            bad_files.append(f"v{version.pk}: sha256 mismatch")
    problems = []
    if same_data:
        problems.append(f"duplicate metric versions (same data): {same_data}")
    if bad_files:
        problems.append(f"ready versions with bad Sigma files: {bad_files[:5]}")
    facts = {
        "versions": by_status,
        "interrupted_retired": interrupted,
        "duplicates_same_data": len(same_data),
        "same_watermark_pairs": len(same_watermark),
    }
    return facts, problems


def final_versions(study_id: int) -> dict[str, str]:
    """Per method, the state of the newest version at the study's last judgment ('' if none)."""
    from django.db.models import Count, Max

    from annotation.models import PairJudgment
    from learning.models import MetricVersion

    agg = PairJudgment.objects.filter(study_id=study_id).aggregate(top=Max("id"), n=Count("id"))
    out = {}
    for method in METHODS:
        version = (
            MetricVersion.objects.filter(
                study_id=study_id, method=method, judgment_watermark=agg["top"], transient=False
            )
            .exclude(status="fitting")
            .order_by("-id")
            .first()
        )
        if version is None:
            out[method] = ""
        elif version.status == "ready" and version.counts.get("judgments_total") != agg["n"]:
            out[method] = ""  # an answer committed out of id order is not in it yet
        else:
            out[method] = version.status
    return out


def wait_for_final_versions(study_id: int, timeout: float) -> tuple[float | None, dict]:
    """Seconds until both methods have a settled version at the last judgment (None: never)."""
    from django.db import connections

    start = time.monotonic()
    state: dict = {}
    while time.monotonic() - start < timeout:
        try:
            state = final_versions(study_id)
        except Exception:  # noqa: BLE001 - e.g. our own connection was terminated
            connections.close_all()
            state = {}
        if state and all(state.values()):
            return time.monotonic() - start, state
        time.sleep(0.25)
    return None, state


def fitting_left(study_id: int) -> int:
    from learning.models import MetricVersion

    return MetricVersion.objects.filter(study_id=study_id, status="fitting").count()
