"""import_embeddings: every format, every bad input (with its line, nothing stored), streaming."""

from __future__ import annotations

import gzip
import hashlib
import struct
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingSpace, Item, Tag
from spaces.vectors import importing
from spaces.vectors.importing import space_import
from spaces.vectors.reader import EmbeddingReader

from ..conftest import ROOT, subprocess_env

KEYS = ["the", "of", "and", "to", "a"]
MATRIX = np.arange(20, dtype=np.float32).reshape(5, 4) / 8 - 1


@pytest.fixture
def media(media_root) -> Path:
    return media_root


def text_lines(keys=KEYS, matrix=MATRIX) -> list[str]:
    return [
        f"{k} " + " ".join(repr(float(v)) for v in row) for k, row in zip(keys, matrix, strict=True)
    ]


def write(path: Path, lines: list[str] | bytes) -> Path:
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def word2vec_binary(keys=KEYS, matrix=MATRIX, newline=True, count=None) -> bytes:
    out = f"{count if count is not None else len(keys)} {matrix.shape[1]}\n".encode()
    for key, row in zip(keys, matrix, strict=True):
        out += (
            key.encode() + b" " + struct.pack(f"<{len(row)}f", *row) + (b"\n" if newline else b"")
        )
    return out


def stored_nothing(media: Path) -> bool:
    files = list((media / "spaces").glob("*")) if (media / "spaces").exists() else []
    return not EmbeddingSpace.objects.exists() and not Item.objects.exists() and not files


def assert_imported(space: EmbeddingSpace, keys=KEYS, matrix=MATRIX):
    assert space.dimension == matrix.shape[1]
    assert space.item_count == len(keys)
    items = list(Item.objects.filter(space=space).order_by("row"))
    assert [i.key for i in items] == keys
    assert [i.row for i in items] == list(range(len(keys)))
    np.testing.assert_allclose(space.load_matrix(), matrix, rtol=1e-6)
    assert space.load_matrix().dtype == np.float32
    assert hashlib.sha256(Path(space.matrix.path).read_bytes()).hexdigest() == space.sha256


# --- every format ---------------------------------------------------------------------------


def test_word2vec_text_with_header(db, media, tmp_path):
    path = write(tmp_path / "vectors.txt", ["5 4", *text_lines()])
    space = space_import(path=path, name="w2v", tags=["glove", "demo"])
    assert_imported(space)
    assert Item.objects.filter(space=space, kind="word").count() == 5
    assert Tag.objects.get(name="glove").items.count() == 5
    assert "word2vec" in space.source


def test_glove_text_without_header(db, media, tmp_path):
    path = write(tmp_path / "glove.txt", text_lines())
    assert EmbeddingReader(path).format == "glove"
    assert_imported(space_import(path=path, name="glove"))


def test_a_byte_order_mark_is_not_part_of_the_first_key(db, media, tmp_path):
    path = write(tmp_path / "bom.txt", ("\ufeff" + "\n".join(text_lines()) + "\n").encode())
    assert_imported(space_import(path=path, name="bom"))
    rows = [f"{k}," + ",".join(str(float(v)) for v in r) for k, r in zip(KEYS, MATRIX, strict=True)]
    csv_path = write(tmp_path / "bom.csv", ("\ufeffkey,a,b,c,d\n" + "\n".join(rows)).encode())
    assert_imported(space_import(path=csv_path, name="bom-csv", key_column="key"))


def test_gzipped_glove_text(db, media, tmp_path):
    path = tmp_path / "glove.txt.gz"
    path.write_bytes(gzip.compress(("\n".join(text_lines()) + "\n").encode()))
    assert_imported(space_import(path=path, name="gz"))


@pytest.mark.parametrize("newline", [True, False], ids=["c-tool", "gensim"])
def test_word2vec_binary(db, media, tmp_path, newline):
    path = write(tmp_path / "vectors.bin", word2vec_binary(newline=newline))
    assert_imported(space_import(path=path, name="bin"))


def test_word2vec_binary_detected_without_extension(db, media, tmp_path):
    path = write(tmp_path / "vectors", word2vec_binary())
    assert EmbeddingReader(path).format == "word2vec-bin"


