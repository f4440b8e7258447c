"""The refit tests' world: a small synthetic space with a known Sigma0
(tests/learning/synthetic.py), a study on it with three annotators, FACE-4, and a version for
every change."""

from __future__ import annotations

import pytest

from learning.versions import selectors

from ..synthetic import space_create, study_create


@pytest.fixture
def world(db, media_root):
    space, items = space_create(media_root)
    study, users = study_create(space)
    learning = selectors.learning_settings_get(study_id=study.pk)
    learning.face_components = 4
    learning.version_min_new_answers = 1  # every change is worth a version, unless a test says
    learning.save()
    return space, items, study, users
