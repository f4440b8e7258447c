"""Study dashboard figures against hand-computed κ, α, majority and gold accuracy; flags; speed."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from annotation.models import GoldPair, Label, PairJudgment, Source
from learning.dashboards import figures
from learning.dashboards.figures import AnnotatorQuality, flags_for, study_dashboard
from spaces.models import Item

pytestmark = pytest.mark.django_db

C, N, U = Label.COMPARABLE, Label.INCOMPARABLE, Label.UNSURE  # N: not comparable


@pytest.fixture
def items(study):
    return list(Item.objects.filter(space=study.space).order_by("row"))


@pytest.fixture
def three_annotators(make_user, study):
    return [make_user(name, study=study, role="annotator") for name in ("u1", "u2", "u3")]


def answer(study, user, items, pair, label, ms=None, gold=False):
    a, b = items[2 * pair], items[2 * pair + 1]
    return PairJudgment(
        study=study, annotator=user, item_a=a, item_b=b, label=label, elapsed_ms=ms, is_gold=gold
    )


@pytest.fixture
def tiny_case(study, items, three_annotators):
    """Six pairs: u1 and u2 answer all, u3 the first three; pair 6 is a gold pair."""
    u1, u2, u3 = three_annotators
    rows = []
    for pair, (l1, l2) in enumerate([(C, C), (C, N), (N, N), (N, N), (C, C), (U, C)]):
        rows.append(answer(study, u1, items, pair, l1, ms=1000 * (pair + 1)))
        rows.append(answer(study, u2, items, pair, l2, ms=500))
    for pair, label in enumerate([C, C, N]):
        rows.append(answer(study, u3, items, pair, label))
    GoldPair.objects.create(study=study, item_a=items[12], item_b=items[13], label=C)
    rows.append(answer(study, u1, items, 6, C, ms=7000, gold=True))
    rows.append(answer(study, u2, items, 6, N, ms=500, gold=True))
    rows.append(
        PairJudgment(
            study=study, item_a=items[20], item_b=items[21], label=C, source=Source.IMPORTED
        )
    )
    PairJudgment.objects.bulk_create(rows)
    return three_annotators


def test_agreement_figures_match_a_hand_computed_case(study, tiny_case):
    board = study_dashboard(study)
    # κ(u1, u2) on six shared pairs: p_o = 4/6, p_e = (3·3 + 2·3 + 1·0)/36 -> κ = 3/7.
    kappas = {(k.a, k.b): k for k in board.kappas}
    assert kappas[("u1", "u2")].overlap == 6
    assert kappas[("u1", "u2")].kappa == pytest.approx(3 / 7)
    assert kappas[("u1", "u3")].overlap == 3
    assert kappas[("u1", "u3")].kappa is None  # fewer than MIN_KAPPA_OVERLAP shared pairs
    # Krippendorff's α (nominal) from the coincidence matrix: D_o = 4/15, D_e = 124/210.
    assert board.alpha == pytest.approx(17 / 31)
    assert board.overlapping_pairs == 6  # the gold pair is measured by gold accuracy instead
    by_name = {q.username: q for q in board.annotators}
    # Leave-one-out majority: u1 5 decided (a tie on pair 2), 4 agree; u2 4 of 6; u3 2 of 2.
    assert (by_name["u1"].compared, by_name["u1"].majority_agreement) == (5, pytest.approx(0.8))
    assert (by_name["u2"].compared, by_name["u2"].majority_agreement) == (6, pytest.approx(2 / 3))
    assert (by_name["u3"].compared, by_name["u3"].majority_agreement) == (2, 1.0)
    assert (by_name["u1"].gold_answers, by_name["u1"].gold_accuracy) == (1, 1.0)
    assert (by_name["u2"].gold_answers, by_name["u2"].gold_accuracy) == (1, 0.0)
    assert by_name["u1"].median_seconds == pytest.approx(4.0)  # 1..7 s
    assert by_name["u2"].median_seconds == pytest.approx(0.5)
    assert by_name["u3"].median_seconds is None
    assert by_name["u1"].mean_kappa == pytest.approx(3 / 7)
    assert (board.total, board.imported, board.annotated) == (18, 1, 17)
    assert board.label_mix == {"comparable": 10, "incomparable": 7, "unsure": 1}
    assert sum(sum(counts) for counts in board.per_day.values()) == 18
    assert set(board.per_day) == {"u1", "u2", "u3", "imported"}


def test_flags_follow_the_documented_thresholds():
    fast = AnnotatorQuality(user_id=1, username="f", median_seconds=0.4, timed=50)
    assert flags_for(fast) == ["too fast"]
    few = AnnotatorQuality(
        user_id=1, username="f", median_seconds=0.4, timed=figures.MIN_TIMED_ANSWERS - 1
    )
    assert flags_for(few) == []
    contrarian = AnnotatorQuality(user_id=2, username="c", compared=40, majority_agreement=0.3)
    assert flags_for(contrarian) == ["low agreement"]
    few_compared = AnnotatorQuality(
        user_id=3, username="k", compared=figures.MIN_COMPARED - 1, majority_agreement=0.0
    )
    assert flags_for(few_compared) == []
    guesser = AnnotatorQuality(user_id=4, username="g", gold_answers=10, gold_accuracy=0.5)
    assert flags_for(guesser) == ["low gold accuracy"]
    good = AnnotatorQuality(
        user_id=5,
        username="ok",
        median_seconds=2.5,
        timed=50,
        compared=40,
        majority_agreement=0.9,
        mean_kappa=0.7,
        gold_answers=10,
        gold_accuracy=0.9,
    )
    assert flags_for(good) == []


def test_a_fast_contrarian_is_flagged_end_to_end(study, items, make_user):
    """Two annotators agree on 12 pairs; a third answers the opposite in 300 ms each."""
    good = [make_user(n, study=study, role="annotator") for n in ("g1", "g2")]
    bad = make_user("bad", study=study, role="annotator")
    rows = []
    for pair in range(12):
        label = C if pair % 2 else N
        rows += [answer(study, user, items, pair, label, ms=3000) for user in good]
        rows.append(answer(study, bad, items, pair, N if label == C else C, ms=300))
    PairJudgment.objects.bulk_create(rows)
    board = study_dashboard(study)
    flags = {q.username: q.flags for q in board.annotators}
    assert flags == {"g1": [], "g2": [], "bad": ["too fast", "low agreement"]}


def test_dashboard_page_queries_do_not_grow_with_data(
    client, study, users, tiny_case, items, django_assert_max_num_queries
):
    client.force_login(users["reviewer"])
    url = reverse("learning:study-dashboard", args=[study.pk])
    # A bound that does not depend on the data (the page also reads the adjudications, the next
    # version's due time and whether the last one is informative); the second load checks it
    with django_assert_max_num_queries(29) as small:
        assert client.get(url).status_code == 200
    more = tiny_case[:2]
    PairJudgment.objects.bulk_create(
        answer(study, user, items, pair, C, ms=2000) for pair in range(10, 25) for user in more
    )
    cache.clear()  # compute again, with more data
    client.force_login(users["reviewer"])  # the session back in the cache (cached_db), as before
    with django_assert_max_num_queries(len(small.captured_queries)):
        response = client.get(url)
    assert response.status_code == 200
    assert "Krippendorff" in response.content.decode()


def test_aggregated_agreement_equals_the_libraries_on_raw_answers(study, items, make_user):
    """Random answers by four people: κ and α from the aggregates equal sklearn and krippendorff
    applied to the raw label vectors and the raw reliability matrix."""
    import krippendorff
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(7)
    people = [make_user(f"r{i}", study=study, role="annotator") for i in range(4)]
    table = np.full((4, 25), np.nan)
    rows = []
    for pair in range(25):
        for who in rng.choice(4, size=rng.integers(1, 5), replace=False):
            code = int(rng.choice(3, p=[0.5, 0.35, 0.15]))
            table[who, pair] = code
            rows.append(answer(study, people[who], items, pair, [C, N, U][code], ms=2000))
    PairJudgment.objects.bulk_create(rows)
    board = study_dashboard(study)

    expected_alpha = krippendorff.alpha(
        reliability_data=table, level_of_measurement="nominal", value_domain=[0, 1, 2]
    )
    assert board.alpha == pytest.approx(expected_alpha)
    kappas = {(k.a, k.b): k for k in board.kappas}
    for i in range(4):
        for j in range(i + 1, 4):
            both = ~np.isnan(table[i]) & ~np.isnan(table[j])
            found = kappas.get((f"r{i}", f"r{j}"))
            if not both.any():
                assert found is None
                continue
            assert found.overlap == int(both.sum())
            if both.sum() >= figures.MIN_KAPPA_OVERLAP:
                expected = cohen_kappa_score(table[i, both], table[j, both], labels=[0, 1, 2])
                assert found.kappa == pytest.approx(expected)


def test_agreement_equals_a_pair_by_pair_reference(study, items, make_user):
    """Eight people, 150 pairs answered by one to six of them: the figures from the one read of
    the answers (numpy, grouped by pair) equal a plain loop over the pairs — α by krippendorff
    on the reliability matrix, κ by scikit-learn on each two people's shared pairs, and the
    leave-one-out majority counted answer by answer."""
    import itertools
    from collections import Counter

    import krippendorff
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    from learning.dashboards import tallies

    rng = np.random.default_rng(11)
    people = [make_user(f"p{i}", study=study, role="annotator") for i in range(8)]
    pairs = list(itertools.combinations(range(20), 2))[:150]
    table = np.full((8, len(pairs)), np.nan)
    rows = []
    for pair, (a, b) in enumerate(pairs):
        for who in rng.choice(8, size=rng.integers(1, 7), replace=False):
            code = int(rng.choice(3, p=[0.45, 0.4, 0.15]))
            table[who, pair] = code
            rows.append(
                PairJudgment(
                    study=study,
                    annotator=people[who],
                    item_a=items[a],
                    item_b=items[b],
                    label=[C, N, U][code],
                )
            )
    PairJudgment.objects.bulk_create(rows)
    found = tallies.study_agreement(study.pk)

    answered = np.sum(~np.isnan(table), axis=0)
    assert found.units == int((answered >= 2).sum())
    expected_alpha = krippendorff.alpha(
        reliability_data=table[:, answered >= 2],
        level_of_measurement="nominal",
        value_domain=[0, 1, 2],
    )
    assert found.alpha == pytest.approx(expected_alpha, abs=1e-12)
    compared, agreed = Counter(), Counter()
    for pair in range(len(pairs)):
        who = np.flatnonzero(~np.isnan(table[:, pair]))
        if who.size < 2:
            continue
        for w in who:
            others = Counter(int(table[o, pair]) for o in who if o != w)
            (label, top), *rest = others.most_common()
            if rest and rest[0][1] == top:
                continue  # a tie: no majority
            compared[people[w].pk] += 1
            agreed[people[w].pk] += int(label == table[w, pair])
    assert sum(found.compared.values()) == sum(compared.values()) > 0
    assert found.compared == {u: compared[u] for u in found.compared}
    assert found.agreed == {u: agreed[u] for u in found.agreed}
    kappas = {(u, v): (overlap, kappa) for u, v, overlap, kappa in found.kappas}
    for i in range(8):
        for j in range(i + 1, 8):
            both = ~np.isnan(table[i]) & ~np.isnan(table[j])
            key = tuple(sorted((people[i].pk, people[j].pk)))
            if not both.any():
                assert key not in kappas
                continue
            overlap, kappa = kappas[key]
            assert overlap == int(both.sum())
            expected = cohen_kappa_score(table[i, both], table[j, both], labels=[0, 1, 2])
            assert kappa == pytest.approx(expected, abs=1e-12)


def test_answer_medians_equal_numpy_per_annotator():
    """The medians from the agreement's read: numpy's median of each annotator's timed answers
    (even and odd counts), untimed answers (-1) left out, an annotator with none absent."""
    import numpy as np

    from learning.dashboards.agreement import answer_medians

    rng = np.random.default_rng(5)
    users = rng.integers(1, 9, size=2001)
    elapsed = np.where(rng.random(users.size) < 0.2, -1, rng.integers(100, 9000, users.size))
    elapsed[users == 8] = -1
    found = answer_medians(users, elapsed)
    assert 8 not in found
    for user in range(1, 8):
        mine = elapsed[(users == user) & (elapsed >= 0)]
        assert found[user] == (pytest.approx(float(np.median(mine))), mine.size)
