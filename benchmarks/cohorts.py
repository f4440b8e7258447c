"""Whose metric? (issue 37): the cohorts' fits and comparison through the app, on a simulated
record table, against the issue's targets. Printed as markdown.

    python benchmarks/cohorts.py            # full (see DRAWS; minutes on two shared cores)
    python benchmarks/cohorts.py --quick    # one draw of each case (smoke test)
    python benchmarks/cohorts.py --draws 40 --cases same

Each draw is a study of its own on one record space (300 people: age, income, hours, tenure
numeric, sector categorical; φ as the app builds it): members with a member attribute
``group`` (values A and B), answers stored as judgments, the pooled refit
(``learning/refits/service.py: refit_study``, the study's default settings but FACE and the
reliability weights off, so that the pooled EXPLORE and the equal-cohort one differ in the
cohorts' weights alone: both plain EXPLORE on the identity prior) and the cohorts' fits
(``learning/cohorts/service.py: cohort_refit``); the figures are read back from the stored
report, as ``GET /api/studies/{id}/cohorts/`` serves them. Annotators answer random distinct
pairs of the pool (50 answers each) by a rule on the standardised differences of the fields:
P(comparable) = 2σ(−Σ_f w_f Δ_f²) with 10 % of answers flipped.

* **differ**: A weighs age 1.0, income 1.0, hours 0.3; B the same but age 0 (the rules differ
  in one field). 8 annotators a cohort (400 answers each). Targets: age named first among the
  fields of Σ_A − Σ_B in ≥ 90 % of draws; the test's p < 0.05 (power, shown).
* **same**: both cohorts follow A's rule; 8 + 8 annotators. Target: p < 0.05 in ≤ 5 % of draws.
* **80/20**: A and B as in *differ*, 16 annotators in A (800 answers), 4 in B (200). Target:
  the equal-cohort fit's held-out gain on B beats the pooled fit's: the mean over draws of
  the per-answer difference (equal − pooled, on B's held-out answers by items) with its 95 %
  interval over draws, and the share of draws where it is > 0.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POOL = 300
PER_ANNOTATOR = 50
FLIP = 0.1
RULE_A = {"age": 0.5, "income": 0.5, "hours": 0.15}
RULE_B = {"income": 0.5, "hours": 0.15}
CASES = {  # name: (rule of A, rule of B, annotators in A, in B)
    "differ": (RULE_A, RULE_B, 8, 8),
    "same": (RULE_A, RULE_A, 8, 8),
    "80/20": (RULE_A, RULE_B, 16, 4),
}
DRAWS = {"differ": 30, "same": 100, "80/20": 30}  # the false-alarm rate needs more draws


def _setup() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="fm-cohorts-"))
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch / 'bench.sqlite3'}")
    os.environ["MEDIA_ROOT"] = str(scratch / "media")
    os.environ["VAR_DIR"] = str(scratch)
    os.environ["REFIT_CACHE_DIR"] = str(scratch / "refit-cache")
    for name in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(name, None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fairmetric_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def table(rng: np.random.Generator):
    import pandas as pd

    return pd.DataFrame(
        {
            "key": [f"p{i}" for i in range(POOL)],
            "age": rng.integers(18, 80, POOL),
            "income": np.round(rng.lognormal(10, 0.5, POOL)),
            "hours": rng.integers(10, 60, POOL),
            "tenure": rng.integers(0, 30, POOL),
            "sector": rng.choice(["public", "private", "none"], POOL),
        }
    )


def space_make(rng):
    from spaces.records.create import record_space_create

    frame = table(rng)
    space = record_space_create(
        name=f"cohorts {rng.integers(1 << 30)}",
        frame=frame,
        numeric=["age", "income", "hours", "tenure"],
        categorical=["sector"],
        key_column="key",
    )
    standard = {c: (frame[c] - frame[c].mean()) / frame[c].std() for c in RULE_A}
    return space, {c: np.asarray(v, float) for c, v in standard.items()}


def study_draw(space, fields: dict, case: str, seed: int):
    """One study of ``case`` with its answers; (study, membership ids by cohort)."""
    from django.contrib.auth import get_user_model

    from annotation.models import MemberAttribute, Membership, PairJudgment, Study
    from learning.versions.selectors import learning_settings_get
    from spaces.models import Item

    rng = np.random.default_rng(seed)
    rule_a, rule_b, n_a, n_b = CASES[case]
    study = Study.objects.create(name=f"{case} {seed} {rng.integers(1 << 30)}", space=space)
    learning = learning_settings_get(study_id=study.pk)
    learning.fit_face = False
    learning.weight_by_reliability = False
    learning.save()
    MemberAttribute.objects.create(study=study, name="group", values=["A", "B"])
    ids = np.array(Item.objects.filter(space=space).order_by("row").values_list("id", flat=True))
    used: set[tuple[int, int]] = set()
    judgments = []
    users = get_user_model().objects
    for cohort, rule, n in (("A", rule_a, n_a), ("B", rule_b, n_b)):
        for k in range(n):
            user = users.create_user(f"{study.pk}-{cohort}{k}")
            Membership.objects.create(user=user, study=study, attributes={"group": cohort})
            done = 0
            while done < PER_ANNOTATOR:
                a, b = sorted(int(r) for r in rng.choice(POOL, 2, replace=False))
                if (a, b) in used:
                    continue
                used.add((a, b))
                d = sum(w * (fields[f][a] - fields[f][b]) ** 2 for f, w in rule.items())
                comparable = rng.random() < 2.0 / (1.0 + np.exp(d))
                if rng.random() < FLIP:
                    comparable = not comparable
                label = "comparable" if comparable else "incomparable"
                judgments.append(
                    PairJudgment(
                        study=study,
                        item_a_id=int(ids[a]),
                        item_b_id=int(ids[b]),
                        label=label,
                        annotator=user,
                    )
                )
                done += 1
    PairJudgment.objects.bulk_create(judgments)
    return study


def run_draw(space, fields, case: str, seed: int) -> dict:
    from learning.cohorts.service import cohort_refit
    from learning.models import CohortReport
    from learning.refits.service import refit_study

    study = study_draw(space, fields, case, seed)
    started = time.perf_counter()
    refit_study(study_id=study.pk)
    pooled_s = time.perf_counter() - started
    cohort_refit(study_id=study.pk)
    cohort_s = time.perf_counter() - started - pooled_s
    report = CohortReport.objects.filter(study=study).first()
    figures = report.figures if report else {}
    differ = figures.get("differ") or {}
    fields_found = differ.get("fields") or []
    versus = {row["on"]: row for row in figures.get("equal_vs_pooled") or []}
    return {
        "status": figures.get("status"),
        "p": differ.get("p_value"),
        "first": fields_found[0]["field"] if fields_found else None,
        "on_b": (versus.get("B") or {}).get("difference"),
        "pooled_s": pooled_s,
        "cohort_s": cohort_s,
    }


def without_attributes(space) -> str:
    """What a study without member attributes pays: the refit task's one check."""
    from annotation.models import Study
    from learning.cohorts.service import cohort_refit, cohorts_wanted

    study = Study.objects.create(name="no attributes", space=space)
    started = time.perf_counter()
    for _ in range(200):
        assert not cohorts_wanted(study.pk)
    check = (time.perf_counter() - started) / 200 * 1000
    outcome = cohort_refit(study_id=study.pk).outcome
    return (
        f"A study without member attributes: the refit task's check (`cohorts_wanted`, one "
        f"indexed query) takes {check:.2f} ms; the cohort fit's outcome: {outcome}."
    )


