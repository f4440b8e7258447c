"""Label efficiency of the sampler's strategies with a simulated crowd, and noise robustness.

    python benchmarks/label_efficiency.py            # 5 strategies x 4 seeds (~30 min, 1 core)
    python benchmarks/label_efficiency.py --quick    # random vs targeted, 1 seed (seconds)

**Database.** A throwaway SQLite file in a temporary directory (migrated, deleted at the end);
with DATABASE_URL set, that database instead (point it at an empty throwaway one: the rows
stay). Media and the broker's files go to the temporary directory too.

**Items** (``--items``, pluggable: ``SOURCES``): ``glove`` = GloVe 6B 50d vectors of the demo's
popular names and Hu & Liu opinion words (learning/glove_demo.py), a pool of ``names`` names plus as
many positive and negative words; ``adult`` = as many UCI Adult training records, embedded by
the demo's record-space φ, with Σ₀ = EXPLORE on the paper's Adult pairs (``adult_source``).
**Truth** Σ₀ (``glove``): EXPLORE fitted on the demo's construction
(random name pairs comparable, random positive/negative pairs incomparable, all the demo's
names and words, ``TRUTH_PAIRS`` per label) at a **fixed penalty** ``TRUTH_ALPHA`` = 0.1, so
the truth does not move when EXPLORE's penalty rule changes (the one-split ray rule picks
α ≈ 7.3 here: a Σ₀ so smooth that random's full-data gain over the start is 0.021 of
log-likelihood and the 95 % target sits inside the refit-to-refit noise; α = 0.1 gives back a
truth like the one the strategies were chosen on, Σ₀ scoring -0.434 against a start of -0.647).

**Crowd.** Ten simulated annotators, round-robin: five flip 0 %, then 5, 10, 20 and 30 %, and
one careless (answers at random). Each pair has one true label, drawn once from the paper's
response model P(comparable) = 2σ(-zᵀΣ₀z) (a hash of the pair and the seed: every strategy
meets the same truths), and each annotator reports it flipped at their rate.

**The loop** (no HTTP): ``annotation.labelling.sampling.next_pair`` (the real sampler: overlap 2, then the
study's strategy) → ``annotation.labelling.services.judgment_create`` → at each checkpoint
``learning.refits.service.refit_study`` (the worker's refit: snapshot, ``fit_explore``, version
stored and evaluated; FACE off, ``validation_share = 0`` so only one EXPLORE fit per refit).
The sampler sees the version of the latest checkpoint. **Refit schedule**: after 20 labels and
then every factor √2 (20, 28, 40, 57, 80, 113, ...), and at ``--max-labels``; a run stops one
checkpoint after it first reaches the target.

**Yardstick.** Held-out log-likelihood: the expected log-likelihood of the fitted Σ̂ on
``HELD_OUT`` fresh random pool pairs, labels drawn from Σ₀ (expectation taken exactly:
Σ p₀ log p̂ + (1 - p₀) log(1 - p̂)); and ‖Σ̂ - Σ₀‖_F / ‖Σ₀‖_F. The **start** is the identity
scaled so the median held-out pair has P(comparable) = 1/2 (no data needed); the **full-data**
reference is EXPLORE (same defaults as ``fit_explore``) on ``--full-labels`` answers (1,810)
collected at random by the same crowd, each pair answered twice (as overlap 2 does), weighted
by reliability when the study default is: "the same held-out quality" is 95 % of what random
sampling gains with those answers. Each run's budget (``--max-labels``) is twice that, so that
random's own crossing lies inside its curve (with a budget equal to the reference, random met
the target only at its last checkpoint, in half the seeds, and the ratio read noise).
**Labels needed**: where a run's curve first reaches start + 95 % of the full-data gain
(interpolated linearly in log labels between checkpoints).

**Noise robustness** (``--noise-only`` runs just this part): pure numpy (no database), the same
pool and Σ₀; each pair answered by 3 of 20 annotators, a share 0-30 % of them noisy (flip 30 %),
the rest flip 2 %. Plain EXPLORE (every answer one observation), reliability-weighted EXPLORE
(``learning.core.reliability``) and FACE (k = 3, pairs judged comparable by majority as groups).

Prints markdown tables; ``--html`` writes the curves (plotly, as the dashboards) to a file that
loads ``static/vendor/plotly/plotly.min.js`` by relative path (open it from the checkout).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import secrets  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
import warnings  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.special import expit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TRUTH_PAIRS = 10_000
HELD_OUT = 4_000
CROWD_FLIPS = (0.0, 0.0, 0.0, 0.0, 0.0, 0.05, 0.10, 0.20, 0.30, 0.5)  # 0.5: careless
STRATEGIES = ("random", "stratified", "uncertainty", "information", "targeted")
TARGET_SHARE = 0.95
TRUTH_ALPHA = 0.1  # the truth's EXPLORE penalty, fixed (see the docstring)


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


# --- items and truth (pluggable) ------------------------------------------------------------


@dataclass(frozen=True)
class ItemSource:
    name: str
    keys: list[str]
    vectors: np.ndarray  # (n, d), the pool
    sigma0: np.ndarray  # the truth
    description: str


def glove_source(n_names: int, seed: int = 0) -> ItemSource:
    """The demo's names and opinion words (GloVe 6B 50d); Σ₀ = EXPLORE on the demo's pairs."""
    from experiments import glove_demo
    from learning.core.explore import EXPLORE

    vocabulary = glove_demo.glove_vocabulary()
    row_of = {w: i for i, w in enumerate(vocabulary)}
    names = glove_demo.popular_names(set(row_of))
    positive, negative = glove_demo.opinion_words()
    positive = [w for w in positive if w in row_of and w not in set(names)]
    negative = [w for w in negative if w in row_of and w not in set(names)]
    matrix = glove_demo.glove_matrix()

    def vectors(words):
        return np.asarray(matrix[[row_of[w] for w in words]], dtype=np.float64)

    rng = np.random.default_rng(seed)
    vn, vp, vm = vectors(names), vectors(positive), vectors(negative)
    i = rng.integers(len(names), size=(TRUTH_PAIRS, 2))
    i = i[i[:, 0] != i[:, 1]]
    z = np.vstack(
        [
            vn[i[:, 0]] - vn[i[:, 1]],
            vp[rng.integers(len(positive), size=TRUTH_PAIRS)]
            - vm[rng.integers(len(negative), size=TRUTH_PAIRS)],
        ]
    )
    y = np.r_[np.ones(len(i)), np.zeros(TRUTH_PAIRS)]
    sigma0 = EXPLORE(random_state=0, alpha=TRUTH_ALPHA).fit_differences(z, y).sigma_
    pos = rng.choice(len(positive), size=n_names // 2, replace=False)
    neg = rng.choice(len(negative), size=n_names // 2, replace=False)
    keys = names[:n_names] + [positive[k] for k in pos] + [negative[k] for k in neg]
    return ItemSource(
        "glove",
        keys,
        vectors(keys),
        sigma0,
        f"GloVe 6B 50d: {n_names} popular names + {n_names // 2} positive + {n_names // 2} "
        f"negative opinion words; Σ₀ = EXPLORE (α = {TRUTH_ALPHA}) on {len(i):,} + {TRUTH_PAIRS:,} demo pairs",
    )


def adult_source(n_names: int, seed: int = 0) -> ItemSource:
    """UCI Adult training records as the demo's record space embeds them (φ: the numerics
    standardised, the categoricals one-hot, the label excluded; 43 features); a pool of
    ``2 · n_names`` random records (as many items as ``glove``); Σ₀ = EXPLORE at
    ``TRUTH_ALPHA`` on the paper's pairs over all training records (comparable: same income
    group, opposite gender; incomparable: different income groups; ``experiments.adult.data``)."""
    from experiments.adult import data
    from learning.core.explore import EXPLORE
    from spaces.featuremap import apply_feature_map, build_feature_map

    frame = data.adult_frame("train")
    spec = build_feature_map(
        frame, numeric=data.NUMERIC, categorical=data.CATEGORICAL, excluded=[data.LABEL]
    )
    x = apply_feature_map(spec, frame)
    income = (frame[data.LABEL] == data.POSITIVE).to_numpy()
    pairs, comparable = data.adult_pairs(income, (frame["sex"] == "Female").to_numpy(), seed=seed)
    z = x[pairs[:, 0]] - x[pairs[:, 1]]
    sigma0 = EXPLORE(random_state=0, alpha=TRUTH_ALPHA).fit_differences(z, comparable).sigma_
    rows = np.sort(np.random.default_rng(seed).choice(len(frame), size=2 * n_names, replace=False))
    return ItemSource(
        "adult",
        [f"adult-{r}" for r in rows],
        np.asarray(x[rows], dtype=np.float64),
        sigma0,
        f"UCI Adult training records ({x.shape[1]} features, the demo's φ): {2 * n_names} at "
        f"random; Σ₀ = EXPLORE (α = {TRUTH_ALPHA}) on the paper's {comparable.sum():,} comparable "
        f"+ {(~comparable).sum():,} incomparable pairs over all {len(frame):,} records",
    )


SOURCES = {"glove": glove_source, "adult": adult_source}


# --- the response model -------------------------------------------------------------------


def quad(z: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    return np.einsum("ij,jk,ik->i", z, sigma, z)


def p_of(q: np.ndarray) -> np.ndarray:
    return np.clip(2.0 * expit(-q), 1e-12, 1 - 1e-12)


def unit_hash(*keys: np.ndarray) -> np.ndarray:
    """A fixed uniform number per tuple of integers (splitmix64)."""
    z = np.zeros(np.broadcast(*keys).shape, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in keys:
            z = (z + np.asarray(k).astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def answers(i, j, p0, annotator, flips, seed) -> np.ndarray:
    """Observed labels: the pair's true label (fixed per pair and seed) flipped at the rate."""
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    truth = unit_hash(lo, hi, seed) < p0
    flipped = unit_hash(lo, hi, annotator, seed + 7919) < np.asarray(flips)[annotator]
    return (truth ^ flipped).astype(np.float64)


