"""A small record study whose members answer as two cohorts (issue 37's tests): the rules
P(comparable) = 2σ(−Σ_f w_f Δ_f²) on standardised fields, cohort A weighing age and income,
B income alone (or A's rule: ``same``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.contrib.auth import get_user_model

from annotation.models import MemberAttribute, Membership, PairJudgment, Study
from learning.versions.selectors import learning_settings_get
from spaces.models import Item
from spaces.records.create import record_space_create

RULE_A = {"age": 0.5, "income": 0.5, "hours": 0.15}
RULE_B = {"income": 0.5, "hours": 0.15}


def record_space(rows: int = 160, seed: int = 0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "key": [f"p{i}" for i in range(rows)],
            "age": rng.integers(18, 80, rows),
            "income": rng.integers(1_000, 9_000, rows),
            "hours": rng.integers(10, 60, rows),
            "sector": rng.choice(["public", "private"], rows),
        }
    )
    space = record_space_create(
        name=f"cohort records {seed}",
        frame=frame,
        numeric=["age", "income", "hours"],
        categorical=["sector"],
        key_column="key",
    )
    fields = {c: ((frame[c] - frame[c].mean()) / frame[c].std()).to_numpy() for c in RULE_A}
    return space, fields


def cohort_study(space, fields, *, name, same=False, per=40, annotators=(4, 4), attribute=True):
    """A study with ``annotators`` members in A and B answering ``per`` distinct pairs each."""
    rng = np.random.default_rng(len(name))
    study = Study.objects.create(name=name, space=space)
    learning = learning_settings_get(study_id=study.pk)
    learning.fit_face, learning.weight_by_reliability = False, False
    learning.save()
    if attribute:
        MemberAttribute.objects.create(study=study, name="group", values=["A", "B"])
    ids = np.array(Item.objects.filter(space=space).order_by("row").values_list("id", flat=True))
    used, rows = set(), []
    for cohort, rule, count in (("A", RULE_A, annotators[0]), ("B", RULE_B, annotators[1])):
        rule = RULE_A if same else rule
        for k in range(count):
            user = get_user_model().objects.create_user(f"{name}-{cohort}{k}")
            values = {"group": cohort} if attribute else {}
            Membership.objects.create(user=user, study=study, attributes=values)
            done = 0
            while done < per:
                a, b = sorted(int(r) for r in rng.choice(ids.size, 2, replace=False))
                if (a, b) in used:
                    continue
                used.add((a, b))
                d = sum(w * (fields[f][a] - fields[f][b]) ** 2 for f, w in rule.items())
                yes = (rng.random() < 2.0 / (1.0 + np.exp(d))) != (rng.random() < 0.1)
                rows.append(
                    PairJudgment(
                        study=study,
                        item_a_id=int(ids[a]),
                        item_b_id=int(ids[b]),
                        label="comparable" if yes else "incomparable",
                        annotator=user,
                    )
                )
                done += 1
    PairJudgment.objects.bulk_create(rows)
    return study
