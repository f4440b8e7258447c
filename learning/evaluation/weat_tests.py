"""A study's own WEAT tests, defined by its admins on the WEAT pages or through the API.

* :func:`weat_draft` checks what was sent: a name not used by another test of the study, a
  kind, four set names and four word sets. Words are looked up in the study's space as the
  evaluation looks them up (:func:`learning.evaluation.weat.word_rows`); words not found are
  dropped and listed (``WeatDraft.unknown``), never stored. A set left with fewer words than
  the evaluation needs (``weat.MIN_WORDS``), more than ``MAX_WORDS`` words or a word in two
  sets is refused with :class:`WeatInputError` (an ``InvalidInput`` naming the field).
* :func:`weat_preview`: the draft under the Euclidean metric and the study's current metric
  (published, else newest ready), computed in the request: at most ``MAX_WORDS`` words a set,
  ``PREVIEW_PERMUTATIONS`` sampled partitions, no bootstrap, and the metric's factor ``W``
  cached per process (the vectors mapped by it), so no eigendecomposition after the first.
* :func:`weat_test_save` stores the draft in the study's own suite (created on first use and
  attached to the study, so every later refit evaluates it as any suite) and, after the commit,
  queues ``learning.weat_test`` (:func:`weat_test_evaluate` in the worker): the Euclidean
  baseline and every ready version of the study, with the evaluation's full permutation and
  bootstrap counts. Editing a test deletes its results first (they were for other words).
* :func:`weat_test_delete`: a test of the study's own suite (shared suites are staff's).

Only word studies have WEAT tests (``EmbeddingSpace.holds_words``): :func:`require_weat`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Max

from annotation.access import Action, require
from annotation.models import Study
from audit.services import Action as AuditAction
from audit.services import audit_record
from common.errors import InvalidInput, NotFound, duplicate_as_conflict
from common.text import text_problem
from learning.evaluation import weat
from learning.models import MetricVersion, WeatSuite, WeatTest
from learning.versions.selectors import version_current
from learning.versions.sigmas import fitted_metric, sigma_of

logger = logging.getLogger(__name__)

TASK = "learning.weat_test"
MAX_WORDS = 100  # per set: keeps the preview cheap and the page readable
MAX_WORD_CHARS = 255
PREVIEW_PERMUTATIONS = 2000
SET_LABELS = {
    "x_words": "First target set (X)",
    "y_words": "Second target set (Y)",
    "a_words": "First attribute set (A)",
    "b_words": "Second attribute set (B)",
}
NAME_FIELDS = ("x_name", "y_name", "a_name", "b_name")
MANAGE_REFUSED = "Only an admin of the study can define its WEAT tests."


class WeatInputError(InvalidInput):
    """Bad input for a WEAT test; ``field`` names the form field (None: the whole test)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class WeatDraft:
    """A checked test, not stored yet: the words found, per set, and those not found."""

    name: str
    kind: str
    names: dict[str, str]  # x_name … b_name
    words: dict[str, list[str]]  # x_words … b_words: found in the space, as written
    unknown: dict[str, list[str]] = field(default_factory=dict)  # per set: not in the space

    @property
    def unknown_words(self) -> list[str]:
        return [w for name in weat.SETS for w in self.unknown.get(name, [])]

    def as_test(self, suite: WeatSuite | None = None) -> WeatTest:
        """An unsaved ``WeatTest`` of the draft (the preview runs it)."""
        return WeatTest(suite=suite, name=self.name, kind=self.kind, **self.names, **self.words)


def require_weat(study: Study) -> None:
    """NotFound for a study whose items are not words: WEAT compares sets of words."""
    if not study.space.holds_words:
        raise NotFound(
            f"WEAT compares sets of words; the items of {study.name!r} are "
            f"{study.space.get_kind_display()}, so it has no WEAT tests."
        )


def words_split(text: str) -> list[str]:
    """Words pasted or typed: one per line or separated by commas; blanks and repeats dropped."""
    words = (w.strip() for w in re.split(r"[\n,]", text or ""))
    return list(dict.fromkeys(w for w in words if w))


def study_tests(study: Study):
    """Every test attached to the study (its own suite's and shared suites')."""
    return WeatTest.objects.filter(suite__studies=study).distinct()


