"""import_embeddings reads every format right: word2vec text and binary, GloVe, gzip, .npy with
a text or Parquet vocabulary, CSV (plain, with record fields, with a separate vector file), the
options (limit, kinds and tags per key), and a large file streamed in blocks."""

from __future__ import annotations

import gzip
import tracemalloc

import numpy as np
import pytest

from spaces.exceptions import EmbeddingFormatError
from spaces.models import EmbeddingSpace, Item, Tag
from spaces.vectors import importing
from spaces.vectors.importing import space_import
from spaces.vectors.reader import EmbeddingReader

from .embedding_files import (
    KEYS,
    MATRIX,
    assert_imported,
    text_lines,
    word2vec_binary,
    write,
)

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
