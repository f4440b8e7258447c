"""reproduce_weat_table on a small synthetic factor model: table, JSON, stored results, reruns.

The space (d = 6) has a sensitive direction e0 along which the names differ, a sentiment
direction e1 and a topic direction e2. An unfair test (names with +e0 vs names with -e0 against
pleasant/unpleasant words that lean on e0) is significant in the Euclidean metric; a
meaningful test (flowers vs insects, which differ along e1) is significant too. FACE fitted on
the group of all names finds e0 and removes the unfair association, keeping the meaningful one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Label, Study
from annotation.setup.feedback_import import groups_import, judgments_import
from learning.models import MetricVersion, WeatResult, WeatSuite, WeatTest
from learning.versions.sigmas import sigma_of
from spaces.models import Item
from spaces.vectors.importing import space_import

D = 6
ROW_KEYS = {"test", "metric", "p_value", "effect_size", "n_partitions", "exact"}


def synthetic_vectors(rng) -> dict[str, np.ndarray]:
    e = np.eye(D)
    noise = 0.15

    def word(*parts):
        return sum(parts) + noise * rng.normal(size=D)

    words = {}
    for i in range(40):  # names: +-e0 and a little of everything else
        words[f"name{i}"] = word((1 if i % 2 == 0 else -1) * e[0], 0.3 * rng.normal(size=D))
    for i in range(8):
        words[f"pleasant{i}"] = word(e[1], 0.6 * e[0], 0.5 * e[3])
        words[f"unpleasant{i}"] = word(-e[1], -0.6 * e[0], 0.5 * e[3])
        words[f"flower{i}"] = word(e[2], 0.7 * e[1])
        words[f"insect{i}"] = word(e[2], -0.7 * e[1])
    return words


@pytest.fixture
def synthetic_study(db, media_root, tmp_path) -> Study:
    words = synthetic_vectors(np.random.default_rng(7))
    keys = list(words)
    np.save(tmp_path / "s.npy", np.stack([words[k] for k in keys]).astype(np.float32))
    (tmp_path / "s.vocab").write_text("\n".join(keys) + "\n")
    space = space_import(path=tmp_path / "s.npy", name="synthetic")
    study = Study.objects.create(name="Synthetic names", space=space)
    ids = dict(Item.objects.filter(space=space).values_list("key", "id"))
    names = [k for k in keys if k.startswith("name")]
    groups_import(study=study, groups=[("names", [ids[n] for n in names])], provenance="test")
    rng = np.random.default_rng(1)
    pairs = []
    for _ in range(300):
        a, b = rng.choice(len(names), 2, replace=False)
        pairs.append((ids[names[a]], ids[names[b]], Label.COMPARABLE))
        i, j = rng.integers(0, 8, 2)
        pairs.append((ids[f"pleasant{i}"], ids[f"unpleasant{j}"], Label.INCOMPARABLE))
    judgments_import(study=study, pairs=list({(a, b, y) for a, b, y in pairs}), provenance="t")
    suite = WeatSuite.objects.create(name="synthetic suite")
    suite.studies.add(study)
    pleasant = [f"pleasant{i}" for i in range(8)]
    unpleasant = [f"unpleasant{i}" for i in range(8)]
    WeatTest.objects.create(
        suite=suite,
        position=1,
        name="Flowers / Pleasant",
        kind=WeatTest.Kind.MEANINGFUL,
        x_name="Flowers",
        y_name="Insects",
        a_name="Pleasant",
        b_name="Unpleasant",
        x_words=[f"Flower{i}" for i in range(8)] + ["orchid"],  # capitalised + one missing
        y_words=[f"insect{i}" for i in range(8)],
        a_words=pleasant,
        b_words=unpleasant,
    )
    WeatTest.objects.create(
        suite=suite,
        position=2,
        name="Plus names / Pleasant",
        kind=WeatTest.Kind.UNFAIR,
        x_name="Plus names",
        y_name="Minus names",
        a_name="Pleasant",
        b_name="Unpleasant",
        x_words=[f"name{i}" for i in range(0, 16, 2)],
        y_words=[f"name{i}" for i in range(1, 16, 2)],
        a_words=pleasant,
        b_words=unpleasant,
    )
    return study


def run(tmp_path: Path, *args: str) -> list[dict]:
    out = tmp_path / "table.json"
    call_command(
        "reproduce_weat_table",
        "--study",
        "Synthetic names",
        "--k",
        "1,2",
        "--permutations",
        "3000",
        "--json",
        str(out),
        *args,
    )
    return json.loads(out.read_text())


def cell(rows, test, metric) -> dict:
    (found,) = [r for r in rows if r["test"] == test and r["metric"] == metric]
    return found


def test_prints_the_table_and_writes_json_rows(synthetic_study, tmp_path, capsys):
    rows = run(tmp_path)
    out = capsys.readouterr().out
    assert "Euclidean" in out
    assert "EXPLORE" in out
    assert "FACE-1" in out
    assert "FACE-2" in out
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if "Flowers / Pleasant" in line)
    assert "Plus names / Pleasant" in lines[first + 2]  # meaningful above the line, unfair below
    assert set(lines[first + 1]) == {"-"}
    assert len(rows) == 2 * 4
    assert {r["metric"] for r in rows} == {"euclidean", "explore", "face-1", "face-2"}
    for row in rows:
        assert set(row) >= ROW_KEYS
        assert isinstance(row["p_value"], float)
        assert isinstance(row["exact"], bool)
        assert row["n_partitions"] == 3000  # C(16, 8) = 12870 > 3000: sampled
        assert row["exact"] is False
    assert [r["test"] for r in rows[:4]] == ["Flowers / Pleasant"] * 4


def test_the_learned_metric_removes_the_unfair_association_only(synthetic_study, tmp_path):
    rows = run(tmp_path)
    assert cell(rows, "Plus names / Pleasant", "euclidean")["p_value"] < 0.01
    assert cell(rows, "Plus names / Pleasant", "face-1")["p_value"] > 0.05
    for metric in ("euclidean", "explore", "face-1", "face-2"):
        assert cell(rows, "Flowers / Pleasant", metric)["p_value"] < 0.01, metric


def test_results_are_stored_for_the_dashboards(synthetic_study, tmp_path):
    rows = run(tmp_path)
    versions = MetricVersion.objects.filter(study=synthetic_study).order_by("label")
    assert [v.label for v in versions] == ["explore", "face-1", "face-2"]
    for version in versions:
        assert version.status == MetricVersion.Status.READY
        content = Path(version.sigma.path).read_bytes()
        assert hashlib.sha256(content).hexdigest() == version.sigma_sha256
        assert sigma_of(version).shape == (D, D)
        assert version.parameters["source"] == "reproduce_weat_table"
        assert version.weat_results.count() == 2
    face = versions.get(label="face-1")
    assert face.parameters["n_components"] == 1
    q = np.linalg.eigh(sigma_of(face))[1][:, 0]  # the removed direction is e0
    assert abs(q[0]) > 0.95
    euclidean = WeatResult.objects.filter(space=synthetic_study.space, metric_version=None)
    assert euclidean.count() == 2
    assert set(euclidean.values_list("metric", flat=True)) == {"euclidean"}
    flowers = euclidean.get(test__position=1)
    assert flowers.missing_words == ["orchid"]
    assert "Flower0" in flowers.scores  # capitalised words found through their lowercase key
    assert flowers.ci_low <= flowers.effect_size <= flowers.ci_high
    stored = WeatResult.objects.get(metric_version=face, test__position=2)
    assert stored.p_value == cell(rows, "Plus names / Pleasant", "face-1")["p_value"]


def test_rerunning_replaces_the_earlier_versions(
    synthetic_study, tmp_path, django_capture_on_commit_callbacks
):
    first = run(tmp_path)
    old = list(MetricVersion.objects.filter(study=synthetic_study))
    old_files = [Path(v.sigma.path) for v in old]
    published = next(v for v in old if v.label == "explore")
    MetricVersion.objects.filter(pk=published.pk).update(is_published=True)
    with django_capture_on_commit_callbacks(execute=True):  # files go once committed
        second = run(tmp_path)
    now = MetricVersion.objects.filter(study=synthetic_study)
    assert now.count() == 4  # three new ones, and the published one kept
    assert now.filter(is_published=True).get().pk == published.pk
    assert not any(p.exists() for v, p in zip(old, old_files, strict=True) if v != published)
    assert WeatResult.objects.filter(metric_version__isnull=True).count() == 2
    assert WeatResult.objects.filter(metric_version__isnull=False).count() == 4 * 2
    assert first == second  # same data, same seed: the same table


def test_a_missing_study_or_input_is_one_readable_error(synthetic_study, tmp_path):
    with pytest.raises(CommandError, match="run `python manage.py load_demo` first"):
        call_command("reproduce_weat_table")
    with pytest.raises(CommandError, match="no study named 'Nope'"):
        call_command("reproduce_weat_table", "--study", "Nope")
    with pytest.raises(CommandError, match="FACE k must be between 1 and 5"):
        call_command("reproduce_weat_table", "--study", "Synthetic names", "--k", "6")
    empty = Study.objects.create(name="Empty", space=synthetic_study.space)
    WeatSuite.objects.get().studies.add(empty)
    with pytest.raises(CommandError, match="has no comparable groups"):
        call_command("reproduce_weat_table", "--study", "Empty", "--k", "1")
    assert not MetricVersion.objects.exists()


def test_help_says_how_reruns_replace_results():
    from experiments.management.commands.reproduce_weat_table import Command

    assert "replaces this command's earlier unpublished versions" in Command.help
