"""The study loop through the app's real sampler and refit (no HTTP), in this process or in a
pool of processes, each with its own SQLite file."""

from __future__ import annotations

import os
import secrets
import sys
import time
import uuid
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .crowd import CROWD_FLIPS, Yardstick, answers, p_of, quad
from .sources import ItemSource

STRATEGIES = ("random", "stratified", "uncertainty", "information", "targeted")


def configure(workdir: Path) -> str:
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["MEDIA_ROOT"] = str(workdir / "media")
    os.environ["VAR_DIR"] = str(workdir / "var")
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    warnings.filterwarnings("ignore", message="No directory at")
    import django

    django.setup()
    return os.environ["DATABASE_URL"].split("@")[-1]


@dataclass
class Run:
    strategy: str
    seed: int
    labels: list[int] = field(default_factory=list)
    loglik: list[float] = field(default_factory=list)
    error: list[float] = field(default_factory=list)
    reasons: Counter = field(default_factory=Counter)
    verdicts: list[str] = field(default_factory=list)  # the newest version's, per checkpoint
    items_seen: int = 0
    sampler_s: float = 0.0
    refit_s: float = 0.0

    def first_current(self) -> int | None:
        """The first checkpoint whose version was judged informative: from there the sampler
        of a non-random strategy steers by a metric (before, its picks are uniform). None also
        for runs without verdicts (``strategy_replica.py``'s, which steer by every fit)."""
        pairs = zip(self.labels, self.verdicts, strict=False)
        return next((n for n, verdict in pairs if verdict == "informative"), None)

    def needed(self, target: float) -> float:
        """Labels at which the curve first reaches ``target`` (log-linear), NaN if never."""
        for k, value in enumerate(self.loglik):
            if value >= target:
                if k == 0:
                    return float(self.labels[0])
                a, b = np.log(self.labels[k - 1]), np.log(self.labels[k])
                t = (target - self.loglik[k - 1]) / (value - self.loglik[k - 1])
                return float(np.exp(a + t * (b - a)))
        return float("nan")


def checkpoints(max_labels: int, first: int = 20) -> list[int]:
    out, k = [], 0
    while (n := int(round(first * np.sqrt(2) ** k))) <= max_labels:
        out.append(n)
        k += 1
    return out if out[-1] == max_labels else [*out, max_labels]  # the budget is always fitted


def build_space(source: ItemSource):
    import io

    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile

    from spaces.models import EmbeddingSpace, Item

    tag = uuid.uuid4().hex[:8]
    buf = io.BytesIO()
    np.save(buf, source.vectors.astype(np.float32))
    n, dim = source.vectors.shape
    space = EmbeddingSpace(name=f"le-{tag}", dimension=dim, sha256="0" * 64, item_count=n)
    space.matrix.save(f"le-{tag}.npy", ContentFile(buf.getvalue()), save=False)
    space.save()
    Item.objects.bulk_create(Item(space=space, key=k, row=r) for r, k in enumerate(source.keys))
    ids = np.array(Item.objects.filter(space=space).order_by("row").values_list("id", flat=True))
    User = get_user_model()
    User.objects.bulk_create(User(username=f"le-{tag}-{a}") for a in range(len(CROWD_FLIPS)))
    users = list(User.objects.filter(username__startswith=f"le-{tag}-").order_by("id"))
    return space, ids, users


def study_run(strategy, seed, space, ids, users, source, stick, schedule) -> Run:
    from annotation.labelling.sampling import next_pair
    from annotation.labelling.services import judgment_create
    from annotation.models import Membership, Study
    from learning.refits import service
    from learning.versions import selectors

    study = Study.objects.create(
        name=f"{space.name}-{strategy}-{seed}", space=space, strategy=strategy, overlap=2
    )
    Membership.objects.bulk_create(Membership(user=u, study=study) for u in users)
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.fit_face = False  # the validation share, verdict and gate: the study defaults
    learning.version_min_new_answers, learning.version_min_minutes = 1, 0
    learning.save()
    rng = np.random.default_rng([seed, STRATEGIES.index(strategy) if strategy in STRATEGIES else 9])
    run, seen, reached = Run(strategy, seed), set(), 0
    sigma = None
    for n in range(1, schedule[-1] + 1):
        who = (n - 1) % len(users)
        t = time.perf_counter()
        offer = next_pair(study=study, user=users[who], rng=rng)
        if offer is None:
            break
        i, j = (int(np.searchsorted(ids, item.pk)) for item in (offer.left, offer.right))
        p0 = p_of(quad(source.vectors[[i]] - source.vectors[[j]], source.sigma0))
        y = answers(np.array([i]), np.array([j]), p0, np.array([who]), CROWD_FLIPS, seed)[0]
        judgment_create(
            study=study,
            annotator=users[who],
            item_a_id=offer.left.pk,
            item_b_id=offer.right.pk,
            label="comparable" if y else "incomparable",
            client_id=uuid.uuid4(),
        )
        run.sampler_s += time.perf_counter() - t
        run.reasons[offer.reason] += 1
        seen.update((i, j))
        if n in schedule:
            t = time.perf_counter()
            service.refit_study(study_id=study.pk)
            version = selectors.version_latest_ready(study_id=study.pk, method="explore")
            if version is not None:
                sigma = np.load(version.sigma.path)
            run.verdicts.append(version.verdict if version is not None else "")
            run.refit_s += time.perf_counter() - t
            run.labels.append(n)
            run.loglik.append(stick.loglik(sigma))
            run.error.append(stick.error(sigma))
            reached = reached + 1 if reached or run.loglik[-1] >= stick.target else 0
            if reached >= 2:
                break
    run.items_seen = len(seen)
    return run


_worker: dict = {}


def _worker_init(folder: Path, source: ItemSource, stick: Yardstick, schedule) -> None:
    """A process of its own: its own SQLite file under ``folder``, migrated, one space."""
    from django.core.management import call_command

    folder.mkdir(parents=True, exist_ok=True)
    os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
    configure(folder)
    call_command("migrate", verbosity=0)
    _worker.update(source=source, stick=stick, schedule=schedule)
    _worker["space"], _worker["ids"], _worker["users"] = build_space(source)


def _job(strategy: str, seed: int) -> Run:
    w, t = _worker, time.perf_counter()
    run = study_run(
        strategy, seed, w["space"], w["ids"], w["users"], w["source"], w["stick"], w["schedule"]
    )
    print(f"  seed {seed} {strategy:<12} {run.labels[-1]:>5} labels, loglik "
          f"{run.loglik[-1]:.4f}, {time.perf_counter() - t:.0f} s", file=sys.stderr)  # fmt: skip
    return run


def run_jobs(jobs, processes: int, workdir: Path, source, stick, schedule) -> list[Run]:
    """Every (strategy, seed) study, in this process or in a pool of fresh ones."""
    if processes == 1:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        _worker.update(source=source, stick=stick, schedule=schedule)
        _worker["space"], _worker["ids"], _worker["users"] = build_space(source)
        return [_job(*job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    folders = [workdir / f"worker-{k}" for k in range(processes)]
    # The initializer gets the same arguments in every process: each takes a folder from a queue.
    queue = multiprocessing.get_context("spawn").Manager().Queue()
    for folder in folders:
        queue.put(folder)
    with ProcessPoolExecutor(
        processes,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init_from,
        initargs=(queue, source, stick, schedule),
    ) as pool:
        return list(pool.map(_job, *zip(*jobs, strict=True)))


def _worker_init_from(queue, source, stick, schedule) -> None:
    _worker_init(queue.get(), source, stick, schedule)
