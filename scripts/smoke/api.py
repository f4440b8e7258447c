"""The smoke run's side of the API: answers, versions, publishing, Sigma, the export.

Requests come as through the TLS-terminating proxy (``X-Forwarded-Proto: https``): the stack
runs with production settings (``DEBUG=0``)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import time
import urllib.error
import urllib.request
import uuid

import numpy as np

STUDY_NAME = "Names should be treated alike"

# Run in the web container (manage.py shell): the smoke's two people and their API tokens.
PEOPLE_CODE = f"""
import json
from django.contrib.auth import get_user_model
from accounts.tokens import api_token_create
from annotation.models import Membership, Study
User = get_user_model()
study = Study.objects.get(name={STUDY_NAME!r})
admin, _ = User.objects.get_or_create(
    username="smoke-admin", defaults={{"is_staff": True, "is_superuser": True}})
annotator, _ = User.objects.get_or_create(username="smoke-annotator")
Membership.objects.get_or_create(study=study, user=annotator, defaults={{"role": "annotator"}})
_, admin_token = api_token_create(user=admin, name="compose-smoke")
_, annotator_token = api_token_create(user=annotator, name="compose-smoke")
print(json.dumps({{"study": study.pk, "admin": admin_token, "annotator": annotator_token}}))
"""

# The newest ready EXPLORE version of the study that has learned every answer up to an id.
VERSION_CODE = """
import json
from learning.models import MetricVersion
version = (MetricVersion.objects.filter(study_id={study}, method="explore", status="ready",
           judgment_watermark__gte={watermark}).exclude(sigma="").order_by("-pk").first())
print(json.dumps(version.pk if version else None))
"""


class Client:
    def __init__(self, base_url: str):
        self.base_url = base_url

    def call(self, method: str, path: str, token: str, body=None) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {token}", "X-Forwarded-Proto": "https"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            self.base_url + path, data=data, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def json(self, method: str, path: str, token: str, body=None, expect=(200,)):
        status, payload = self.call(method, path, token, body)
        if status not in expect:
            raise RuntimeError(f"{method} {path}: {status} {payload[:300]!r}")
        return json.loads(payload)


def post_answers(client: Client, people: dict, count: int) -> dict[str, int]:
    """``count`` answers by the annotator, each to the pair the API offers; client_id -> id."""
    rng = random.Random(count)
    base = f"/api/studies/{people['study']}"
    token = people["annotator"]
    pair = client.json("GET", f"{base}/next-pair/", token)
    stored: dict[str, int] = {}
    for _ in range(count):
        if pair.get("done"):
            raise RuntimeError(f"the study offered no more pairs after {len(stored)} answers")
        client_id = str(uuid.uuid4())
        answer = {
            "item_a": pair["left"]["id"],
            "item_b": pair["right"]["id"],
            "label": rng.choice(["comparable", "incomparable"]),
            "client_id": client_id,
            "elapsed_ms": rng.randint(500, 3000),
        }
        data = client.json("POST", f"{base}/judgments/?next=1", token, answer, expect=(201,))
        stored[client_id] = data["id"]
        pair = data.get("next_pair") or client.json("GET", f"{base}/next-pair/", token)
    print(f"   {len(stored)} answers stored, ids {min(stored.values())}-{max(stored.values())}")
    return stored


def wait_version(stack, client: Client, people: dict, watermark: int) -> dict:
    code = VERSION_CODE.format(study=people["study"], watermark=watermark)
    deadline = time.monotonic() + stack.timeout
    while time.monotonic() < deadline:
        version_id = stack.manage_json(code)
        if version_id:
            data = client.json("GET", f"/api/versions/{version_id}/", people["admin"])
            print(
                f"   version {data['id']}: {data['status']}, judgment watermark "
                f"{data['judgment_watermark']}, fit {data['fit_seconds']:.1f} s"
            )
            return data
        time.sleep(2)
    raise RuntimeError(f"no version learned answer {watermark} within {stack.timeout:g} s")


def publish(client: Client, people: dict, version: dict) -> dict:
    path = f"/api/versions/{version['id']}/publish/"
    status, payload = client.call("POST", path, people["admin"], {})
    if status == 409:  # not judged informative: publishing then needs a reason
        print(f"   409 without a reason: {json.loads(payload)['detail'][:120]}")
        reason = {"reason": "compose smoke run: publishing the version that learned its answers"}
        return client.json("POST", path, people["admin"], reason)
    if status != 200:
        raise RuntimeError(f"POST {path}: {status} {payload[:300]!r}")
    return json.loads(payload)


def snapshot(client: Client, people: dict, answers: dict[str, int]) -> dict:
    """What must survive a restart and a restore: the published version, its Sigma's bytes,
    the smoke's answers in the judgments export, the tokens."""
    study = people["study"]
    published = client.json(
        "GET", f"/api/studies/{study}/metrics/explore/published/", people["admin"]
    )
    status, sigma = client.call(
        "GET", f"/api/studies/{study}/metrics/explore/published/sigma.npy", people["admin"]
    )
    if status != 200:
        raise RuntimeError(f"Sigma download: {status} {sigma[:300]!r}")
    matrix = np.load(io.BytesIO(sigma), allow_pickle=False)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or not np.allclose(matrix, matrix.T):
        raise RuntimeError(f"Sigma is not a symmetric square matrix: {matrix.shape}")
    status, export = client.call(
        "GET", f"/api/studies/{study}/export/judgments.csv", people["admin"]
    )
    if status != 200:
        raise RuntimeError(f"judgments export: {status} {export[:300]!r}")
    rows = list(csv.DictReader(io.StringIO(export.decode())))
    ids = {row["client_id"] for row in rows}
    missing = [client_id for client_id in answers if client_id not in ids]
    if missing:
        raise RuntimeError(f"{len(missing)} of the smoke's answers are not in the export")
    return {
        "published": published["id"],
        "sigma_sha256": hashlib.sha256(sigma).hexdigest(),
        "shape": matrix.shape,
        "judgments": len(rows),
    }


def same(before: dict, after: dict, *, after_restore: bool = False) -> None:
    for key in ("published", "sigma_sha256", "shape"):
        if before[key] != after[key]:
            raise RuntimeError(f"{key} changed: {before[key]} -> {after[key]}")
    if after["judgments"] < before["judgments"]:
        raise RuntimeError(f"judgments lost: {before['judgments']} -> {after['judgments']}")
    where = "the restore" if after_restore else "the restart"
    print(
        f"   after {where}: version {after['published']} still published, Sigma bytes equal, "
        f"{after['judgments']:,} judgments, every smoke answer there, the tokens work"
    )
