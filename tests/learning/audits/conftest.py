"""Two small worlds for the audit room: a space of words with a FACE metric, and a record space
of 40 pairs of "twins" (the same person once as a woman, once as a man) whose published
EXPLORE metric ignores sex — so a model that uses sex violates exactly between twins."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Membership
from spaces.records.create import record_space_create
from tests.annotation.factories import make_metric_version, make_space, make_study, make_user

Role = Membership.Role
TWINS = 40


def people(users: dict, study) -> dict:
    users = dict(users)
    users["annotator"] = make_user("ann", study=study, role=Role.ANNOTATOR)
    users["reviewer"] = make_user("rev", study=study, role=Role.REVIEWER)
    users["admin"] = make_user("adm", study=study, role=Role.ADMIN)
    users["outsider"] = make_user("out")
    return users


@pytest.fixture
def words(db, media_root) -> dict:
    """46 words in R^8, a study on all of them, a published FACE version (one direction out)."""
    space = make_space(n_words=40, dimension=8)
    study = make_study(space=space, name="Words")
    sigma = np.eye(8)
    sigma[0, 0] = 0.0
    version = make_metric_version(
        study=study, method="face", sigma=sigma, label="face-1", is_published=True
    )
    keys = list(space.items.order_by("row").values_list("key", flat=True))
    return {"space": space, "study": study, "version": version, "keys": keys} | {
        "users": people({}, study)
    }


def twins_frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    ages = rng.permutation(np.arange(21, 21 + TWINS))  # distinct: twins are the only d = 0 pairs
    jobs = rng.choice(["clerk", "nurse", "engineer"], size=TWINS)
    rows = []
    for i in range(TWINS):
        for sex in ("Female", "Male"):
            rows.append(
                {
                    "id": f"p{i:02d}{sex[0]}",
                    "age": int(ages[i]),
                    "job": str(jobs[i]),
                    "sex": sex,
                    "income": ">50K" if ages[i] > 45 else "<=50K",
                }
            )
    return pd.DataFrame(rows)


@pytest.fixture
def twins(db, media_root) -> dict:
    frame = twins_frame()
    space = record_space_create(
        name="twins",
        frame=frame,
        numeric=["age"],
        categorical=["job", "sex"],
        label_column="income",
        key_column="id",
    )
    study = make_study(space=space, name="Twins")
    names = space.feature_map["feature_names"]
    keep = np.diag([0.0 if n.startswith("sex=") else 1.0 for n in names])
    version = make_metric_version(
        study=study, method="explore", sigma=keep, label="explore-sex-out", is_published=True
    )
    return {"space": space, "study": study, "version": version, "frame": frame} | {
        "users": people({}, study)
    }


def twin_scores(frame: pd.DataFrame, *, sex: bool) -> pd.DataFrame:
    age = (frame["age"].to_numpy() - 45) / 10
    logit = age + (frame["sex"].eq("Male").to_numpy() * 1.5 if sex else 0.0)
    score = 1 / (1 + np.exp(-logit))
    return pd.DataFrame(
        {"key": frame["id"], "score": score, "decision": np.where(score >= 0.5, "yes", "no")}
    )


def csv_upload(table: pd.DataFrame | str, name: str = "scores.csv") -> SimpleUploadedFile:
    text = table if isinstance(table, str) else table.to_csv(index=False)
    return SimpleUploadedFile(name, text.encode("utf-8"), content_type="text/csv")


def parquet_upload(table: pd.DataFrame, name: str = "scores.parquet") -> SimpleUploadedFile:
    buffer = io.BytesIO()
    table.to_parquet(buffer, index=False)
    return SimpleUploadedFile(name, buffer.getvalue())
