"""Virtual annotators: a small asyncio HTTP/1.1 client (keep-alive, no dependencies).

Each annotator holds one connection and loops: ``POST`` a judgment with a fresh ``client_id``
and ``?next=1``, whose answer carries the next pair (``next_pair``) — one request per judgment,
as the labelling page does; ``GET next-pair`` only for the first pair (or when an answer
carried none). A share of the answers simulate a lost response: the first response is
thrown away and the POST is sent again with the same ``client_id`` (the server must answer 200
with the same judgment). Like the labelling page, a connection error, a 5xx or a 429 is retried
with growing back-off and the same ``client_id`` — only a response the client actually read
counts as an acknowledgement. Every request is recorded (endpoint, status, latency).

With ``batch`` > 1 an annotator answers in batches, as a client that is behind does: it holds
``batch`` pairs, answers them all in one ``POST judgments/batch/?next=<batch>`` whose answer
carries the next ``batch`` pairs; a lost response re-sends the whole batch (every result must
then be ``duplicate`` with the same judgment ids).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from dataclasses import dataclass

from .browser import login_form
from .connection import ConnectionFailed, HttpConnection
from .record import Record

LABELS = ("comparable", "incomparable", "unsure")
LABEL_WEIGHTS = (0.45, 0.45, 0.10)
RETRY_STATUSES = {429, 500, 502, 503, 504}
PAGE_EVERY = 10  # a browser annotator loads the labelling page every this many answers
LOGIN_PROBE_SECONDS = 1.0


@dataclass
class LoadConfig:
    host: str
    port: int
    study_id: int
    seconds: float
    warmup: float = 0.0  # seconds of load before the measured window (not timed)
    lost_share: float = 0.1  # answers whose first response is thrown away and retried
    think: float = 0.0  # mean seconds an annotator looks at a pair before answering (0: none)
    timeout: float = 15.0  # per request
    give_up_after: float = 90.0  # stop retrying one request after this long
    next_in_answer: bool = True  # POST ?next=1 (False: GET next-pair before every POST)
    batch: int = 1  # answers per request (> 1: the batch endpoint)
    ports: tuple[int, ...] = ()  # more web "machines": annotator i talks to ports[i % n]
    seed: int = 0
    login_probe: tuple[str, str] | None = None  # (username, password): post the login form


async def run_annotators(config: LoadConfig, tokens: list[str | dict]) -> Record:
    """``tokens``: one credential per annotator (an API token, or a browser's headers)."""
    record = Record()
    record.started = time.perf_counter() + config.warmup
    deadline = record.started + config.seconds
    run = _batch_annotator if config.batch > 1 else _annotator
    probes = [_login_prober(config, deadline, record)] if config.login_probe else []
    await asyncio.gather(
        *(run(config, token, i, deadline, record) for i, token in enumerate(tokens)), *probes
    )
    record.finished = time.perf_counter()
    return record


def _auth(credential: str | dict) -> tuple[dict, str]:
    """(request headers, endpoint-name suffix) of a token or a browser session."""
    if isinstance(credential, dict):
        return {**credential, "Accept": "application/json"}, " (session)"
    return {"Authorization": f"Bearer {credential}", "Accept": "application/json"}, ""


async def _login_prober(config: LoadConfig, deadline: float, record: Record) -> None:
    conn = HttpConnection(config.host, _port(config, 0), config.timeout)
    body, headers = login_form(*config.login_probe)
    try:
        while time.perf_counter() < deadline:
            await _call(
                conn,
                record,
                "POST login form",
                "POST",
                "/accounts/login/",
                headers,
                body,
                give_up_at=time.perf_counter() + config.give_up_after,
            )
            conn.close()  # a new browser each time
            await asyncio.sleep(LOGIN_PROBE_SECONDS)
    finally:
        conn.close()


async def _call(conn, record, endpoint, method, path, headers, body=b"", *, give_up_at):
    """One logical request, retried (same body) on connection errors, 5xx and 429."""
    delay = 0.1
    while True:
        start = time.perf_counter()
        try:
            status, payload = await conn.request(method, path, headers, body)
        except ConnectionFailed as exc:
            kind = exc.args[0].split(":")[0]
            record.connection_errors[kind] += 1
            record.failures_at.append((time.perf_counter(), f"{endpoint} {kind}"))
            status, payload = None, b""
        else:
            record.note(endpoint, status, time.perf_counter() - start)
            if status not in RETRY_STATUSES:
                return status, payload
        if time.perf_counter() >= give_up_at:
            return status, payload
        await asyncio.sleep(delay * (0.5 + random.random()))
        delay = min(2.0, delay * 2)


async def _next_pair(conn, record, base: str, auth: dict, config: LoadConfig, kind: str = ""):
    give_up_at = time.perf_counter() + config.give_up_after
    return await _call(
        conn,
        record,
        "GET next-pair" + kind,
        "GET",
        f"{base}/next-pair/",
        auth,
        give_up_at=give_up_at,
    )


async def _annotator(
    config: LoadConfig, token: str | dict, index: int, deadline: float, record: Record
):
    rng = random.Random(config.seed * 1000 + index)
    conn = HttpConnection(config.host, _port(config, index), config.timeout)
    auth, kind = _auth(token)
    post_headers = {**auth, "Content-Type": "application/json"}
    base = f"/api/studies/{config.study_id}"
    page = f"/studies/{config.study_id}/label/"
    answers = 0
    try:
        status, payload = await _call(
            conn,
            record,
            "GET studies" + kind,
            "GET",
            "/api/studies/",
            auth,
            give_up_at=time.perf_counter() + config.give_up_after,
        )
        if status != 200 or config.study_id not in [s["id"] for s in json.loads(payload)]:
            record.problems.append(f"annotator {index}: study list {status} {payload[:200]!r}")
            return
        pair = None
        while time.perf_counter() < deadline:
            if kind and answers % PAGE_EVERY == 0:  # the labelling page, as a browser loads it
                page_auth = {**auth, "Accept": "text/html"}
                give_up_at = time.perf_counter() + config.give_up_after
                status, payload = await _call(
                    conn,
                    record,
                    "GET label page" + kind,
                    "GET",
                    page,
                    page_auth,
                    give_up_at=give_up_at,
                )
                if status != 200:
                    record.problems.append(f"annotator {index}: label page {status}")
                    return
            answers += 1
            if pair is None:
                status, payload = await _next_pair(conn, record, base, auth, config, kind)
                if status != 200:
                    record.problems.append(
                        f"annotator {index}: next-pair {status} {payload[:200]!r}"
                    )
                    return
                pair = json.loads(payload)
            if pair["done"]:
                record.done_answers += 1
                return
            if config.think:
                await asyncio.sleep(config.think * rng.uniform(0.5, 1.5))
            client_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            body = json.dumps(
                {
                    "item_a": pair["left"]["id"],
                    "item_b": pair["right"]["id"],
                    "label": rng.choices(LABELS, LABEL_WEIGHTS)[0],
                    "client_id": client_id,
                    "elapsed_ms": rng.randint(300, 4000),
                }
            ).encode()
            path = f"{base}/judgments/" + ("?next=1" if config.next_in_answer else "")
            pair = await _answer(
                conn,
                record,
                path,
                post_headers,
                body,
                client_id,
                rng.random() < config.lost_share,
                config,
                index,
                kind,
            )
    finally:
        conn.close()


async def _answer(conn, record, path, headers, body, client_id, lose_first, config, index, kind):
    """Send one answer (and its simulated retry); returns the next pair it carried, or None."""
    give_up_at = time.perf_counter() + config.give_up_after
    record.sent.add(client_id)
    status, payload = await _call(
        conn, record, "POST judgment" + kind, "POST", path, headers, body, give_up_at=give_up_at
    )
    first_id = None
    if status in (200, 201):
        first_id = json.loads(payload)["id"]
        if status == 201 and record.measuring():
            record.judgments_created += 1
        if lose_first:  # the response "never arrived": send the same answer again
            record.lost_simulated += 1
            status, payload = await _call(
                conn,
                record,
                "POST judgment (retry)" + kind,
                "POST",
                path,
                headers,
                body,
                give_up_at=give_up_at,
            )
            if status == 201:
                record.problems.append(f"annotator {index}: a retry of {client_id} got 201")
    if status not in (200, 201):
        record.unacknowledged.add(client_id)
        if status is not None:
            record.problems.append(f"annotator {index}: POST {status} {payload[:200]!r}")
        return None
    data = json.loads(payload)
    judgment_id = data["id"]
    if first_id is not None and judgment_id != first_id:
        record.problems.append(
            f"annotator {index}: {client_id} stored as {first_id}, retry says {judgment_id}"
        )
    record.acknowledged[client_id] = judgment_id
    return data.get("next_pair")


def _port(config: LoadConfig, index: int) -> int:
    return config.ports[index % len(config.ports)] if config.ports else config.port


def _new_answer(rng, pair) -> dict:
    return {
        "item_a": pair["left"]["id"],
        "item_b": pair["right"]["id"],
        "label": rng.choices(LABELS, LABEL_WEIGHTS)[0],
        "client_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "elapsed_ms": rng.randint(300, 4000),
    }


async def _batch_annotator(
    config: LoadConfig, token: str | dict, index: int, deadline: float, record: Record
):
    rng = random.Random(config.seed * 1000 + index)
    conn = HttpConnection(config.host, _port(config, index), config.timeout)
    auth, _ = _auth(token)
    post_headers = {**auth, "Content-Type": "application/json"}
    base = f"/api/studies/{config.study_id}"
    path = f"{base}/judgments/batch/?next={config.batch}"
    try:
        pairs: list[dict] = []
        while time.perf_counter() < deadline:
            while len(pairs) < config.batch:  # the first pairs (or after a short answer)
                status, payload = await _next_pair(conn, record, base, auth, config)
                pair = json.loads(payload) if status == 200 else None
                if pair is None or pair["done"]:
                    record.done_answers += pair is not None
                    if pair is None:
                        record.problems.append(f"annotator {index}: next-pair {status}")
                    return
                if all(
                    {p["left"]["id"], p["right"]["id"]} != {pair["left"]["id"], pair["right"]["id"]}
                    for p in pairs
                ):
                    pairs.append(pair)
            if config.think:
                await asyncio.sleep(config.think * config.batch * rng.uniform(0.5, 1.5))
            answers = [_new_answer(rng, p) for p in pairs]
            pairs = await _send_batch(
                conn, record, path, post_headers, answers, rng.random() < config.lost_share, index
            )
    finally:
        conn.close()


async def _send_batch(conn, record, path, headers, answers, lose_first, index) -> list[dict]:
    """One batch (and its simulated re-send); returns the next pairs it carried."""
    give_up_at = time.perf_counter() + 90.0
    body = json.dumps({"answers": answers}).encode()
    record.sent.update(a["client_id"] for a in answers)
    status, payload = await _call(
        conn, record, "POST batch", "POST", path, headers, body, give_up_at=give_up_at
    )
    first = None
    if status == 200:
        first = json.loads(payload)
        if record.measuring():
            record.judgments_created += sum(r["status"] == "created" for r in first["results"])
        if lose_first:
            record.lost_simulated += 1
            status, payload = await _call(
                conn,
                record,
                "POST batch (retry)",
                "POST",
                path,
                headers,
                body,
                give_up_at=give_up_at,
            )
    if status != 200:
        record.unacknowledged.update(a["client_id"] for a in answers)
        if status is not None:
            record.problems.append(f"annotator {index}: batch {status} {payload[:200]!r}")
        return []
    data = json.loads(payload) if lose_first else first
    for n, (answer, result) in enumerate(zip(answers, data["results"], strict=True)):
        if result["status"] not in ("created", "duplicate"):
            record.unacknowledged.add(answer["client_id"])
            if result["status"] != "throttled":
                record.problems.append(f"annotator {index}: answer {result}")
            continue
        judgment_id = result["judgment"]["id"]
        earlier = first["results"][n] if lose_first and first is not None else None
        if earlier is not None and earlier["status"] in ("created", "duplicate"):  # noqa: SIM102
            if result["status"] != "duplicate" or earlier["judgment"]["id"] != judgment_id:
                record.problems.append(
                    f"annotator {index}: re-sent {answer['client_id']} got {result['status']}"
                )
        record.acknowledged[answer["client_id"]] = judgment_id
    return data.get("next_pairs") or []
