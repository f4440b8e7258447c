"""The test world of the refit benchmarks (``refit.py``, ``growth.py``): a study over a random
N_ITEMS x d word space with its learning settings and ANNOTATORS members, and answers loaded in
bulk (COPY on PostgreSQL, ``bulk_create`` elsewhere). Imported by those scripts, after they set
up Django.
"""

from __future__ import annotations

import hashlib
import io
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ANNOTATORS = 20
N_ITEMS = 5000


@dataclass
class World:
    study: object  # annotation.models.Study
    matrix: np.ndarray  # the space's vectors (N_ITEMS x d)
    item_ids: np.ndarray  # Item ids by row
    users: list  # the ANNOTATORS members


def study_world(tag: str, dim: int, rng: np.random.Generator, *, debounce: int) -> World:
    """A study named ``tag`` over a new random space, its settings (``debounce`` seconds, FACE
    with min(10, d - 1) components) and its members."""
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from annotation.models import Membership, Study
    from learning.models import StudyLearningSettings
    from spaces.models import EmbeddingSpace, Item

    matrix = rng.normal(scale=0.5, size=(N_ITEMS, dim))
    folder = Path(settings.MEDIA_ROOT) / "spaces"
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / f"{tag}.npy", matrix)
    space = EmbeddingSpace.objects.create(
        name=tag,
        dimension=dim,
        matrix=f"spaces/{tag}.npy",
        item_count=N_ITEMS,
        sha256=hashlib.sha256((folder / f"{tag}.npy").read_bytes()).hexdigest(),
    )
    Item.objects.bulk_create(Item(space=space, key=f"w{r}", row=r) for r in range(N_ITEMS))
    item_ids = np.asarray(
        Item.objects.filter(space=space).order_by("row").values_list("id", flat=True)
    )
    study = Study.objects.create(name=tag, space=space)
    StudyLearningSettings.objects.create(
        study=study, debounce_seconds=debounce, face_components=min(10, dim - 1)
    )
    users = [get_user_model().objects.create_user(f"{tag}-{i}") for i in range(ANNOTATORS)]
    Membership.objects.bulk_create(Membership(user=u, study=study) for u in users)
    return World(study, matrix, item_ids, users)


def judgments_load(study_id: int, columns: dict[str, np.ndarray]) -> None:
    """Answers of the study from parallel columns (``item_a_id``, ``item_b_id``,
    ``annotator_id``, ``label``, optional ``elapsed_ms``), in order; then ANALYZE (planner
    statistics, as autovacuum keeps them)."""
    from django.db import connection

    from annotation.models import PairJudgment

    if connection.vendor == "postgresql":
        _copy_judgments(study_id, columns)
    else:
        PairJudgment.objects.bulk_create(
            (
                PairJudgment(study_id=study_id, **{k: v[i].item() for k, v in columns.items()})
                for i in range(len(columns["label"]))
            ),
            batch_size=5000,
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def _copy_judgments(study_id: int, columns: dict) -> None:
    from django.db import connection

    from annotation.models import PairJudgment

    names = [*columns, "study_id", "source", "provenance", "client_id", "is_gold", "created_at"]
    text = io.StringIO()
    for i in range(len(columns["label"])):
        values = [str(v[i]) for v in columns.values()]
        text.write("\t".join([*values, str(study_id), "annotated", "", str(uuid.uuid4()), "f"]))
        text.write("\t2026-11-26 12:00:00+00\n")
    table = connection.ops.quote_name(PairJudgment._meta.db_table)
    connection.ensure_connection()
    statement = f"COPY {table} ({', '.join(names)}) FROM STDIN"
    with connection.connection.cursor() as cursor, cursor.copy(statement) as copy:
        copy.write(text.getvalue())
    connection.connection.commit()