def own_test(study: Study, test_id) -> WeatTest:
    """A test of the study's own suite (the ones its admins may change), else NotFound."""
    test = WeatTest.objects.filter(suite__owner_study=study, pk=test_id).first()
    if test is None:
        raise NotFound("No such WEAT test of this study (shared suites are changed by staff).")
    return test


def _text(value, label: str, field_name: str, *, limit: int, required: bool = True) -> str:
    value = str(value or "").strip()
    if required and not value:
        raise WeatInputError(f"{label}: give a name.", field_name)
    if len(value) > limit:
        raise WeatInputError(f"{label}: at most {limit} characters.", field_name)
    problem = text_problem(value)
    if problem:
        raise WeatInputError(f"{label} {problem}.", field_name)
    return value


def weat_draft(
    *, study: Study, name, kind, names: dict, words: dict, test: WeatTest | None = None
) -> WeatDraft:
    """Check a test for ``study`` (``test``: the one being edited); see the module docstring."""
    require_weat(study)
    name = _text(name, "The test", "name", limit=200)
    if study_tests(study).filter(name=name).exclude(pk=getattr(test, "pk", None)).exists():
        raise WeatInputError(f"The study already has a WEAT test named {name!r}.", "name")
    if kind not in WeatTest.Kind.values:
        raise WeatInputError("Say whether the association is meaningful or unfair.", "kind")
    clean_names = {
        f: _text(names.get(f), SET_LABELS[f.replace("name", "words")], f, limit=100)
        for f in NAME_FIELDS
    }
    sets: dict[str, list[str]] = {}
    for set_name in weat.SETS:
        given = words.get(set_name) or []
        if isinstance(given, str):
            given = words_split(given)
        if not isinstance(given, list) or not all(isinstance(w, str) for w in given):
            raise WeatInputError(f"{SET_LABELS[set_name]}: give a list of words.", set_name)
        given = list(dict.fromkeys(w.strip() for w in given if w.strip()))
        if len(given) > MAX_WORDS:
            raise WeatInputError(
                f"{SET_LABELS[set_name]}: at most {MAX_WORDS} words ({len(given)} given).",
                set_name,
            )
        for word in given:
            problem = text_problem(word)
            if problem or len(word) > MAX_WORD_CHARS:
                why = problem or f"is longer than {MAX_WORD_CHARS} characters"
                raise WeatInputError(f"{SET_LABELS[set_name]}: a word {why}.", set_name)
        sets[set_name] = given
    rows = weat.word_rows((w for ws in sets.values() for w in ws), study.space)
    found = {s: [w for w in ws if w in rows] for s, ws in sets.items()}
    unknown = {s: [w for w in ws if w not in rows] for s, ws in sets.items()}
    unknown = {s: ws for s, ws in unknown.items() if ws}
    seen: dict[int, str] = {}
    for set_name, ws in found.items():
        for word in ws:
            other = seen.setdefault(rows[word], set_name)
            if other != set_name:
                raise WeatInputError(
                    f"“{word}” is in two sets ({SET_LABELS[other]} and {SET_LABELS[set_name]}): "
                    "keep it in one.",
                    set_name,
                )
    for set_name, least in weat.MIN_WORDS.items():
        if len(found[set_name]) < least:
            missing = unknown.get(set_name)
            raise WeatInputError(
                f"{SET_LABELS[set_name]} needs at least {least} word"
                f"{'s' if least > 1 else ''} of the space ({len(found[set_name])} found"
                + (f"; not in the space: {', '.join(missing)}" if missing else "")
                + ").",
                set_name,
            )
    return WeatDraft(name=name, kind=kind, names=clean_names, words=found, unknown=unknown)


@dataclass(frozen=True)
class PreviewRow:
    metric: str  # "Euclidean", or the version's label
    version: MetricVersion | None
    outcome: object  # learning.core.weat.WeatOutcome


