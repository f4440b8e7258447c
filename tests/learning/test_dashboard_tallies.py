"""The dashboard's tallies extended with new answers equal the tallies of all answers at once.

Pure numpy first (random bursts of answers, some to pairs already answered, some to new ones),
then real sequences on the database: appends, gold pairs added, an edited answer, a deleted one,
an answer committed below the watermark and a garbled tallies file — after each, the figures
from the cached tallies equal a full computation, element for element (κ, α, majority counts,
medians, counts per day and label, gold accuracy). The full computation itself is checked
against krippendorff, scikit-learn and a pair-by-pair loop in ``test_dashboards.py``.
"""

from __future__ import annotations

import dataclasses
import uuid

import numpy as np
import pytest

from annotation.models import Adjudication, GoldPair, Label, PairJudgment, Source
from annotation.review import selectors
from learning.dashboards import agreement, answer_rows, figures, tallies
from spaces.models import Item

C, N, U = Label.COMPARABLE, Label.INCOMPARABLE, Label.UNSURE


def _random_answers(rng, n_pairs=300, people=9):
    """Answers (pair key, annotator, code): each pair answered by 1..6 distinct people."""
    keys, users, codes = [], [], []
    for pair in range(n_pairs):
        who = rng.choice(people, size=rng.integers(1, 7), replace=False)
        keys += [agreement.pair_key(np.array([pair]), np.array([pair + 1000]))[0]] * who.size
        users += list(who + 100)
        codes += list(rng.choice(3, size=who.size, p=[0.45, 0.4, 0.15]))
    return np.array(keys, np.int64), np.array(users, np.int64), np.array(codes, np.int64)


def _assert_same_pairs(found: agreement.PairTallies, expected: agreement.PairTallies):
    for name in agreement.PairTallies.ARRAYS:
        assert np.array_equal(getattr(found, name), getattr(expected, name)), name


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_tallies_extended_in_bursts_equal_all_at_once(seed):
    rng = np.random.default_rng(seed)
    keys, users, codes = _random_answers(rng)
    order = rng.permutation(keys.size)  # answers arrive in any order, pairs get later answers
    keys, users, codes = keys[order], users[order], codes[order]
    cuts = np.sort(rng.choice(np.arange(1, keys.size), size=12, replace=False))
    found = agreement.empty_pairs()
    for part in np.split(np.arange(keys.size), cuts):
        found = agreement.extend_pairs(found, keys[part], users[part], codes[part])
    expected = agreement.pair_tallies(keys, users, codes)
    _assert_same_pairs(found, expected)
    assert agreement.agreement_of(found) == agreement.agreement_of(expected)
    whole = agreement.agreement_of(expected)
    assert whole.units > 100
    assert len(whole.kappas) > 20
    assert sum(whole.compared.values()) > 0


def test_durations_merged_give_numpy_medians():
    rng = np.random.default_rng(3)
    users = rng.integers(1, 6, size=999)
    elapsed = np.where(rng.random(users.size) < 0.2, -1, rng.integers(0, 9000, users.size))
    keys = np.zeros(0, np.int64)
    for part in np.array_split(np.arange(users.size), 7):
        new = agreement.duration_keys(users[part], elapsed[part])
        keys = np.insert(keys, np.searchsorted(keys, new), new)
    found = agreement.durations_medians(keys)
    for user in range(1, 6):
        mine = elapsed[(users == user) & (elapsed >= 0)]
        assert found[user] == (float(np.median(mine)), mine.size)


@pytest.mark.parametrize("seed", [4, 5])
def test_figure_tallies_extended_in_bursts_equal_all_at_once(seed):
    """Rows as the database gives them (answer_rows.COLUMNS), over several days, with imported
    and gold answers and untimed ones, added in bursts: every array equals one pass over all."""
    rng = np.random.default_rng(seed)
    n = 3000
    rows = np.zeros((n, len(answer_rows.COLUMNS)), dtype=np.int64)
    rows[:, answer_rows.ID] = np.arange(1, n + 1)
    imported = rng.random(n) < 0.1
    rows[:, answer_rows.ANNOTATOR] = np.where(imported, -1, rng.integers(1, 8, n))
    a = rng.integers(0, 60, n)
    rows[:, answer_rows.ITEM_A] = a
    rows[:, answer_rows.ITEM_B] = a + rng.integers(1, 60, n)
    rows[:, answer_rows.LABEL] = rng.integers(0, 3, n)
    rows[:, answer_rows.SOURCE] = np.where(imported, tallies.ANNOTATED + 1, tallies.ANNOTATED)
    rows[:, answer_rows.ELAPSED] = np.where(rng.random(n) < 0.3, -1, rng.integers(0, 9000, n))
    rows[:, answer_rows.GOLD] = rng.random(n) < 0.05
    rows[:, answer_rows.DAY] = 20_000 + rng.integers(0, 5, n)
    found = tallies.empty()
    for part in np.array_split(np.arange(n), 9):
        found = tallies.extended(found, rows[part])
    _assert_same(found, tallies.extended(tallies.empty(), rows))
    assert found.table[:, 0].min() < found.table[:, 0].max()  # several days
    assert found.gold.shape[0] > 0
    assert found.all_keys.size > found.pairs.pair_keys.size  # imported and gold pairs too