def _binomial(k: int, n: int) -> str:
    from scipy.stats import beta

    low = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{k}/{n} = {k / n:.0%} (95 % {low:.0%}–{high:.0%})"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--draws", type=int, default=None, help="per case (default: DRAWS)")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--first", type=int, default=0, help="the first draw's number (seeds)")
    args = parser.parse_args(argv)
    _setup()
    space, fields = space_make(np.random.default_rng(2026))
    print(
        "| case | draws | age first | p < 0.05 | equal − pooled on B (per answer) | "
        "equal > pooled | s pooled refit | s cohorts |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        draws = 1 if args.quick else (args.draws or DRAWS[case])
        rows = [
            run_draw(space, fields, case, 1000 * i + 7)
            for i in range(args.first, args.first + draws)
        ]
        ready = [r for r in rows if r["status"] == "ready"]
        first = sum(r["first"] == "age" for r in ready)
        low_p = sum(r["p"] is not None and r["p"] < 0.05 for r in ready)
        diffs = np.array([r["on_b"] for r in ready if r["on_b"] is not None], dtype=float)
        if diffs.size:
            se = diffs.std(ddof=1) / np.sqrt(diffs.size) if diffs.size > 1 else float("nan")
            versus = f"{diffs.mean():+.4f} ± {1.96 * se:.4f}"
            beats = _binomial(int(np.sum(diffs > 0)), diffs.size)
        else:
            versus = beats = "—"
        print(
            f"| {case} | {len(ready)}/{len(rows)} | {_binomial(first, max(len(ready), 1))} | "
            f"{_binomial(low_p, max(len(ready), 1))} | {versus} | {beats} | "
            f"{np.mean([r['pooled_s'] for r in rows]):.1f} | "
            f"{np.mean([r['cohort_s'] for r in rows]):.1f} |",
            flush=True,
        )
    print()
    print(without_attributes(space))


if __name__ == "__main__":
    main()