@dataclass(frozen=True)
class Yardstick:
    z: np.ndarray
    p0: np.ndarray
    sigma0: np.ndarray
    start: float
    best: float  # Σ₀'s own expected log-likelihood
    full: float
    target: float

    def loglik(self, sigma: np.ndarray | None) -> float:
        if sigma is None:
            return self.start
        p = p_of(quad(self.z, sigma))
        return float(np.mean(self.p0 * np.log(p) + (1 - self.p0) * np.log1p(-p)))

    def error(self, sigma: np.ndarray | None) -> float:
        if sigma is None:
            return float("nan")
        return float(np.linalg.norm(sigma - self.sigma0) / np.linalg.norm(self.sigma0))


def random_pairs(n_items: int, size: int, rng) -> tuple[np.ndarray, np.ndarray]:
    i = rng.integers(n_items, size=size)
    j = rng.integers(n_items - 1, size=size)
    return i, j + (j >= i)


def yardstick(
    source: ItemSource, full_labels: int, seed: int, share: float, weighted: bool
) -> Yardstick:
    """Held-out pairs, the start, and the full-data reference: EXPLORE on ``full_labels``
    answers collected at random as the study would (each pair answered by 2 of the crowd),
    reliability-weighted when the study's refits are (``weighted``)."""
    from learning.core.explore import EXPLORE
    from learning.core.reliability import ReliableEXPLORE

    x = source.vectors
    rng = np.random.default_rng(10_000 + seed)
    i, j = random_pairs(len(x), HELD_OUT, rng)
    z = x[i] - x[j]
    p0 = p_of(quad(z, source.sigma0))
    scale = np.log(3.0) / np.median(np.einsum("ij,ij->i", z, z))
    base = Yardstick(z, p0, source.sigma0, 0.0, 0.0, 0.0, 0.0)
    start = base.loglik(scale * np.eye(x.shape[1]))
    fi, fj = random_pairs(len(x), full_labels // 2, rng)
    fi, fj = np.repeat(fi, 2), np.repeat(fj, 2)
    who = np.arange(fi.size) % len(CROWD_FLIPS)
    y = answers(fi, fj, p_of(quad(x[fi] - x[fj], source.sigma0)), who, CROWD_FLIPS, seed)
    z_full = x[fi] - x[fj]
    if weighted:  # the same estimator as the study's refit
        pair = np.arange(fi.size) // 2
        fit = ReliableEXPLORE(explore_params={"random_state": 0})
        sigma = fit.fit_differences(z_full, y, who, pair=pair).sigma_
    else:
        sigma = EXPLORE(random_state=0).fit_differences(z_full, y).sigma_
    full = base.loglik(sigma)
    return Yardstick(
        z, p0, source.sigma0, start, base.loglik(source.sigma0), full,
        start + share * (full - start),
    )  # fmt: skip


# --- the study loop through the real sampler and refit -------------------------------------


@dataclass
class Run:
    strategy: str
    seed: int
    labels: list[int] = field(default_factory=list)
    loglik: list[float] = field(default_factory=list)
    error: list[float] = field(default_factory=list)
    reasons: Counter = field(default_factory=Counter)
    items_seen: int = 0
    sampler_s: float = 0.0
    refit_s: float = 0.0

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
    learning.fit_face, learning.validation_share = False, 0.0
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


# --- summaries --------------------------------------------------------------------------------


def interval(values) -> tuple[float, float, float]:
    """Mean and a 95 % t-interval over seeds (NaN bounds with one value)."""
    from scipy.stats import t as student

    v = np.asarray(values, dtype=float)
    mean = float(np.mean(v))
    if v.size < 2:
        return mean, float("nan"), float("nan")
    half = float(student.ppf(0.975, v.size - 1) * np.std(v, ddof=1) / np.sqrt(v.size))
    return mean, mean - half, mean + half


def fmt_interval(mean, lo, hi, digits=0) -> str:
    if not np.isfinite(mean):
        return "not reached"
    if not np.isfinite(lo):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def efficiency_table(runs: list[Run], stick: Yardstick, pool: int) -> tuple[str, dict]:
    lines = [
        "| strategy | labels to the target (mean [95 % CI] over seeds) | per seed | ratio vs random "
        "| overlap share | pool items touched | sampler s/label | refit s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    summary = {}
    by = {s: [r for r in runs if r.strategy == s] for s in dict.fromkeys(r.strategy for r in runs)}
    random_mean = np.nan
    for strategy, group in by.items():
        needed = np.array([r.needed(stick.target) for r in group])
        reached = needed[np.isfinite(needed)]
        mean, lo, hi = interval(reached) if reached.size == needed.size else (np.nan,) * 3
        if strategy == "random":
            random_mean = mean
        labels = sum(sum(r.reasons.values()) for r in group)
        overlap = sum(r.reasons["overlap"] for r in group) / max(labels, 1)
        touched = np.mean([r.items_seen / pool for r in group])
        per_label = sum(r.sampler_s for r in group) / max(labels, 1)
        refit = sum(r.refit_s for r in group) / max(sum(len(r.labels) for r in group), 1)
        summary[strategy] = {"needed": needed.tolist(), "mean": mean, "ci": [lo, hi]}
        ratio = random_mean / mean if np.isfinite(mean) and np.isfinite(random_mean) else np.nan
        per_seed = ", ".join("–" if not np.isfinite(v) else f"{v:.0f}" for v in needed)
        lines.append(
            f"| {strategy} | {fmt_interval(mean, lo, hi)} | {per_seed} | "
            f"{'–' if not np.isfinite(ratio) else f'{ratio:.2f}x'} | {overlap:.0%} | "
            f"{touched:.0%} | {per_label * 1000:.0f} ms | {refit:.2f} |"
        )
    return "\n".join(lines), summary


def curve_table(runs: list[Run]) -> str:
    """Held-out log-likelihood and relative error per checkpoint, mean over the seeds that ran."""
    strategies = list(dict.fromkeys(r.strategy for r in runs))
    points = sorted({n for r in runs for n in r.labels})
    head = " | ".join(f"{s} loglik | {s} ‖Σ̂-Σ₀‖/‖Σ₀‖" for s in strategies)
    lines = [f"| labels | {head} |", "|---" * (1 + 2 * len(strategies)) + "|"]
    for n in points:
        cells = []
        for s in strategies:
            values = [
                (r.loglik[r.labels.index(n)], r.error[r.labels.index(n)])
                for r in runs
                if r.strategy == s and n in r.labels
            ]
            if not values:
                cells += ["", ""]
                continue
            ll, er = np.array(values).T
            m, lo, hi = interval(ll)
            cells += [fmt_interval(m, lo, hi, 4), f"{np.mean(er):.3f}"]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def first_reach(points, curve, level: float) -> float:
    """Labels at which ``curve`` (values at ``points``) first reaches ``level``, log-linear
    between points; NaN if never."""
    for k, value in enumerate(curve):
        if value >= level:
            if k == 0:
                return float(points[0])
            a, b = np.log(points[k - 1]), np.log(points[k])
            return float(np.exp(a + (level - curve[k - 1]) / (value - curve[k - 1]) * (b - a)))
    return float("nan")


def mean_curve_table(runs: list[Run]) -> str:
    """Labels each strategy's mean curve (over the seeds that ran each checkpoint) needs to
    reach random's mean at random's later checkpoints: the same reading for every strategy,
    less noisy than each run's first crossing of one target."""
    strategies = list(dict.fromkeys(r.strategy for r in runs))
    if "random" not in strategies:
        return ""
    mean = {}
    for s in strategies:
        group = [r for r in runs if r.strategy == s]
        points = sorted({n for r in group for n in r.labels})
        mean[s] = (
            points,
            [
                np.mean([r.loglik[r.labels.index(n)] for r in group if n in r.labels])
                for n in points
            ],
        )
    points, curve = mean["random"]
    head = " | ".join(f"{s} needs | ratio" for s in strategies if s != "random")
    lines = [
        f"| random's mean at (first reached at) | level | {head} |",
        "|---" * (2 * len(strategies)) + "|",
    ]
    for n, level in list(zip(points, curve, strict=True))[len(points) // 2 :]:
        own = first_reach(points, curve, level)  # random's own first reach (<= n: not monotone)
        cells = []
        for s in strategies:
            if s != "random":
                need = first_reach(*mean[s], level)
                cells += (
                    ["not reached", "–"]
                    if not np.isfinite(need)
                    else [f"{need:.0f}", f"{own / need:.2f}x"]
                )
        lines.append(f"| {n} ({own:.0f}) | {level:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --- noise robustness (pure numpy) ------------------------------------------------------------


def noise_study(source: ItemSource, shares, pairs: int, seeds: int, stick: Yardstick) -> dict:
    from learning.core.explore import EXPLORE
    from learning.core.face import FACE
    from learning.core.reliability import ReliableEXPLORE

    x, out = source.vectors, {}
    for share in shares:
        rows = []
        for seed in range(seeds):
            rng = np.random.default_rng([seed, 77])
            flips = np.full(20, 0.02)
            flips[: int(round(share * 20))] = 0.30
            i, j = random_pairs(len(x), pairs, rng)
            who = np.stack([rng.choice(20, 3, replace=False) for _ in range(pairs)]).ravel()
            ii, jj = np.repeat(i, 3), np.repeat(j, 3)
            z = x[ii] - x[jj]
            y = answers(ii, jj, p_of(quad(z, source.sigma0)), who, flips, seed)
            plain = EXPLORE(random_state=0).fit_differences(z, y)
            weighted = ReliableEXPLORE().fit_differences(
                z, y, who, pair=np.repeat(np.arange(pairs), 3)
            )
            majority = np.bincount(np.repeat(np.arange(pairs), 3), y, pairs) >= 2
            face = FACE(n_components=3).fit(x, np.stack([i[majority], j[majority]], axis=1))
            noisy = np.flatnonzero(flips > 0.1)
            rel = weighted.reliability_
            rows.append(
                {
                    "plain_ll": stick.loglik(plain.sigma_),
                    "weighted_ll": stick.loglik(weighted.sigma_),
                    "plain_err": stick.error(plain.sigma_),
                    "weighted_err": stick.error(weighted.sigma_),
                    "plain_auc": auc(stick, plain.sigma_),
                    "weighted_auc": auc(stick, weighted.sigma_),
                    "face_auc": auc(stick, face.sigma_),
                    "noisy_flip_est": float(np.mean(rel.flip_rate[noisy])) if noisy.size else None,
                    "covered": float(
                        np.mean((rel.interval[:, 0] <= flips) & (flips <= rel.interval[:, 1]))
                    ),
                }
            )
        out[share] = rows
    return out


def auc(stick: Yardstick, sigma: np.ndarray) -> float:
    """AUC of -distance for the truth's expected labels (weighted Mann-Whitney, exact)."""
    from sklearn.metrics import roc_auc_score

    score = -quad(stick.z, sigma)
    y = np.r_[np.ones(len(score)), np.zeros(len(score))]
    return float(roc_auc_score(y, np.r_[score, score], sample_weight=np.r_[stick.p0, 1 - stick.p0]))


def noise_table(result: dict) -> str:
    base = {k: np.array([r[k] for r in result[min(result)]]) for k in ("plain_ll", "weighted_ll")}
    lines = [
        "| noisy share | plain EXPLORE loglik (Δ vs noise-free [95 % CI]) | weighted loglik (Δ) "
        "| plain ‖Σ̂-Σ₀‖/‖Σ₀‖ | weighted ‖Σ̂-Σ₀‖/‖Σ₀‖ | AUC plain / weighted / FACE "
        "| est. flip of noisy (true 0.30) | flip intervals covering truth |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for share, rows in result.items():
        col = {k: np.array([r[k] for r in rows], dtype=float) for k in rows[0]}
        cells = []
        for name in ("plain_ll", "weighted_ll"):
            d = interval(col[name] - base[name])
            inside = "✓" if not (d[1] > 0 or d[2] < 0) or share == min(result) else "✗"
            cells.append(
                f"{np.mean(col[name]):.4f} ({d[0]:+.4f} [{d[1]:+.4f}, {d[2]:+.4f}] {inside})"
            )
        flip = col["noisy_flip_est"]
        lines.append(
            f"| {share:.0%} | {cells[0]} | {cells[1]} | {np.mean(col['plain_err']):.3f} | "
            f"{np.mean(col['weighted_err']):.3f} | {np.mean(col['plain_auc']):.3f} / "
            f"{np.mean(col['weighted_auc']):.3f} / {np.mean(col['face_auc']):.3f} | "
            f"{'–' if np.all(np.isnan(flip)) else f'{np.nanmean(flip):.3f}'} | "
            f"{np.mean(col['covered']):.0%} |"
        )
    return "\n".join(lines)


# --- plots ------------------------------------------------------------------------------------


def write_html(path: Path, runs: list[Run], stick: Yardstick, noise: dict | None) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=(
            "held-out log-likelihood vs labels (mean ± 95 % CI over seeds)",
            "‖Σ̂ − Σ₀‖_F / ‖Σ₀‖_F vs labels",
            "noise: held-out log-likelihood vs share of noisy annotators",
            "noise: AUC vs share of noisy annotators",
        ),
    )
    palette = ["#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a"]
    for k, strategy in enumerate(dict.fromkeys(r.strategy for r in runs)):
        group = [r for r in runs if r.strategy == strategy]
        points = sorted({n for r in group for n in r.labels})
        for col, attr in ((1, "loglik"), (2, "error")):
            stats = [
                interval([getattr(r, attr)[r.labels.index(n)] for r in group if n in r.labels])
                for n in points
            ]
            mean, lo, hi = (np.array(v) for v in zip(*stats, strict=True))
            color = palette[k % len(palette)]
            fig.add_trace(
                go.Scatter(x=points, y=mean, name=strategy, legendgroup=strategy,
                           showlegend=col == 1, line={"color": color},
                           error_y={"type": "data", "symmetric": False,
                                    "array": np.nan_to_num(hi - mean),
                                    "arrayminus": np.nan_to_num(mean - lo)}),
                row=1, col=col,
            )  # fmt: skip
    for value, label in ((stick.target, "95 % of full-data gain"), (stick.best, "Σ₀ itself")):
        fig.add_hline(y=value, line_dash="dot", annotation_text=label, row=1, col=1)
    if noise:
        shares = [100 * s for s in noise]
        for k, (key, name) in enumerate(
            (("plain", "plain EXPLORE"), ("weighted", "weighted EXPLORE"), ("face", "FACE"))
        ):
            for col, metric in ((1, "ll"), (2, "auc")):
                if key == "face" and metric == "ll":
                    continue
                stats = [interval([r[f"{key}_{metric}"] for r in rows]) for rows in noise.values()]
                mean, lo, hi = (np.array(v) for v in zip(*stats, strict=True))
                fig.add_trace(
                    go.Scatter(x=shares, y=mean, name=name, legendgroup=name,
                               showlegend=col == 2, line={"color": palette[k + 2], "dash": "dash"},
                               error_y={"type": "data", "symmetric": False,
                                        "array": np.nan_to_num(hi - mean),
                                        "arrayminus": np.nan_to_num(mean - lo)}),
                    row=2, col=col,
                )  # fmt: skip
    fig.update_xaxes(type="log", title_text="labels", row=1)
    fig.update_xaxes(title_text="noisy annotators (%)", row=2)
    fig.update_layout(height=820, title="fairmetric: label efficiency and noise robustness")
    path.parent.mkdir(parents=True, exist_ok=True)
    vendor = os.path.relpath(ROOT / "static/vendor/plotly/plotly.min.js", path.parent.resolve())
    fig.write_html(path, include_plotlyjs=vendor, full_html=True)


# --- main ---------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 2 strategies, small")
    parser.add_argument("--items", choices=sorted(SOURCES), default="glove")
    parser.add_argument("--seeds", type=int)
    parser.add_argument("--strategies", help="comma-separated (default: all four)")
    parser.add_argument(
        "--full-labels",
        type=int,
        help="answers of the full-data reference (default 1810; --quick 160)",
    )
    parser.add_argument(
        "--max-labels",
        type=int,
        help="each run's budget (default twice --full-labels, so that random's crossing of the "
        "target is read inside the curve, not at its last point; --quick: --full-labels)",
    )
    parser.add_argument("--html", type=Path, help="write the curves here (plotly)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--target-share",
        type=float,
        help="share of the full-data gain to reach (default 0.95; --quick 0.5: its tiny budget "
        "is too noisy for 95 %%)",
    )
    parser.add_argument("--noise-only", action="store_true")
    parser.add_argument("--no-noise", action="store_true", help="skip the noise-robustness part")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="run studies in this many processes, each with its own SQLite file (default 1)",
    )
    args = parser.parse_args(argv)
    q = args.quick
    seeds = args.seeds or (1 if q else 4)
    strategies = (args.strategies or ("random,targeted" if q else ",".join(STRATEGIES))).split(",")
    unknown = set(strategies) - set(STRATEGIES)
    bad_share = args.target_share is not None and not 0 < args.target_share <= 1
    small = any(v is not None and v < 20 for v in (args.max_labels, args.full_labels))
    if unknown or bad_share or seeds < 1 or small:
        print(f"error: unknown strategy {sorted(unknown)}, target share outside (0, 1], seeds < 1 "
              "or max-labels/full-labels < 20",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.noise_only and args.no_noise:
        print("error: --noise-only and --no-noise exclude each other", file=sys.stderr)
        return 2
    if args.processes < 1 or (args.processes > 1 and os.environ.get("DATABASE_URL")):
        print("error: --processes must be >= 1, and 1 with DATABASE_URL", file=sys.stderr)
        return 2
    full_labels = args.full_labels or (160 if q else 1810)
    max_labels = args.max_labels or (full_labels if q else 2 * full_labels)
    workdir = Path(tempfile.mkdtemp(prefix="label-efficiency-"))
    started = time.perf_counter()
    try:
        database = configure(workdir)
        source = SOURCES[args.items](n_names=60 if q else 200)
        share = args.target_share or (0.5 if q else TARGET_SHARE)
        from learning.models import StudyLearningSettings

        weighted = StudyLearningSettings().weight_by_reliability  # the default the studies use
        stick = yardstick(source, full_labels, seed=0, share=share, weighted=weighted)
        print(
            f"## Label efficiency ({'quick' if q else 'full'}), {time.strftime('%Y-%m-%d %H:%M')}"
        )
        print(f"\nItems: {source.description}. Pool of {len(source.keys)} items.")
        print(f"Database: {database}; load average {os.getloadavg()[0]:.1f} at start.")
        print(f"Crowd: flip rates {CROWD_FLIPS} (0.5 = careless); overlap 2; seeds {seeds}.")
        print(
            f"Refits: the study defaults (answers weighted by reliability: {weighted}).\n"
            f"Held-out expected log-likelihood: start {stick.start:.4f}, full data "
            f"({full_labels:,} random answers, 2 per pair) {stick.full:.4f}, Σ₀ {stick.best:.4f}; target "
            f"(start + {share:.0%} of the gain) {stick.target:.4f}."
        )
        runs: list[Run] = []
        if not args.noise_only:
            schedule = checkpoints(max_labels)
            print(f"Budget per run: {max_labels:,} labels. Refit schedule (labels): {schedule}\n")
            jobs = [(strategy, seed) for seed in range(seeds) for strategy in strategies]
            runs = run_jobs(jobs, args.processes, workdir, source, stick, schedule)
            table, summary = efficiency_table(runs, stick, len(source.keys))
            print(table)
            print("\nLearning curves (held-out expected log-likelihood, mean [95 % CI]; error):\n")
            print(curve_table(runs))
            print("\nRead on the mean curves (labels to reach random's mean at its checkpoints):\n")
            print(mean_curve_table(runs))
        noise = None
        if not args.no_noise:
            shares = (0.0, 0.3) if q else (0.0, 0.1, 0.2, 0.3)
            noise = noise_study(
                source, shares, pairs=300 if q else 1200, seeds=2 if q else 4, stick=stick
            )
            print("\nNoise robustness (pure numpy; each pair answered by 3 of 20 annotators):\n")
            print(noise_table(noise))
        if args.html:
            write_html(args.html, runs, stick, noise)
        if args.json:
            args.json.write_text(json.dumps(
                {"command": "python benchmarks/label_efficiency.py " + " ".join(argv or sys.argv[1:]),
                 "measured": time.strftime("%Y-%m-%d %H:%M"),
                 "runs": [r.__dict__ | {"reasons": dict(r.reasons)} for r in runs],
                 "noise": {str(k): v for k, v in (noise or {}).items()},
                 "yardstick": {"start": stick.start, "full": stick.full, "target": stick.target,
                               "sigma0": stick.best}}, indent=1, default=float))  # fmt: skip
        print(f"\nwall time {time.perf_counter() - started:.0f} s")
        if args.noise_only:
            return 0
        best = max(
            (s for s in summary if s != "random" and np.isfinite(summary[s]["mean"])),
            key=lambda s: -summary[s]["mean"],
            default=None,
        )
        m = summary.get("random", {}).get("mean", np.nan)
        if not np.isfinite(m):
            print(f"label efficiency: random did not reach the target within {max_labels} labels")
            return 1
        if best is None:
            print(f"label efficiency: only random reached the target within {max_labels} labels "
                  f"({m:.0f})")  # fmt: skip
            return 1
        n = summary[best]["mean"]
        print(
            f"label efficiency: {best} needs {m / n:.1f}x fewer labels than random ({n:.0f} vs {m:.0f})"
        )
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
