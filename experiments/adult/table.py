"""The Adult table's plumbing: the export API download, the test measures, the printout.

What ``python manage.py reproduce_adult_table`` does with it (:mod:`experiments.adult.protocol`
runs the runs), as a downstream user would:

1. downloads, over HTTP with an API token, each run's published EXPLORE version (metadata),
   its Sigma (``sigma.npy``) and the record space's feature map φ (the metadata's
   ``links.feature_map``) — :func:`download`, from this app served in-process by
   :func:`local_export`;
2. embeds the run's training and test records with φ
   (:func:`spaces.records.featuremap.apply_feature_map`, the function the export documentation
   says to copy);
3. measures each trained classifier on the test records — B-Acc, S-Con, GR-Con and the gender
   and race gaps (:class:`TestSet`, :mod:`experiments.adult.measures`);
4. prints mean ± sd over the runs beside the paper's numbers (:func:`format_table`), each row
   with the validity of its Sigma as the export API gave it (:func:`validity_cell`: verdicts,
   gain over the constant prediction, held-out AUC, any recorded publish reason).
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from wsgiref.simple_server import WSGIRequestHandler, make_server

import numpy as np
from django.contrib.auth import get_user_model
from django.core.wsgi import get_wsgi_application
from django.db import connections
from django.utils import timezone

from accounts.tokens import api_token_create, token_revoke
from annotation.models import Membership
from experiments.adult.data import GENDER_COLUMN, LABEL, POSITIVE, RACE_COLUMN
from experiments.adult.measures import balanced_accuracy, consistency, rate_gaps
from spaces.records.featuremap import apply_feature_map, validate_feature_map

COLUMNS = ["B-Acc,%", "S-Con", "GR-Con", "GapG RMS", "GapG max", "GapR RMS", "GapR max"]
# The seed paper's table (its columns reordered: gender gaps, then race gaps), by our row keys.
PAPER = {
    "baseline": [82.9, 0.848, 0.865, 0.179, 0.216, 0.089, 0.105],
    "sensr": [78.9, 0.934, 0.984, 0.068, 0.087, 0.055, 0.067],
    "explore": [79.4, 0.966, 0.987, 0.065, 0.084, 0.044, 0.059],
    "explore-no-gender": [78.9, 0.933, 0.993, 0.066, 0.084, 0.050, 0.063],
    "explore-authors": [79.4, 0.966, 0.987, 0.065, 0.084, 0.044, 0.059],  # their estimator's row
    "project": [82.7, 0.868, 1.000, 0.145, 0.192, 0.064, 0.086],
}
ROWS = {
    "baseline": "Baseline",
    "sensr": "SenSR (its own metric)",
    "explore": "SenSR + EXPLORE (with gender)",
    "explore-no-gender": "SenSR + EXPLORE (without gender)",
    "explore-authors": "SenSR + the authors' EXPLORE",
    "project": "Project",
}
# The rows the table runs unless --rows says otherwise: the paper's four as docs/adult.md measured
# them; the control (the authors' EXPLORE) and the paper's "Project" are asked for by name.
TABLE_ROWS = ("baseline", "sensr", "explore", "explore-no-gender")
SPOUSES = [("Husband",), ("Wife",)]
GENDER_RACE = [(g, r) for g in ("Male", "Female") for r in ("White", "Non-white")]
TIMEOUT = 60


class DownloadError(RuntimeError):
    """The export API did not give what the experiment needs."""


@dataclass(frozen=True)
class Downloaded:
    metadata: dict
    sigma: np.ndarray
    feature_map: dict


def _get(url: str, token: str) -> bytes:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", "replace")
        raise DownloadError(f"GET {url}: HTTP {exc.code} {detail}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise DownloadError(f"GET {url}: {getattr(exc, 'reason', exc)}") from None


def download(*, base_url: str, token: str, study_id: int) -> Downloaded:
    """The published EXPLORE metric of ``study_id`` and its feature map, through the API."""
    if not base_url.startswith(("http://", "https://")):
        raise DownloadError(f"the URL must start with http:// or https://, not {base_url!r}")
    root = f"{base_url.rstrip('/')}/api/studies/{study_id}/metrics/explore/published/"
    try:
        metadata = json.loads(_get(root, token))
    except json.JSONDecodeError:
        raise DownloadError(f"GET {root}: not JSON") from None
    sigma = np.load(io.BytesIO(_get(root + "sigma.npy", token)), allow_pickle=False)
    link = (metadata.get("links") or {}).get("feature_map")
    if not link:
        raise DownloadError(
            f"study {study_id}'s space exports no feature map (not a record space?)"
        )
    try:
        feature_map = validate_feature_map(json.loads(_get(link, token)))
    except (json.JSONDecodeError, ValueError) as exc:
        raise DownloadError(f"GET {link}: not a feature map ({exc})") from None
    if sigma.ndim != 2 or sigma.shape != (len(feature_map["feature_names"]),) * 2:
        raise DownloadError(
            f"Sigma is {sigma.shape}, the feature map has {len(feature_map['feature_names'])} "
            "features"
        )
    return Downloaded(metadata=metadata, sigma=sigma, feature_map=feature_map)


def _versions(frame, spec: dict, columns: list[str], values: list[tuple]) -> list[np.ndarray]:
    """φ of ``frame`` with ``columns`` set to each tuple of ``values`` (the counterfactuals)."""
    out = []
    for row in values:
        changed = frame.copy()
        for column, value in zip(columns, row, strict=True):
            changed[column] = value
        out.append(apply_feature_map(spec, changed))
    return out


@dataclass(frozen=True)
class TestSet:
    x: np.ndarray
    y: np.ndarray
    male: np.ndarray
    white: np.ndarray
    spouses: list[np.ndarray]
    gender_race: list[np.ndarray]

    @classmethod
    def of(cls, frame, spec: dict) -> TestSet:
        return cls(
            x=apply_feature_map(spec, frame),
            y=(frame[LABEL] == POSITIVE).to_numpy(),
            male=(frame[GENDER_COLUMN] == "Male").to_numpy(),
            white=(frame[RACE_COLUMN] == "White").to_numpy(),
            spouses=_versions(frame, spec, ["relationship"], SPOUSES),
            gender_race=_versions(frame, spec, [GENDER_COLUMN, RACE_COLUMN], GENDER_RACE),
        )

    def measure(self, predict: Callable[[np.ndarray], np.ndarray]) -> list[float]:
        """The table's columns for one classifier."""
        pred = predict(self.x)
        gender, race = rate_gaps(self.y, pred, self.male), rate_gaps(self.y, pred, self.white)
        return [
            100 * balanced_accuracy(self.y, pred),
            consistency([predict(x) for x in self.spouses]),
            consistency([predict(x) for x in self.gender_race]),
            *gender,
            *race,
        ]


