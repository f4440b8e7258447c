"""Bad inputs of the management commands (import paths and the paper's experiments): each
ends with one ``CommandError`` line and writes nothing."""

from __future__ import annotations

from .cases import A

# (command, bad input, its arguments, the CommandError's message)
COMMANDS = [
    (
        "adult_scores",
        "no Adult demo loaded",
        lambda w, tmp: ["--out", str(tmp / "scores")],
        "the Adult demo is not loaded: run manage.py load_adult_demo first",
    ),
    (
        "import_feedback",
        "unknown study",
        lambda w, tmp: [str(tmp / "f.csv"), "--study", "nope"],
        "no study named 'nope'",
    ),
    (
        "import_feedback",
        "missing file",
        lambda w, tmp: [str(tmp / "absent.csv"), "--study", str(A(w))],
        "absent.csv",
    ),
    (
        "import_feedback",
        "pairs of another space's keys",
        lambda w, tmp: [str(tmp / "f.csv"), "--study", str(A(w))],
        "unknown key 'zzz'",
    ),
    (
        "import_embeddings",
        "missing file",
        lambda w, tmp: [str(tmp / "absent.txt"), "--name", "x"],
        "absent.txt",
    ),
    (
        "import_embeddings",
        "a space name already taken",
        lambda w, tmp: [str(tmp / "v.txt"), "--name", w.study_a.space.name],
        "already",
    ),
    (
        "reproduce_weat_table",
        "unknown study",
        lambda w, tmp: ["--study", "nope"],
        "no study named 'nope'",
    ),
    (
        "reproduce_weat_table",
        "k not integers",
        lambda w, tmp: ["--study", "Study A", "--k", "a,b"],
        "--k must be comma-separated integers",
    ),
    (
        "reproduce_weat_table",
        "unknown suite",
        lambda w, tmp: ["--study", "Study A", "--suite", "none"],
        "has no WEAT suite 'none'",
    ),
    (
        "reproduce_weat_table",
        "no permutations",
        lambda w, tmp: ["--study", "Study A", "--permutations", "0"],
        "at least 1",
    ),
]

# (command, bad input, the test that covers it)
ELSEWHERE = [
    (
        "import_embeddings",
        "NaN/inf, mixed dimensions, duplicate keys, bad headers, empty keys",
        "tests.spaces.vectors.test_import_bad_input::"
        "test_bad_text_input_names_the_line_and_stores_nothing",
    ),
    (
        "import_embeddings",
        "binary NaN and duplicate keys",
        "tests.spaces.vectors.test_import_bad_input::test_binary_nan_and_duplicate_name_the_record",
    ),
    (
        "import_embeddings",
        "npy: inf, wrong shape, short vocabulary, not a .npy",
        "tests.spaces.vectors.test_import_bad_input::test_npy_problems",
    ),
    (
        "import_embeddings",
        "csv: ragged rows, text values, duplicate keys",
        "tests.spaces.vectors.test_import_bad_input::test_csv_problems",
    ),
    (
        "import_embeddings",
        "one CommandError line",
        "tests.spaces.vectors.test_import_command::"
        "test_command_turns_bad_input_into_one_command_error",
    ),
    (
        "import_feedback",
        "unknown keys/labels, self pairs, bad JSON, duplicates, undecodable",
        "tests.annotation.test_feedback_import::test_bad_feedback_names_the_line_and_stores_nothing",
    ),
    (
        "import_feedback",
        "empty or unknown files",
        "tests.annotation.test_feedback_import::test_empty_or_unknown_files_are_rejected",
    ),
    (
        "create_demo_users",
        "run without DEBUG",
        "tests.test_auth::test_demo_users_are_refused_without_debug",
    ),
    (
        "reproduce_adult_table",
        "--url without --token and --study",
        "tests.learning.test_reproduce_adult_table::test_url_needs_token_and_study",
    ),
    (
        "reproduce_adult_table",
        "an unreachable --url",
        "tests.learning.test_reproduce_adult_table::"
        "test_an_unreachable_server_is_one_readable_line",
    ),
]

# Commands that take no input: the demos (a yes/no flag at most; their data ships with the code).
NO_INPUT = {"load_demo", "load_adult_demo"}
