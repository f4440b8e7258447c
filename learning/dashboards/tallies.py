"""The counts behind a study's dashboard figures, kept up to a watermark and extended with the
answers that came after it.

Everything the figures need from the answers is a sum over answers or over pairs, or a sorted
list, so new answers extend it without the old ones being read again:

* per (day, annotator, source, label): how many answers — the progress per day, the label mix,
  the totals and each annotator's label counts;
* per pair, its answers of each label, people's and imported, gold included: the
  disagreements (``annotation/review/selectors.py: disagreement_tally``);
* the answers by people to gold pairs (annotator, items, label), matched against the study's
  gold pairs at each refresh (so a new or changed gold pair needs no recomputation);
* each annotator's times per answer, kept sorted (``agreement.duration_keys``): exact medians;
* the agreement's pair tallies (``agreement.PairTallies``: per-pair label counts, per-annotator
  majority counts, per-annotator-pair confusion cells) for κ, α and the majority.

``study_tallies`` (the dashboard worker's) keeps them in a file per study beside the refits'
cache (``learning/refits/cache.py: study_cache_dir``, ``dashboard.npz``) with the highest
judgment id they include, their number and checksum (``answer_rows``). At the next refresh one
aggregate gives the study's count and checksum; the answers after the watermark are read and
added, and the tallies are trusted only when the cached count and checksum plus the new
answers' equal the database's. Otherwise — an answer deleted, edited or committed out of id
order, the file missing or garbled — every answer is read again. Both ways the tallies are the
same arrays (``extended`` from nothing over all rows is the full computation; tested equal).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields

import numpy as np

from annotation.models import Source, Study
from learning.dashboards import agreement, answer_rows
from learning.dashboards.answer_rows import (
    ANNOTATOR,
    DAY,
    ELAPSED,
    GOLD,
    ID,
    ITEM_A,
    ITEM_B,
    LABEL,
    SOURCE,
)
from learning.refits import cache as refit_cache

logger = logging.getLogger(__name__)
FORMAT = 1  # bumped when the file's arrays change meaning
ANNOTATED = answer_rows.SOURCES.index(Source.ANNOTATED)


@dataclass
class FigureTallies:
    upto: int  # highest judgment id included
    count: int  # judgments included
    check: int  # their checksum (answer_rows.checksum)
    table: np.ndarray  # (k, 5) rows (day, annotator or -1, source, label, answers), sorted
    gold: np.ndarray  # (g, 4) rows (annotator, item a, item b, label): people's gold answers
    durations: np.ndarray  # agreement.duration_keys of people's timed answers, sorted
    pairs: agreement.PairTallies  # people's answers, gold answers excluded
    all_keys: np.ndarray  # agreement.pair_key of every answered pair, ascending
    all_counts: np.ndarray  # (pairs, 3): its answers of each label (LabelCode), all answers

    @property
    def figures_agreement(self) -> agreement.Agreement:
        found = agreement.agreement_of(self.pairs)
        found.medians = agreement.durations_medians(self.durations)
        return found


def empty() -> FigureTallies:
    none = np.zeros(0, dtype=np.int64)
    tables = (np.zeros((0, 5), np.int64), np.zeros((0, 4), np.int64))
    return FigureTallies(
        0, 0, 0, *tables, none, agreement.empty_pairs(), none, np.zeros((0, 3), np.int64)
    )


def extended(tallies: FigureTallies, rows: np.ndarray) -> FigureTallies:
    """``tallies`` with the answers of ``rows`` (``answer_rows.COLUMNS``) added."""
    if rows.shape[0] == 0:
        return tallies
    table = np.concatenate(
        [rows[:, [DAY, ANNOTATOR, SOURCE, LABEL]], np.ones((rows.shape[0], 1), np.int64)], axis=1
    )
    people = rows[rows[:, ANNOTATOR] >= 0]  # a person's answers, imported ones named to them too
    new_durations = agreement.duration_keys(people[:, ANNOTATOR], people[:, ELAPSED])
    durations = np.insert(
        tallies.durations, np.searchsorted(tallies.durations, new_durations), new_durations
    )
    gold = people[:, GOLD] == 1
    plain = people[~gold]
    all_keys, all_counts = add_pair_counts(
        tallies.all_keys,
        tallies.all_counts,
        agreement.pair_key(rows[:, ITEM_A], rows[:, ITEM_B]),
        rows[:, LABEL],
    )
    return FigureTallies(
        upto=max(tallies.upto, int(rows[:, ID].max())),
        count=tallies.count + rows.shape[0],
        check=tallies.check + answer_rows.checksum(rows),
        table=agreement.combine([tallies.table, table], [1, 1], keys=4),
        gold=np.concatenate([tallies.gold, people[gold][:, [ANNOTATOR, ITEM_A, ITEM_B, LABEL]]]),
        durations=durations,
        pairs=agreement.extend_pairs(
            tallies.pairs,
            agreement.pair_key(plain[:, ITEM_A], plain[:, ITEM_B]),
            plain[:, ANNOTATOR],
            plain[:, LABEL],
        ),
        all_keys=all_keys,
        all_counts=all_counts,
    )


def add_pair_counts(
    keys: np.ndarray, counts: np.ndarray, new_keys: np.ndarray, new_codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-pair label counts (ascending keys) with the answers (pair keys, label codes) added."""
    if new_keys.size == 0:
        return keys, counts
    added, inverse = np.unique(new_keys, return_inverse=True)
    more = np.zeros((added.size, 3), dtype=np.int64)
    np.add.at(more, (inverse.ravel(), new_codes), 1)
    at = np.searchsorted(keys, added)
    known = at < keys.size
    known[known] = keys[at[known]] == added[known]
    counts = counts.copy()
    counts[at[known]] += more[known]
    return (
        np.insert(keys, at[~known], added[~known]),
        np.insert(counts, at[~known], more[~known], axis=0),
    )


