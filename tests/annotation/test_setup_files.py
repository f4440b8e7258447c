"""Reading the set-up files: item keys and pairs from CSV, TSV, JSONL or pasted text; every
problem names its line."""

from __future__ import annotations

import pytest

from annotation.setup.files import parse_keys, parse_pairs
from common.errors import InvalidInput


def test_key_files_csv_tsv_jsonl_and_pasted():
    assert parse_keys("key,text\nw001,x\nw002,y\nw001,z\n") == ["w001", "w002"]
    assert parse_keys("w001\tfoo\nw002\tbar\n") == ["w001", "w002"]
    assert parse_keys('{"key": "w001"}\n"w002"\n') == ["w001", "w002"]
    assert parse_keys("w001, w002\nw003", pasted=True) == ["w001", "w002", "w003"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("{bad json\n", "Line 1: not valid JSON"),
        ('{"key": 5}\n', "Line 1: an empty or non-text item key"),
        ("w001,w002,maybe\n", "Line 1: the label must be comparable or incomparable"),
        ("w001,w002\n", "Line 1: expected 3 columns"),
        ("w001,w001,1\n", "Line 1: a pair needs two different items"),
    ],
)
def test_bad_pair_and_key_files_name_the_line(text, message):
    keys = message == "empty" or "item key" in message
    with pytest.raises(InvalidInput, match=message):
        (parse_keys(text) if keys else parse_pairs(text, labelled=True))


def test_pairs_accept_a_header_labels_as_numbers_and_jsonl():
    rows = parse_pairs("key_a,key_b,label\nw001,w002,1\nw003,w004,incomparable\n", labelled=True)
    assert [(r.key_a, r.key_b, r.label) for r in rows] == [
        ("w001", "w002", "comparable"),
        ("w003", "w004", "incomparable"),
    ]
    rows = parse_pairs('{"key_a": "w001", "key_b": "w002"}\n', labelled=False)
    assert (rows[0].line, rows[0].key_a) == (1, "w001")
