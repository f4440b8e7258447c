"""import_embeddings refuses every bad input with one error naming its line (or record), and
stores nothing: no space, no item, no matrix file — names taken before or while reading
included."""

from __future__ import annotations

import numpy as np
import pytest

from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingSpace, Item, Tag
from spaces.vectors import importing
from spaces.vectors.importing import space_import

from .embedding_files import (
    KEYS,
    MATRIX,
    stored_nothing,
    text_lines,
    word2vec_binary,
    write,
)

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


def test_a_csv_field_over_128_kb_names_its_line(db, media, tmp_path):
    # The csv module's own limit (csv.field_size_limit) raised csv.Error, a crash of the import.
    path = write(tmp_path / "big.csv", f"key,d0,d1\nthe,1,2\nof,{'9' * 200_000},2\n".encode())
    with pytest.raises(EmbeddingFormatError, match="malformed CSV .*field larger") as info:
        space_import(path=path, name="bad", fmt="csv")
    assert info.value.line == 3
    assert stored_nothing(media)