# --- on the database -------------------------------------------------------------------------


@pytest.fixture
def items(study):
    return list(Item.objects.filter(space=study.space).order_by("row"))


@pytest.fixture
def people(make_user, study):
    return [make_user(f"t{i}", study=study, role="annotator") for i in range(6)]


def _answers(study, people, items, rng, pairs, *, taken=None, gold_pairs=()):
    """One to four answers by distinct people to each pair of ``pairs`` (item index pairs),
    skipping (person, pair) already in ``taken``; some untimed, some imported rows."""
    taken = set() if taken is None else taken
    rows = []
    for a, b in pairs:
        for who in rng.choice(len(people), size=rng.integers(1, 5), replace=False):
            if (who, a, b) in taken:
                continue
            taken.add((who, a, b))
            rows.append(
                PairJudgment(
                    study=study,
                    annotator=people[who],
                    item_a=items[a],
                    item_b=items[b],
                    label=[C, N, U][rng.choice(3, p=[0.5, 0.4, 0.1])],
                    elapsed_ms=None if rng.random() < 0.2 else int(rng.integers(200, 9000)),
                    is_gold=(a, b) in gold_pairs,
                )
            )
    a, b = (int(x) for x in rng.choice(len(items) // 2, size=2, replace=False))
    rows.append(  # an imported answer: in the counts, not in the agreement
        PairJudgment(
            study=study,
            item_a=items[min(a, b)],
            item_b=items[max(a, b) + len(items) // 2],
            label=C,
            source=Source.IMPORTED,
        )
    )
    PairJudgment.objects.bulk_create(rows)
    return taken


def _pair(study, items, a, b):
    return PairJudgment.objects.filter(study=study, item_a=items[a], item_b=items[b])


def _board(study) -> dict:
    found = dataclasses.asdict(figures.study_dashboard(study))
    found.pop("computed_at")
    return found


def _full(study) -> tuple[tallies.FigureTallies, dict]:
    """The tallies and figures computed from every answer (the cached tallies removed)."""
    tallies.tallies_path(study).unlink(missing_ok=True)
    found, how = tallies.study_tallies(study)
    assert how == "full (no cached tallies)"
    board = _board(study)
    tallies.tallies_path(study).unlink()
    return found, board


def _assert_same(found: tallies.FigureTallies, expected: tallies.FigureTallies):
    assert (found.upto, found.count, found.check) == (expected.upto, expected.count, expected.check)
    assert np.array_equal(found.table, expected.table)
    assert np.array_equal(found.durations, expected.durations)
    gold_order = np.lexsort(found.gold.T[::-1]), np.lexsort(expected.gold.T[::-1])
    assert np.array_equal(found.gold[gold_order[0]], expected.gold[gold_order[1]])
    _assert_same_pairs(found.pairs, expected.pairs)
    assert np.array_equal(found.all_keys, expected.all_keys)
    assert np.array_equal(found.all_counts, expected.all_counts)


def _refresh(study) -> tuple[tallies.FigureTallies, str, dict]:
    found, how = tallies.study_tallies(study)
    return found, how, _board(study)


@pytest.mark.django_db
def test_cached_tallies_equal_a_full_computation_over_a_real_sequence(study, items, people):
    rng = np.random.default_rng(7)
    canonical = [(a, b) for a in range(0, 40) for b in range(a + 1, 40)]
    order = rng.permutation(len(canonical))
    pairs = [canonical[i] for i in order]
    gold = set(pairs[:8])
    GoldPair.objects.bulk_create(
        GoldPair(study=study, item_a=items[a], item_b=items[b], label=C) for a, b in pairs[:4]
    )
    taken = _answers(study, people, items, rng, pairs[:120], gold_pairs=gold)

    first, how, board = _refresh(study)
    assert how == "full (no cached tallies)"
    assert board["alpha"] is not None
    assert board["kappas"]

    # Bursts: third and fourth answers to answered pairs, first answers to new ones.
    for burst in range(3):
        more = pairs[100 + 30 * burst : 150 + 30 * burst]
        taken = _answers(study, people, items, rng, more, taken=taken, gold_pairs=gold)
        found, how, board = _refresh(study)
        assert how.startswith("cached + "), how
        assert how != "cached + 0 new"
        expected, expected_board = _full(study)
        _assert_same(found, expected)
        assert board == expected_board
        tallies.save(tallies.tallies_path(study), found)

    # A gold pair added: gold accuracy follows without a recomputation.
    a, b = pairs[5]
    GoldPair.objects.create(study=study, item_a=items[a], item_b=items[b], label=N)
    _, how, board = _refresh(study)
    assert how == "cached + 0 new"
    gold_answers = PairJudgment.objects.filter(
        study=study, is_gold=True, source=Source.ANNOTATED, annotator__isnull=False
    )
    golden = {(g.item_a_id, g.item_b_id): g.label for g in GoldPair.objects.filter(study=study)}
    graded = [j for j in gold_answers if (j.item_a_id, j.item_b_id) in golden]
    assert sum(q["gold_answers"] for q in board["annotators"]) == len(graded) > 0
    assert sum(q["gold_correct"] for q in board["annotators"]) == sum(
        j.label == golden[(j.item_a_id, j.item_b_id)] for j in graded
    )
    assert board == _full(study)[1]
    tallies.study_tallies(study)

    # An adjudicated disagreement: resolved, as the review page counts it.
    split = next(
        (a, b) for a, b in pairs[:120] if len({j.label for j in _pair(study, items, a, b)}) > 1
    )
    Adjudication.objects.create(
        study=study, item_a=items[split[0]], item_b=items[split[1]], label=C, decided_by=people[0]
    )
    _, how, board = _refresh(study)
    assert how == "cached + 0 new"
    assert board["disagreements_resolved"] == 1
    expected = (board["disagreements_resolved"], board["disagreements"])
    assert expected == selectors.disagreement_progress(study=study)

    # An edited label, an edited time, a deletion, an answer below the watermark: all in full.
    victim = PairJudgment.objects.filter(study=study, annotator__isnull=False).order_by("id")[3]
    changes = [
        lambda: PairJudgment.objects.filter(pk=victim.pk).update(
            label=U if victim.label != U else C
        ),
        lambda: PairJudgment.objects.filter(pk=victim.pk).update(elapsed_ms=123_456),
        lambda: PairJudgment.objects.filter(study=study).order_by("id")[10].delete(),
    ]
    for change in changes:
        change()
        found, how, board = _refresh(study)
        assert how == "full (the cached answers changed)"
        expected, expected_board = _full(study)
        _assert_same(found, expected)
        assert board == expected_board
        tallies.study_tallies(study)
    assert board["annotators"]
    assert board["kappas"]

    # An answer with an id below the watermark (committed out of order): a full computation.
    top = found.upto
    late = PairJudgment.objects.filter(study=study).order_by("id")[0]
    late.pk, late.client_id = top - 1, uuid.uuid4()
    PairJudgment.objects.filter(study=study, pk=top - 1).delete()  # the count stays the same
    late.annotator, (a, b) = people[0], pairs[-1]
    late.item_a, late.item_b = items[a], items[b]
    late.save(force_insert=True)
    found, how, board = _refresh(study)
    assert how == "full (the cached answers changed)"
    assert board == _full(study)[1]


@pytest.mark.django_db
def test_a_garbled_or_foreign_tallies_file_is_computed_again(study, items, people):
    rng = np.random.default_rng(8)
    pairs = [(a, b) for a in range(0, 20) for b in range(a + 1, 20)][:80]
    _answers(study, people, items, rng, pairs)
    tallies.study_tallies(study)
    path = tallies.tallies_path(study)
    content = bytearray(path.read_bytes())
    middle = len(content) // 2
    content[middle : middle + 64] = bytes(64)  # zeros over the middle of an array
    path.write_bytes(bytes(content))
    assert tallies.load(path) is None  # the zip's CRC
    found, how = tallies.study_tallies(study)
    assert how == "full (no cached tallies)"
    expected, _ = _full(study)
    _assert_same(found, expected)

    path.write_bytes(b"not a zip file")
    assert tallies.study_tallies(study)[1] == "full (no cached tallies)"
    ahead = dataclasses.replace(expected, upto=expected.upto + 1000)
    tallies.save(path, ahead)  # tallies of answers the study does not have
    assert tallies.study_tallies(study)[1].startswith("full (the cached tallies go past")


@pytest.mark.django_db
def test_checksum_in_numpy_equals_the_database_aggregate(study, items, people):
    rng = np.random.default_rng(9)
    _answers(study, people, items, rng, [(a, a + 1) for a in range(0, 50, 2)])
    rows = answer_rows.read_rows(study.pk)
    count, top, check = answer_rows.study_marks(study.pk)
    assert (count, top, check) == (rows.shape[0], int(rows[:, 0].max()), answer_rows.checksum(rows))
    assert check > 0
