"""A deleted study's refit caches go (issue #39, item 8): at once where the web process shares
the worker's disk (after the deletion commits), and from every worker's disk at its next sweep;
a live study's folder stays."""

from __future__ import annotations

import pytest

from annotation.models import Study
from learning.refits import cache, service
from tests.annotation.factories import make_space, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def space(media_root):
    return make_space(n_words=20)


def cached(study: Study):
    folder = cache.study_cache_dir(study)
    folder.mkdir(parents=True)
    (folder / "judgments.npz").write_bytes(b"cached rows")
    return folder


def test_a_deleted_studys_folder_goes_after_the_commit(space, django_capture_on_commit_callbacks):
    study = make_study(space=space, name="Doomed")
    kept = make_study(space=space, name="Kept")
    folder, other = cached(study), cached(kept)
    with django_capture_on_commit_callbacks(execute=True):
        study.delete()
    assert not folder.exists()
    assert other.exists()


def test_the_sweep_removes_the_folders_of_studies_deleted_elsewhere(space):
    study = make_study(space=space, name="Deleted by another host")
    kept = make_study(space=space, name="Kept")
    folder, other = cached(study), cached(kept)
    Study.objects.filter(pk=study.pk).delete()  # (a queryset delete: on_commit never runs here)
    assert folder.exists()
    service.refit_sweep()
    assert not folder.exists()
    assert other.exists()