def study_agreement(study_id: int) -> agreement.Agreement:
    """κ, α, the majority counts and the medians of the study, from all its answers."""
    return extended(empty(), answer_rows.read_rows(study_id)).figures_agreement


def tallies_path(study: Study):
    return refit_cache.study_cache_dir(study) / "dashboard.npz"


def study_tallies(study: Study) -> tuple[FigureTallies, str]:
    """The study's tallies now, from the cached ones and the newer answers when they check out
    (module docstring), else from every answer; and how they were made ("cached + N new",
    "full …"). Run inside one snapshot of the database (``figures.whole_study_plans``)."""
    count, top, check = answer_rows.study_marks(study.pk)
    path = tallies_path(study)
    cached = load(path)
    how = "full (no cached tallies)"
    if cached is not None and cached.upto <= top:
        new = answer_rows.read_rows(study.pk, cached.upto, top)
        matches = cached.count + new.shape[0] == count
        if matches and cached.check + answer_rows.checksum(new) == check:
            if new.shape[0] == 0:
                return cached, "cached + 0 new"
            found = extended(cached, new)
            found.upto = top
            save(path, found)
            return found, f"cached + {new.shape[0]} new"
        how = "full (the cached answers changed)"
    elif cached is not None:
        how = "full (the cached tallies go past the study's answers)"
    found = extended(empty(), answer_rows.read_rows(study.pk, 0, top))
    found.upto = top
    save(path, found)
    return found, how


def save(path, tallies: FigureTallies) -> None:
    """The tallies as one ``.npz`` (written to a temporary file and renamed); a failure is
    logged, not raised: the next refresh computes everything again."""
    meta = np.asarray([FORMAT, tallies.upto, tallies.count, tallies.check], dtype=np.int64)
    arrays = {"meta": meta, "table": tallies.table, "gold": tallies.gold}
    arrays["durations"] = tallies.durations
    arrays["all_keys"], arrays["all_counts"] = tallies.all_keys, tallies.all_counts
    for name in agreement.PairTallies.ARRAYS:
        arrays[f"pairs_{name}"] = getattr(tallies.pairs, name)
    refit_cache.arrays_save(path, arrays)


def load(path) -> FigureTallies | None:
    """The tallies of ``path``; None when missing, unreadable (a garbled file fails the zip's
    CRC) or not of this FORMAT and shape."""
    if not path.exists():
        return None
    arrays = refit_cache.arrays_load(path)
    names = {"meta", "table", "gold", "durations", "all_keys", "all_counts"}
    names |= {f"pairs_{name}" for name in agreement.PairTallies.ARRAYS}
    if arrays is None or set(arrays) != names or arrays["meta"].shape != (4,):
        logger.warning("unreadable dashboard tallies %s: computing them again", path)
        return None
    fmt, upto, count, check = (int(v) for v in arrays["meta"])
    pairs = agreement.PairTallies(
        **{f.name: arrays[f"pairs_{f.name}"] for f in fields(agreement.PairTallies)}
    )
    shapes = [
        (arrays["table"].ndim, arrays["table"].shape[-1]) == (2, 5),
        (arrays["gold"].ndim, arrays["gold"].shape[-1]) == (2, 4),
        pairs.keys.shape == pairs.users.shape == pairs.codes.shape,
        pairs.pair_counts.shape == (pairs.pair_keys.size, 3),
        arrays["all_counts"].shape == (arrays["all_keys"].size, 3),
        (pairs.cells.ndim, pairs.cells.shape[-1], pairs.people.shape[-1]) == (2, 5, 4),
    ]
    if fmt != FORMAT or not all(shapes):
        return None
    return FigureTallies(
        upto,
        count,
        check,
        arrays["table"],
        arrays["gold"],
        arrays["durations"],
        pairs,
        arrays["all_keys"],
        arrays["all_counts"],
    )
