"""Importing existing feedback: pairs and groups from CSV/JSONL, validated, atomic, provenance."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import (
    ComparableGroup,
    GroupEdit,
    Label,
    Membership,
    PairJudgment,
    Source,
    Study,
    StudyCounter,
)
from annotation.setup.feedback_files import feedback_read
from annotation.setup.feedback_import import BATCH_SIZE, FeedbackFormatError, feedback_import
from learning.dashboards import figures
from spaces.vectors.importing import space_import

WORDS = ["ann", "bob", "cid", "dee", "eve", "good", "bad"]


@pytest.fixture
def study(db, media_root, tmp_path) -> Study:
    np.save(tmp_path / "m.npy", np.random.default_rng(0).normal(size=(len(WORDS), 3)))
    (tmp_path / "m.vocab").write_text("\n".join(WORDS) + "\n")
    space = space_import(path=tmp_path / "m.npy", name="words")
    return Study.objects.create(name="Imported", space=space)


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def jsonl(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def nothing_stored(study: Study) -> bool:
    return not PairJudgment.objects.filter(study=study).exists() and not (
        ComparableGroup.objects.filter(study=study).exists()
    )


def test_csv_pairs_are_stored_canonically_as_imported(
    study, tmp_path, django_capture_on_commit_callbacks
):
    path = write(
        tmp_path / "p.csv",
        "key_a,key_b,label\nbob,ann,comparable\ngood,bad,0\nann,bob,UNSURE\nann,bob,comparable\n",
    )
    with django_capture_on_commit_callbacks() as callbacks:
        summary = feedback_import(study=study, path=path, provenance="pilot survey 2024")
    assert summary.judgments == 4
    assert len(callbacks) == 1  # one refit queued, after the commit
    rows = list(PairJudgment.objects.filter(study=study).select_related("item_a", "item_b"))
    assert all(j.item_a_id < j.item_b_id for j in rows)
    assert [(j.label, {j.item_a.key, j.item_b.key}) for j in rows] == [
        (Label.COMPARABLE, {"ann", "bob"}),
        (Label.INCOMPARABLE, {"good", "bad"}),
        (Label.UNSURE, {"ann", "bob"}),
        (Label.COMPARABLE, {"ann", "bob"}),
    ]
    assert {(j.source, j.provenance, j.annotator_id) for j in rows} == {
        (Source.IMPORTED, "pilot survey 2024", None)
    }
    assert len({j.client_id for j in rows}) == 4


def test_jsonl_pairs_default_provenance_is_the_file_name(study, tmp_path):
    path = write(
        tmp_path / "p.jsonl", jsonl({"key_a": "ann", "key_b": "eve", "label": "incomparable"})
    )
    feedback_import(study=study, path=path)
    assert PairJudgment.objects.get(study=study).provenance == "file p.jsonl"


def test_groups_from_csv_long_form(study, tmp_path, django_capture_on_commit_callbacks):
    path = write(
        tmp_path / "g.csv",
        "group,key\nnames,ann\nnames,bob\nnames,cid\nsentiment,good\nsentiment,bad\n",
    )
    with django_capture_on_commit_callbacks() as callbacks:
        summary = feedback_import(study=study, path=path, provenance="seed groups")
    assert (summary.groups, summary.members) == (2, 5)
    assert len(callbacks) == 1
    names = ComparableGroup.objects.get(study=study, name="names")
    assert sorted(names.members.values_list("key", flat=True)) == ["ann", "bob", "cid"]
    assert (names.source, names.provenance, names.created_by) == (
        Source.IMPORTED,
        "seed groups",
        None,
    )
    counter = StudyCounter.objects.get(study=study)
    assert names.revision == counter.group_revision == 1
    assert GroupEdit.objects.filter(group=names, action="create").count() == 1
    assert GroupEdit.objects.filter(group=names, action="add").count() == 3


def test_groups_from_jsonl_with_and_without_names(study, tmp_path):
    path = write(
        tmp_path / "g.jsonl",
        jsonl({"name": "all", "keys": ["ann", "bob", "dee"]}, {"keys": ["good", "bad"]}),
    )
    feedback_import(study=study, path=path)
    assert set(ComparableGroup.objects.filter(study=study).values_list("name", flat=True)) == {
        "all",
        "imported group 2",
    }


BAD = [
    (
        "unknown key",
        "p.csv",
        "key_a,key_b,label\nann,bob,comparable\nann,zed,comparable\n",
        3,
        "unknown key 'zed'",
    ),
    ("bad label", "p.csv", "key_a,key_b,label\nann,bob,maybe\n", 2, "unknown label 'maybe'"),
    ("self pair", "p.csv", "key_a,key_b,label\nann,ann,comparable\n", 2, "with itself"),
    (
        "missing field",
        "p.jsonl",
        jsonl(
            {"key_a": "ann", "key_b": "bob", "label": "comparable"},
            {"key_a": "ann", "label": "comparable"},
        ),
        2,
        "missing 'key_b'",
    ),
    (
        "bad json",
        "p.jsonl",
        '{"key_a": "ann", "key_b": "bob", "label": "comparable"}\n{oops\n',
        2,
        "not valid JSON",
    ),
    ("not an object", "p.jsonl", "[1, 2]\n", 1, "expected a JSON object"),
    ("ragged csv", "p.csv", "key_a,key_b,label\nann,bob\n", 2, "different number of columns"),
    (
        "undecodable",
        "p.csv",
        b"key_a,key_b,label\nann,bob,comparable\nann,b\xffb,comparable\n",
        3,
        "not valid UTF-8",
    ),
    (
        "group too small",
        "g.csv",
        "group,key\nsolo,ann\npair,bob\npair,cid\n",
        2,
        "fewer than two members",
    ),
    (
        "key twice in group",
        "g.csv",
        "group,key\ng,ann\ng,bob\ng,ann\n",
        4,
        "'ann' listed twice in group 'g' (first at line 2)",
    ),
    (
        "group unknown key",
        "g.jsonl",
        jsonl({"name": "x", "keys": ["ann", "nobody"]}),
        1,
        "unknown key 'nobody'",
    ),
    (
        "keys not a list",
        "g.jsonl",
        jsonl({"name": "x", "keys": "ann bob"}),
        1,
        "must be a list of strings",
    ),
    (
        "group repeated",
        "g.jsonl",
        jsonl({"name": "x", "keys": ["ann", "bob"]}, {"name": "x", "keys": ["cid", "dee"]}),
        2,
        "appears twice (first at line 1)",
    ),
]


@pytest.mark.parametrize(
    ("case", "name", "content", "line", "message"), BAD, ids=[b[0] for b in BAD]
)
def test_bad_feedback_names_the_line_and_stores_nothing(
    study, tmp_path, case, name, content, line, message
):
    path = write(tmp_path / name, content)
    with pytest.raises(FeedbackFormatError, match=re.escape(message)) as info:
        feedback_import(study=study, path=path)
    assert info.value.line == line
    assert str(info.value).startswith(f"line {line}: ")
    assert nothing_stored(study)
    assert not StudyCounter.objects.filter(study=study, group_revision__gt=0).exists()


def test_group_name_already_in_the_study_is_rejected(study, tmp_path):
    path = write(tmp_path / "g.csv", "group,key\nnames,ann\nnames,bob\n")
    feedback_import(study=study, path=path)
    with pytest.raises(FeedbackFormatError, match="line 2: the study already has a group named"):
        feedback_import(study=study, path=path)
    assert ComparableGroup.objects.filter(study=study).count() == 1


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.csv", "", "holds no judgments or groups"),
        ("header.csv", "key_a,key_b,label\n", "holds no judgments or groups"),
        ("pairs.txt", "x", "cannot tell the format of pairs.txt"),
    ],
)
def test_empty_or_unknown_files_are_rejected(study, tmp_path, name, content, message):
    with pytest.raises(FeedbackFormatError, match=message):
        feedback_import(study=study, path=write(tmp_path / name, content))
    assert nothing_stored(study)


def test_a_late_error_keeps_the_whole_file_out(study, tmp_path):
    rows = "".join(f"ann,{k},comparable\n" for k in ["bob", "cid", "dee"] * 3000)
    path = write(tmp_path / "p.csv", "key_a,key_b,label\n" + rows + "ann,ghost,comparable\n")
    with pytest.raises(FeedbackFormatError, match="line 9002: unknown key 'ghost'"):
        feedback_import(study=study, path=path)
    assert nothing_stored(study)


def test_many_pairs_are_stored_in_batches(study, tmp_path):
    rows = "".join(f"{a},{b},comparable\n" for a in WORDS for b in WORDS if a != b) * 300
    path = write(tmp_path / "p.csv", "key_a,key_b,label\n" + rows)
    with CaptureQueriesContext(connection) as queries:
        summary = feedback_import(study=study, path=path)
    assert summary.judgments == 42 * 300
    assert PairJudgment.objects.filter(study=study).count() == 12_600
    sql = [q["sql"] for q in queries.captured_queries]
    inserts = [s for s in sql if "INSERT INTO" in s.upper() and "pairjudgment" in s]
    assert len(inserts) == math.ceil(12_600 / BATCH_SIZE)  # one executemany per batch
    assert sum(s.lstrip().upper().startswith("SELECT") for s in sql) <= 3  # keys: one IN list
    rows = PairJudgment.objects.filter(study=study)
    assert rows.values("client_id").distinct().count() == 12_600
    assert not rows.exclude(source=Source.IMPORTED).exists()


def test_command_imports_and_reports(study, tmp_path, capsys):
    path = write(tmp_path / "p.csv", "key_a,key_b,label\nann,bob,comparable\n")
    call_command("import_feedback", str(path), "--study", "Imported", "--provenance", "legacy")
    assert "Imported 1 pair judgments into study 'Imported'" in capsys.readouterr().out
    with pytest.raises(CommandError, match=r"line 2: unknown key 'zed' .*nothing was stored"):
        call_command(
            "import_feedback",
            str(write(tmp_path / "b.csv", "key_a,key_b,label\nann,zed,comparable\n")),
            "--study",
            str(study.pk),
        )
    with pytest.raises(CommandError, match="no study named 'Nope'"):
        call_command("import_feedback", str(path), "--study", "Nope")


def test_an_annotator_column_makes_the_answers_the_members_and_they_count_in_agreement(
    study, tmp_path
):
    """Imported judgments used to carry no annotator, so they never counted in agreement. The
    optional annotator column names a member (username or e-mail, any case); a name that is
    no member's is refused with its line, and an empty cell is nobody."""
    people = {}
    for name in ("rita", "sam"):
        people[name] = get_user_model().objects.create_user(
            name, email=f"{name}@example.org", password="pw-123456"
        )
        Membership.objects.create(user=people[name], study=study)
    rows = ["key_a,key_b,label,annotator"]
    pairs = [("ann", "bob"), ("bob", "cid"), ("cid", "dee"), ("dee", "eve"), ("eve", "good")]
    for i, (a, b) in enumerate(pairs):
        rows.append(f"{a},{b},comparable,RITA")
        rows.append(f"{a},{b},{'comparable' if i < 4 else 'incomparable'},sam@example.org")
    rows.append("good,bad,unsure,")
    path = write(tmp_path / "answers.csv", "\n".join(rows) + "\n")
    with open(path, "rb") as lines:
        plan = feedback_read(study=study, raw_lines=lines, name=path.name)
    assert plan.annotators == 2
    feedback_import(study=study, path=path)
    stored = PairJudgment.objects.filter(study=study)
    assert stored.filter(annotator=people["rita"]).count() == 5
    assert stored.filter(annotator=people["sam"]).count() == 5
    assert stored.filter(annotator=None).count() == 1
    assert set(stored.values_list("source", flat=True)) == {Source.IMPORTED}
    board = figures.study_dashboard(study)
    assert {q.username for q in board.annotators} == {"rita", "sam"}
    assert len(board.kappas) == 1  # the two members' answers are compared
    assert board.overlapping_pairs == 5

    unknown = write(tmp_path / "unknown.csv", "key_a,key_b,label,annotator\nann,bob,1,zoe\n")
    with pytest.raises(FeedbackFormatError) as refused:
        feedback_import(study=study, path=unknown)
    assert refused.value.line == 2
    assert "annotator 'zoe' is no member of the study" in str(refused.value)