def test_npy_with_vocabulary_file(db, media, tmp_path):
    np.save(tmp_path / "m.npy", MATRIX.astype(np.float64))
    write(tmp_path / "keys.txt", KEYS)
    assert_imported(space_import(path=tmp_path / "m.npy", vocab=tmp_path / "keys.txt", name="n"))


def test_npy_finds_a_sibling_vocab_file(db, media, tmp_path):
    np.save(tmp_path / "m.npy", MATRIX)
    write(tmp_path / "m.vocab", KEYS)
    assert_imported(space_import(path=tmp_path / "m.npy", name="n"))


def test_npy_with_a_parquet_vocabulary_as_glove_ships_it(db, media, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    np.save(tmp_path / "emb.npy", MATRIX)
    pq.write_table(pa.table({"index": KEYS}), tmp_path / "index.parquet")
    space = space_import(path=tmp_path / "emb.npy", vocab=tmp_path / "index.parquet", name="pq")
    assert_imported(space)
    pq.write_table(pa.table({"index": ["a", None, "c", "d", "e"]}), tmp_path / "bad.parquet")
    with pytest.raises(EmbeddingFormatError, match="line 2: empty key"):
        space_import(path=tmp_path / "emb.npy", vocab=tmp_path / "bad.parquet", name="bad")
    pq.write_table(pa.table({"a": KEYS, "b": KEYS}), tmp_path / "two.parquet")
    with pytest.raises(EmbeddingFormatError, match="needs one string column"):
        space_import(path=tmp_path / "emb.npy", vocab=tmp_path / "two.parquet", name="bad")
    assert EmbeddingSpace.objects.count() == 1


def test_csv_key_and_numeric_columns(db, media, tmp_path):
    rows = [f"{k}," + ",".join(str(float(v)) for v in r) for k, r in zip(KEYS, MATRIX, strict=True)]
    path = write(tmp_path / "v.csv", ["key,d0,d1,d2,d3", *rows])
    space = space_import(path=path, name="csv")
    assert_imported(space)
    assert not Item.objects.filter(space=space, payload__isnull=False).exists()


def test_csv_with_record_fields_kept_as_payload(db, media, tmp_path):
    rows = [
        f"{k},x{i},{','.join(str(float(v)) for v in r)},job{i}"
        for i, (k, r) in enumerate(zip(KEYS, MATRIX, strict=True))
    ]
    path = write(tmp_path / "v.csv", ["id,name,d0,d1,d2,d3,job", *rows])
    space = space_import(path=path, name="rec", key_column="id", fields=["name", "job"])
    assert_imported(space)
    item = Item.objects.get(space=space, key="of")
    assert item.kind == "record"
    assert item.payload == {"name": "x1", "job": "job1"}


def test_csv_records_with_a_separate_vector_file(db, media, tmp_path):
    path = write(
        tmp_path / "people.csv",
        ["key,age,occupation", *(f'{k},{30 + i},"teacher, retired"' for i, k in enumerate(KEYS))],
    )
    np.save(tmp_path / "people.npy", MATRIX)
    space = space_import(path=path, vectors=tmp_path / "people.npy", name="people")
    assert_imported(space)
    assert Item.objects.get(space=space, key="and").payload == {
        "age": "32",
        "occupation": "teacher, retired",
    }


def test_limit_imports_the_first_rows_only(db, media, tmp_path):
    path = write(tmp_path / "vectors.txt", ["5 4", *text_lines()])
    space = space_import(path=path, name="lim", limit=2)
    assert_imported(space, KEYS[:2], MATRIX[:2])


def test_items_can_get_kinds_and_tags_per_key(db, media, tmp_path):
    path = write(tmp_path / "glove.txt", text_lines())
    space = space_import(
        path=path,
        name="t",
        item_kinds={"a": "name"},
        item_tags={"stop": ["the", "of"], "article": ["a", "the"]},
    )
    assert Item.objects.get(space=space, key="a").kind == "name"
    assert set(Tag.objects.get(name="stop").items.values_list("key", flat=True)) == {"the", "of"}
    assert Tag.objects.get(name="article").items.count() == 2


def test_command_prints_a_summary_and_progress(db, media, tmp_path, capsys):
    path = write(tmp_path / "vectors.txt", ["5 4", *text_lines()])
    call_command("import_embeddings", str(path), "--name", "cmd", "--tag", "t1")
    out, err = capsys.readouterr()
    assert "Imported space 'cmd'" in out
    assert "5 items x 4 dimensions" in out
    assert "reading" in err
    assert "storing" in err
    assert EmbeddingSpace.objects.get(name="cmd").items.filter(tags__name="t1").count() == 5


# --- every bad input: one error with its line, nothing stored --------------------------------

BAD_TEXT = [
    ("mixed dimensions", ["the 1 2 3", "of 1 2", "and 1 2 3"], "glove", 2, "2 values, expected 3"),
    ("header dimension", ["2 3", "the 1 2 3", "of 1 2 3 4"], "word2vec", 3, "4 values, expected 3"),
    ("fewer than header", ["3 2", "the 1 2", "of 1 2"], "word2vec", 1, "announces 3 vectors"),
    ("more than header", ["1 2", "the 1 2", "of 1 2"], "word2vec", 3, "more vectors than the 1"),
    ("bad header", ["the 1 2"], "word2vec", 1, "expected the word2vec header"),
    ("zero header", ["0 50"], "word2vec", 1, "announces no vectors"),
    ("nan", ["the 1 2", "of nan 2"], "glove", 2, "not finite"),
    ("inf", ["the 1 2", "of 1 -inf", "x 1 2"], "glove", 2, "not finite"),
    ("beyond float32", ["the 1 2", "of 1 2", "and 1e39 0"], "glove", 3, "beyond float32"),
    ("not a number", ["the 1 2", "of 1 2", "and 1 x2"], "glove", 3, "'x2' is not a number"),
    (
        "duplicate key",
        ["the 1 2", "of 1 2", "a 1 2", "of 3 4"],
        "glove",
        4,
        "duplicate key 'of', first seen at line 2",
    ),
    ("empty key", ["the 1 2", " 1 2"], "glove", 2, "empty key"),
    ("no values", ["the"], "glove", 1, "no vector values"),
    ("key too long", ["k" * 256 + " 1 2"], "glove", 1, "longer than 255"),
]


@pytest.mark.parametrize(
    ("case", "lines", "fmt", "line", "message"), BAD_TEXT, ids=[c[0] for c in BAD_TEXT]
)
def test_bad_text_input_names_the_line_and_stores_nothing(
    db, media, tmp_path, case, lines, fmt, line, message
):
    path = write(tmp_path / "bad.txt", lines)
    with pytest.raises(EmbeddingFormatError, match=message) as info:
        space_import(path=path, name="bad", fmt=fmt)
    assert info.value.line == line
    assert str(info.value).startswith(f"line {line}: ")
    assert stored_nothing(media)


def test_undecodable_bytes_name_the_line(db, media, tmp_path):
    path = write(tmp_path / "bad.txt", b"the 1 2\nof 1 2\ncaf\xe9 1 2\n")
    with pytest.raises(EmbeddingFormatError, match=r"line 3: not valid UTF-8 \(byte 0xe9") as info:
        space_import(path=path, name="bad")
    assert info.value.line == 3
    assert stored_nothing(media)


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"], ids=["empty", "blank"])
def test_empty_file_is_rejected(db, media, tmp_path, content):
    path = write(tmp_path / "empty.txt", content)
    with pytest.raises(EmbeddingFormatError, match="holds no vectors"):
        space_import(path=path, name="bad")
    with pytest.raises(EmbeddingFormatError, match="holds no vectors"):
        space_import(path=path, name="bad", fmt="glove")
    assert stored_nothing(media)


def test_unknown_format_is_rejected(db, media, tmp_path):
    path = write(tmp_path / "v.txt", text_lines())
    with pytest.raises(EmbeddingFormatError, match="unknown format 'fasttext'"):
        space_import(path=path, name="bad", fmt="fasttext")
    binary = write(tmp_path / "v.dat", b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises(EmbeddingFormatError, match="cannot tell the format of v.dat"):
        space_import(path=binary, name="bad")
    assert stored_nothing(media)


def test_truncated_binary_names_the_record(db, media, tmp_path):
    data = word2vec_binary()[:-10]
    path = write(tmp_path / "v.bin", data)
    with pytest.raises(EmbeddingFormatError, match="record 5: the file ends inside the vector"):
        space_import(path=path, name="bad")
    assert stored_nothing(media)


def test_binary_with_fewer_records_than_announced(db, media, tmp_path):
    path = write(tmp_path / "v.bin", word2vec_binary(count=7))
    with pytest.raises(EmbeddingFormatError, match="record 6: the file ends after 5 of the 7"):
        space_import(path=path, name="bad")
    assert stored_nothing(media)


def test_binary_nan_and_duplicate_name_the_record(db, media, tmp_path):
    matrix = MATRIX.copy()
    matrix[3, 1] = np.nan
    with pytest.raises(EmbeddingFormatError, match="record 4: a value is not finite"):
        space_import(path=write(tmp_path / "a.bin", word2vec_binary(matrix=matrix)), name="b")
    keys = ["x", "y", "z", "y", "w"]
    with pytest.raises(
        EmbeddingFormatError, match="record 4: duplicate key 'y', first seen at record 2"
    ):
        space_import(path=write(tmp_path / "b.bin", word2vec_binary(keys=keys)), name="b")
    assert stored_nothing(media)


def test_npy_problems(db, media, tmp_path):
    np.save(tmp_path / "m.npy", MATRIX)
    write(tmp_path / "short.txt", KEYS[:4])
    with pytest.raises(EmbeddingFormatError, match="vocabulary has 4 lines but the matrix has 5"):
        space_import(path=tmp_path / "m.npy", vocab=tmp_path / "short.txt", name="b")
    with pytest.raises(EmbeddingFormatError, match="needs a vocabulary file"):
        space_import(path=tmp_path / "m.npy", name="b")
    np.save(tmp_path / "flat.npy", MATRIX.ravel())
    write(tmp_path / "flat.vocab", KEYS)
    with pytest.raises(EmbeddingFormatError, match="must be a 2-D matrix"):
        space_import(path=tmp_path / "flat.npy", name="b")
    bad = MATRIX.copy()
    bad[2, 0] = np.inf
    np.save(tmp_path / "inf.npy", bad)
    write(tmp_path / "inf.vocab", KEYS)
    with pytest.raises(EmbeddingFormatError, match="line 3: a value is not finite"):
        space_import(path=tmp_path / "inf.npy", name="b")
    write(tmp_path / "junk.npy", b"not a numpy file")
    write(tmp_path / "junk.vocab", KEYS)
    with pytest.raises(EmbeddingFormatError, match="not a readable .npy file"):
        space_import(path=tmp_path / "junk.npy", name="b")
    assert stored_nothing(media)


def test_csv_problems(db, media, tmp_path):
    path = write(tmp_path / "a.csv", ["key,d0,d1", "x,1,2", "y,1", "z,1,2"])
    with pytest.raises(EmbeddingFormatError, match="line 3: 2 columns, expected 3"):
        space_import(path=path, name="b")
    path = write(tmp_path / "b.csv", ["key,d0,d1", "x,1,2", "y,1,two"])
    with pytest.raises(EmbeddingFormatError, match="line 3: 'two' is not a number"):
        space_import(path=path, name="b")
    path = write(tmp_path / "c.csv", ["key,d0", "x,1", "x,2"])
    with pytest.raises(
        EmbeddingFormatError, match="line 3: duplicate key 'x', first seen at line 2"
    ):
        space_import(path=path, name="b")
    with pytest.raises(EmbeddingFormatError, match="line 1: no key column 'id'"):
        space_import(path=path, name="b", key_column="id")
    with pytest.raises(EmbeddingFormatError, match="line 1: no vector columns"):
        space_import(path=write(tmp_path / "d.csv", ["key", "x"]), name="b")
    np.save(tmp_path / "v.npy", MATRIX)
    with pytest.raises(EmbeddingFormatError, match="2 data rows but v.npy has 5 rows"):
        space_import(path=path, name="b", vectors=tmp_path / "v.npy")
    assert stored_nothing(media)


def test_existing_name_is_rejected_before_reading(db, media, tmp_path):
    path = write(tmp_path / "v.txt", text_lines())
    space_import(path=path, name="taken")
    with pytest.raises(EmbeddingFormatError, match="a space named 'taken' already exists"):
        space_import(path=path, name="taken")
    assert EmbeddingSpace.objects.count() == 1
    assert len(list((media / "spaces").glob("*"))) == 1


def test_a_name_taken_while_reading_is_a_readable_error(db, media, tmp_path, monkeypatch):
    path = write(tmp_path / "v.txt", text_lines())
    original = importing._write_matrix

    def meanwhile(reader, target, progress):  # another import commits the same name
        rows = original(reader, target, progress)
        EmbeddingSpace.objects.create(name="race", dimension=4, matrix="spaces/o.npy", sha256="0")
        return rows

    monkeypatch.setattr(importing, "_write_matrix", meanwhile)
    with pytest.raises(EmbeddingFormatError, match="a space named 'race' already exists"):
        space_import(path=path, name="race")
    assert EmbeddingSpace.objects.count() == 1
    assert not Item.objects.exists()
    assert list((media / "spaces").glob("*")) == []


def test_a_failure_while_storing_rolls_back_and_removes_the_matrix(db, media, tmp_path):
    path = write(tmp_path / "v.txt", text_lines())
    with pytest.raises(ValueError, match="no item 'missing'"):
        space_import(path=path, name="x", item_tags={"t": ["the", "missing"]})
    assert stored_nothing(media)
    assert not Tag.objects.filter(items__isnull=False).exists()


def test_command_turns_bad_input_into_one_command_error(db, media, tmp_path):
    path = write(tmp_path / "bad.txt", ["the 1 2", "of 1 2", "the 3 4"])
    with pytest.raises(CommandError) as info:
        call_command("import_embeddings", str(path), "--name", "x", "--no-progress")
    message = str(info.value)
    assert "\n" not in message
    assert "line 3: duplicate key 'the', first seen at line 1" in message
    assert "nothing was stored" in message
    assert stored_nothing(media)


def test_command_exits_non_zero_with_one_readable_line(tmp_path):
    path = write(tmp_path / "bad.txt", ["the 1 2", "of nan 2"])
    env = subprocess_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", MEDIA_ROOT=str(tmp_path / "media")
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    proc = subprocess.run(
        [sys.executable, "manage.py", "import_embeddings", str(path), "--name", "x"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("CommandError: ")
    assert "line 2: a value is not finite" in last
    assert "Traceback" not in proc.stderr


# --- streaming --------------------------------------------------------------------------------


@pytest.mark.slow
def test_large_text_file_streams_in_blocks_without_holding_the_matrix(
    db, media, tmp_path, monkeypatch
):
    rng = np.random.default_rng(0)
    n, d = 15_000, 300  # an 18 MB matrix
    tokens = np.array([f"{v:.3f}" for v in np.linspace(-2, 2, 1001)])
    index = rng.integers(0, len(tokens), size=(n, d))
    matrix = tokens[index].astype(np.float32)
    path = tmp_path / "big.txt"
    with open(path, "w") as f:
        f.write(f"{n} {d}\n")
        f.writelines(f"w{i} {' '.join(row)}\n" for i, row in enumerate(tokens[index].tolist()))
    blocks = 0
    original = importing._write_matrix

    def counting(reader, target, progress):
        nonlocal blocks

        def tick(stage, done, total):
            nonlocal blocks
            blocks += 1

        tracemalloc.start()
        try:
            rows = original(reader, target, tick)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < matrix.nbytes / 2, (
            f"peak {peak / 1e6:.1f} MB for a {matrix.nbytes / 1e6:.0f} MB matrix"
        )
        return rows

    monkeypatch.setattr(importing, "_write_matrix", counting)
    space = space_import(path=path, name="big")
    assert blocks > 10
    assert space.item_count == n
    np.testing.assert_allclose(space.load_matrix(), matrix, rtol=1e-5)
    assert space.vectors([14_999, 0]).shape == (2, d)