def _cell(values: np.ndarray, column: int) -> str:
    digits = 1 if column == 0 else 3
    mean = float(np.mean(values))
    if values.size < 2:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {float(np.std(values, ddof=1)):.{digits}f}"


NO_SIGMA = {
    "baseline": "no metric",
    "sensr": "SenSR's own metric I − P (not learned)",
    "project": "no metric: the sensitive directions projected out of the data",
}


def _spread(values: list[float], digits: int, sign: str = "+") -> str:
    form = f"{sign}.{digits}f"
    if len(values) == 1:
        return format(values[0], form)
    low, high = format(min(values), form), format(max(values), form)
    return f"{format(float(np.mean(values)), form)} (runs {low} to {high})"


def validity_cell(key: str, validities: list[dict | None]) -> str:
    """A row's Sigma as judged: the verdicts over the runs, the gain over the constant
    prediction per answer (its 95 % interval for one run), the held-out AUC, the basis."""
    if key in NO_SIGMA:
        return NO_SIGMA[key]
    known = [v for v in validities if v]
    if not known:
        return "its Sigma's validity: not given by the API"
    verdicts = sorted({v["verdict"] for v in known})
    counts = ", ".join(f"{sum(v['verdict'] == w for v in known)} {w}" for w in verdicts)
    text = f"its Sigma: {counts}"
    bases = sorted({v["figures"]["basis"] for v in known if v["figures"].get("basis")})
    if bases:
        text += f" on {' / '.join(bases)}"
    gains = [v["figures"]["gain"] for v in known if v["figures"].get("gain") is not None]
    if gains:
        text += f"; gain over the constant {_spread(gains, 3)} per answer"
        interval = known[0]["figures"].get("gain_interval")
        if len(known) == 1 and interval:
            text += f" (95 % interval {interval[0]:+.3f} to {interval[1]:+.3f})"
    aucs = [v["figures"]["auc"] for v in known if v["figures"].get("auc") is not None]
    if aucs:
        text += f"; held-out AUC {_spread(aucs, 3, sign='')}"
    overridden = sum(1 for v in known if v.get("override"))
    if overridden:
        text += f"; {overridden} published with a recorded reason"
    return text


def format_table(
    results: dict[str, np.ndarray], validity: dict[str, list[dict | None]] | None = None
) -> str:
    """Each of our rows (mean ± sd over runs) with the paper's figures beneath it, and (given
    ``validity``) how the row's Sigma was judged."""
    width = 34
    lines = [f"{'':<{width}}" + "".join(f"{c:>16}" for c in COLUMNS)]
    for key, rows in results.items():
        cells = [_cell(rows[:, j], j) for j in range(len(COLUMNS))]
        lines.append(f"{ROWS.get(key, key):<{width}}" + "".join(f"{c:>16}" for c in cells))
        if validity is not None:
            lines.append(f"{'':<4}{validity_cell(key, validity.get(key, []))}")
        if key in PAPER:
            paper = [f"{v:.1f}" if j == 0 else f"{v:.3f}" for j, v in enumerate(PAPER[key])]
            lines.append(f"{'  the paper':<{width}}" + "".join(f"{c:>16}" for c in paper))
    lines.append("the paper: 10 restarts, each a random 80/20 split of both files")
    return "\n".join(lines)


DOWNSTREAM_USER = "adult-downstream"


@contextlib.contextmanager
def local_export(*studies) -> Iterator[tuple[str, str]]:
    """``(base URL, token)`` of this app served in-process on a free local port.

    The token belongs to a local user ``adult-downstream`` (no password; a reviewer of the
    studies, the least role that may export) and is revoked, and the server stopped, on exit.
    """
    user, made = get_user_model().objects.get_or_create(username=DOWNSTREAM_USER)
    if made:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    for study in studies:
        Membership.objects.get_or_create(
            user=user, study=study, defaults={"role": Membership.Role.REVIEWER}
        )
    token, key = api_token_create(
        user=user, name=f"reproduce_adult_table {timezone.now():%Y-%m-%d %H:%M:%S}"
    )

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args) -> None:
            pass

    application = get_wsgi_application()

    def app(environ, start_response):
        try:
            return application(environ, start_response)
        finally:
            connections.close_all()  # this server thread's connections

    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, name="adult-export", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", key
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        token_revoke(token=token, actor=user)