def weat_preview(*, study: Study, draft: WeatDraft) -> list[PreviewRow]:
    """The draft under the Euclidean metric and under the study's current metric (when one
    exists), with ``PREVIEW_PERMUTATIONS`` permutations and no bootstrap; nothing stored."""
    test = draft.as_test()
    metrics: list[tuple[str, MetricVersion | None]] = [("Euclidean", None)]
    current = version_current(study_id=study.pk)
    if current is not None:
        metrics.append((f"{current.label or current.method} (#{current.pk})", current))
    rows = []
    for name, version in metrics:
        factor = None if version is None else fitted_metric(version).factor  # cached
        [(_, outcome, _)] = weat.weat_outcomes(
            [test],
            study.space,
            None,
            n_permutations=PREVIEW_PERMUTATIONS,
            n_boot=0,
            factor=factor,
        )
        rows.append(PreviewRow(metric=name, version=version, outcome=outcome))
    return rows


def own_suite(study: Study) -> WeatSuite:
    """The study's own suite (created and attached to the study on first use), locked for the
    rest of the transaction so that two saves number their tests one after the other."""
    suite, created = WeatSuite.objects.get_or_create(
        owner_study=study,
        defaults={
            "name": f"Tests of study #{study.pk}",
            "description": f"Defined by the admins of {study.name} on its WEAT page.",
        },
    )
    if created:
        suite.studies.add(study)
    return WeatSuite.objects.select_for_update().get(pk=suite.pk)


def weat_test_save(
    *, user, study: Study, draft: WeatDraft, test: WeatTest | None = None
) -> WeatTest:
    """Store the draft (a new test, or ``test`` changed) and queue its results after the
    commit."""
    require(user, study, Action.MANAGE, MANAGE_REFUSED)
    with transaction.atomic():
        suite = own_suite(study)
        if test is None:
            last = suite.tests.aggregate(last=Max("position"))["last"]
            test = draft.as_test(suite)
            test.position = 0 if last is None else last + 1
        else:
            test = own_test(study, test.pk)
            test.results.all().delete()  # computed for other words
            for key, value in {
                "name": draft.name,
                "kind": draft.kind,
                **draft.names,
                **draft.words,
            }.items():
                setattr(test, key, value)
        created = test.pk is None
        with duplicate_as_conflict(f"The study already has a WEAT test named {draft.name!r}."):
            test.save()  # two saves with one name at once: the second a 409
        audit_record(
            action=AuditAction.WEAT_TEST_SAVE,
            actor=user,
            target=test,
            study_id=study.pk,
            detail={"name": test.name, "kind": test.kind, "created": created},
        )
        test_id = test.pk
        transaction.on_commit(lambda: weat_test_enqueue(test_id))
    return test


def weat_test_delete(*, user, study: Study, test_id) -> str:
    """Delete a test of the study's own suite with its results; its name."""
    require(user, study, Action.MANAGE, MANAGE_REFUSED)
    with transaction.atomic():
        test = own_test(study, test_id)
        name = test.name
        audit_record(
            action=AuditAction.WEAT_TEST_DELETE,
            actor=user,
            target=test,
            study_id=study.pk,
            detail={"name": name},
        )
        test.delete()
    return name


def weat_test_enqueue(test_id: int) -> bool:
    """Queue the test's results by name (the worker's ``learning.weat_test``)."""
    try:
        current_app.send_task(
            TASK, args=[test_id], queue=settings.CELERY_TASK_DEFAULT_QUEUE, ignore_result=True
        )
    except Exception:  # a down broker: the next refit evaluates the test
        logger.warning("could not queue the WEAT results of test %s", test_id, exc_info=True)
        return False
    return True


def weat_test_evaluate(test_id: int) -> int:
    """In the worker: the test's Euclidean baseline in each attached study's space and its
    results under every ready version of those studies; the number of results stored."""
    test = WeatTest.objects.filter(pk=test_id).first()
    if test is None:
        return 0
    stored = 0
    studies = Study.objects.filter(weat_suites__tests=test).select_related("space").distinct()
    spaces_done: set[int] = set()
    for study in studies:
        if study.space_id not in spaces_done:
            spaces_done.add(study.space_id)
            stored += len(
                weat.weat_evaluate(
                    tests=[test], space=study.space, sigma=None, metric=weat.EUCLIDEAN
                )
            )
        for version in MetricVersion.objects.ready().filter(study=study).order_by("-pk"):
            stored += len(
                weat.weat_evaluate(
                    tests=[test],
                    space=study.space,
                    sigma=sigma_of(version),
                    metric=version.label or version.method,
                    version=version,
                )
            )
    return stored
