"""The test world of the refit benchmarks (``refit.py``, ``refit_profile.py``, ``growth.py``): a
study over a random N_ITEMS x d word space with its learning settings and ANNOTATORS members,
pairs labelled by EXPLORE's response model, answers loaded in bulk (COPY on PostgreSQL,
``bulk_create`` elsewhere) or sent one by one as the API does, and scratch PostgreSQL databases.
Imported by those scripts; the world's functions after they set up Django.
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


def postgres_run(sql: str) -> None:
    """Run ``sql`` on the local server's ``postgres`` database (a scratch database's creation
    or removal)."""
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as c:
        c.execute(sql)


def response_pairs(world: World, rng: np.random.Generator, count: int):
    """``count`` distinct pairs of rows (a < b) in random order, and their labels drawn from
    EXPLORE's response model with a rank-5 Σ0 ("comparable" / "incomparable")."""
    dim = world.matrix.shape[1]
    pairs = np.unique(
        np.sort(rng.integers(0, N_ITEMS, size=(int(count * 1.2) + 100, 2)), axis=1), axis=0
    )
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    pairs = pairs[rng.permutation(len(pairs))[:count]]
    basis = np.linalg.qr(rng.normal(size=(dim, 5)))[0]
    z = world.matrix[pairs[:, 0]] - world.matrix[pairs[:, 1]]
    d = 4.0 * np.sum((z @ basis) ** 2, axis=1)
    labels = np.where(rng.random(len(d)) < 2 / (1 + np.exp(d)), "comparable", "incomparable")
    return pairs, labels


def answers_send(study, answers, gap: float = 0.0) -> None:
    """Send ``answers`` (user, item a id, item b id, label) through the API's service, ``gap``
    seconds apart."""
    import time

    from annotation.labelling.services import judgment_create

    for number, (user, a, b, label) in enumerate(answers):
        if number and gap:
            time.sleep(gap)
        judgment_create(
            study=study,
            annotator=user,
            item_a_id=a,
            item_b_id=b,
            label=label,
            client_id=uuid.uuid4(),
        )


def scratch_environment(database_url: str, scratch: Path) -> dict[str, str]:
    """The environment of a benchmark on a scratch database and folder: the embedded broker and
    result store (no Redis)."""
    return {
        "DATABASE_URL": database_url,
        "MEDIA_ROOT": str(scratch / "media"),
        "VAR_DIR": str(scratch / "var"),
        "DJANGO_SETTINGS_MODULE": "fairmetric_site.settings",
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "",
        "CELERY_RESULT_BACKEND": "",
    }
