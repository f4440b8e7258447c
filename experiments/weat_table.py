"""The seed paper's WEAT table on a study's data: fit FACE-k and EXPLORE, run the WEATs, report.

Inputs (the paper's construction, as ``load_demo`` stores it):

* FACE: the study's comparable groups (the demo: one group of ~1,200 popular names), for each
  k in ``ks``;
* EXPLORE: the study's *imported* judgments labelled comparable (y=1) or incomparable (y=0)
  (the demo: 50,000 name pairs and 50,000 positive/negative opinion-word pairs); answers given
  by annotators are left out, so the table reproduces the paper's setting whatever has been
  labelled since.

Versions are stored with ``parameters["source"] = "reproduce_weat_table"``. A new run deletes
the earlier unpublished versions of that source in the study (their WEAT results cascade) before
storing its own; a published one is kept. The Euclidean baseline is cached per space.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from annotation.models import LabelCode, Study
from learning.core.explore import EXPLORE
from learning.core.face import FACE
from learning.evaluation.weat import (
    EUCLIDEAN,
    N_PERMUTATIONS,
    RANDOM_STATE,
    weat_baseline,
    weat_evaluate_version,
)
from learning.models import MetricVersion, WeatResult, WeatSuite, WeatTest
from learning.refits import snapshots
from learning.versions.storage import metric_version_create, metric_version_delete

SOURCE = "reproduce_weat_table"
K_VALUES = (3, 10, 20)
INCOMPARABLE, COMPARABLE = LabelCode.INCOMPARABLE, LabelCode.COMPARABLE


class ReproductionError(ValueError):
    """The study lacks what the reproduction needs."""


@dataclass(frozen=True)
class Reproduction:
    tests: list[WeatTest]  # in the paper's order: meaningful first
    columns: list[str]  # euclidean, explore, face-3, ...
    results: dict[tuple[int, str], WeatResult]  # (test id, column) -> result
    versions: list[MetricVersion]
    seconds: dict[str, float]


def _inputs(study: Study):
    marks = snapshots.study_data_marks(study_id=study.pk)
    groups = snapshots.group_snapshot(study_id=study.pk, excluded_annotators=[]).rows
    snapshot = snapshots.judgment_snapshot(
        study_id=study.pk, watermark=marks.judgment_watermark, excluded_annotators=[]
    )
    keep = (snapshot.annotator == -1) & (snapshot.label != 2)  # imported, not unsure
    pairs = (snapshot.row_a[keep], snapshot.row_b[keep], snapshot.label[keep].astype(float))
    if not groups:
        raise ReproductionError(f"study {study.name!r} has no comparable groups for FACE")
    if pairs[0].size == 0 or np.unique(pairs[2]).size < 2:
        raise ReproductionError(
            f"study {study.name!r} needs imported comparable and incomparable judgments for EXPLORE"
        )
    return marks, groups, pairs


def _replace_earlier(study: Study) -> int:
    earlier = MetricVersion.objects.filter(
        study=study, parameters__source=SOURCE, is_published=False
    )
    count = 0
    for version in earlier:
        metric_version_delete(version=version)
        count += 1
    return count


def _fit_all(study: Study, ks: Sequence[int], log: Callable[[str], None], run: str):
    marks, groups, (row_a, row_b, y) = _inputs(study)
    space = study.space
    common = {
        "judgment_watermark": marks.judgment_watermark,
        "group_watermark": marks.group_watermark,
    }
    rows = np.unique(np.concatenate(groups))
    local = {r: i for i, r in enumerate(rows.tolist())}
    group_vectors = space.vectors(rows)
    local_groups = [np.array([local[r] for r in g.tolist()]) for g in groups]
    fits = []
    for k in ks:
        started = time.perf_counter()
        model = FACE(n_components=k).fit(group_vectors, local_groups)
        fits.append(
            (
                "face",
                f"face-{k}",
                model.sigma_,
                {"n_components": k},
                {"groups": len(groups), "grouped_items": int(rows.size)},
                {"heterogeneity": float(getattr(model, "heterogeneity_", np.nan))},
                time.perf_counter() - started,
            )
        )
        log(f"fitted FACE k={k} on {len(groups)} group(s) of {rows.size} items")
    started = time.perf_counter()
    pair_rows = np.unique(np.concatenate([row_a, row_b]))
    vectors = space.vectors(pair_rows)
    index = np.searchsorted(pair_rows, np.stack([row_a, row_b]))
    z = vectors[index[0]] - vectors[index[1]]
    model = EXPLORE().fit_differences(z, y)
    fits.append(
        (
            "explore",
            "explore",
            model.sigma_,
            {"max_eigenvalue": "auto"},
            {
                "comparable": int((y == COMPARABLE).sum()),
                "incomparable": int((y == INCOMPARABLE).sum()),
            },
            {
                "loglik": float(model.loglik_),
                "n_iter": int(model.n_iter_),
                "converged": bool(model.converged_),
            },
            time.perf_counter() - started,
        )
    )
    log(
        f"fitted EXPLORE on {len(y)} pairs ({model.n_iter_} iterations, "
        f"converged={bool(model.converged_)})"
    )
    versions = []
    for method, label, sigma, params, counts, diagnostics, seconds in fits:
        versions.append(
            metric_version_create(
                study=study,
                method=method,
                sigma=sigma,
                label=label,
                parameters=params | {"source": SOURCE, "run": run},
                counts=counts,
                diagnostics=diagnostics,
                fit_seconds=seconds,
                **common,
            )
        )
    return versions


def paper_order(tests: Sequence[WeatTest]) -> list[WeatTest]:
    """Meaningful associations first (as in the seed paper's table), then by position."""
    meaningful = WeatTest.Kind.MEANINGFUL
    return sorted(tests, key=lambda t: (t.kind != meaningful, t.position))


def reproduction_run(
    *,
    study: Study,
    suite: WeatSuite,
    ks: Sequence[int] = K_VALUES,
    n_permutations: int = N_PERMUTATIONS,
    random_state: int = RANDOM_STATE,
    log: Callable[[str], None] = lambda _: None,
) -> Reproduction:
    """Fit, store and evaluate; see the module docstring."""
    if not suite.tests.exists():
        raise ReproductionError(f"the WEAT suite {suite.name!r} has no tests")
    if any(k < 1 or k >= study.space.dimension for k in ks):
        raise ReproductionError(f"FACE k must be between 1 and {study.space.dimension - 1}")
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    removed = _replace_earlier(study)
    if removed:
        log(f"removed {removed} earlier version(s) of this command")
    versions = _fit_all(study, ks, log, run=uuid.uuid4().hex[:12])
    seconds["fit"] = time.perf_counter() - started
    started = time.perf_counter()
    results: dict[tuple[int, str], WeatResult] = {}
    for result in weat_baseline(
        suite, study.space, n_permutations=n_permutations, random_state=random_state
    ):
        results[(result.test_id, EUCLIDEAN)] = result
    suite_tests = set(suite.tests.values_list("id", flat=True))
    for version in versions:
        for result in weat_evaluate_version(
            version, n_permutations=n_permutations, random_state=random_state
        ):
            if result.test_id in suite_tests:
                results[(result.test_id, version.label)] = result
    seconds["weat"] = time.perf_counter() - started
    face = [v.label for v in versions if v.method == "face"]
    columns = [EUCLIDEAN, "explore", *face]
    tests = paper_order(list(suite.tests.all()))
    return Reproduction(tests, columns, results, versions, seconds)


# --- output -------------------------------------------------------------------------------------


def weat_title(test: WeatTest) -> str:
    return f"{test.x_name} / {test.a_name}"


def format_p(p: float, n_partitions: int) -> str:
    """Two decimals from 0.1 up, three significant digits below, ``<1/n`` for a sampled zero."""
    if p == 0:
        return f"<{1 / n_partitions:.0e}"
    if p >= 0.1:
        return f"{p:.2f}"
    return f"{p:.3g}" if p >= 1e-3 else f"{p:.1e}"


def table_text(reproduction: Reproduction) -> str:
    """The paper's layout: rows = tests, per metric the p-value and d; ``*`` marks p < 0.05."""
    names = {EUCLIDEAN: "Euclidean", "explore": "EXPLORE"}
    heads = [names.get(c, c.upper()) for c in reproduction.columns]
    width = max(len(weat_title(t)) for t in reproduction.tests) + 2
    lines = [
        " " * (width + 3) + "".join(f"{h:^16}" for h in heads),
        " " * (width + 3) + "".join(f"{'p':>9}{'d':>6} " for _ in heads),
    ]
    kind = None
    for test in reproduction.tests:
        if kind is not None and test.kind != kind:
            lines.append("-" * (width + 3 + 16 * len(heads)))
        kind = test.kind
        cells = []
        for column in reproduction.columns:
            result = reproduction.results.get((test.pk, column))
            if result is None:
                cells.append(f"{'n/a':>15} ")
                continue
            mark = "*" if result.p_value < 0.05 else " "
            p = format_p(result.p_value, result.n_partitions)
            cells.append(f"{p + mark:>9}{result.effect_size:>6.2f} ")
        lines.append(f"{test.position:>2} {weat_title(test):<{width}}" + "".join(cells))
    lines.append(
        "* p < 0.05 (significant association). Above the line: meaningful associations "
        "(should stay significant); below: unfair ones (should not)."
    )
    return "\n".join(lines)


def table_rows(reproduction: Reproduction) -> list[dict]:
    """The table as JSON-ready rows, in table order (``position`` is the suite position)."""
    rows = []
    for test in reproduction.tests:
        for column in reproduction.columns:
            result = reproduction.results.get((test.pk, column))
            if result is None:
                continue
            rows.append(
                {
                    "test": weat_title(test),
                    "metric": column,
                    "p_value": result.p_value,
                    "effect_size": result.effect_size,
                    "n_partitions": result.n_partitions,
                    "exact": result.exact,
                    "position": test.position,
                    "kind": test.kind,
                }
            )
    return rows
