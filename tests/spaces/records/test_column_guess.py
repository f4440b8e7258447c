"""The roles guessed for an uploaded table's columns (``guess_roles``): keys and labels found
by the words of their names or by position, on a real table's columns (German credit)."""

from __future__ import annotations

import pandas as pd
import pytest

from spaces.records.columns import guess_roles, name_tokens


def german_head(rows: int = 40) -> pd.DataFrame:
    """German credit's shape as a team uploads it: an applicant id, codes, numbers, and the
    two-valued outcome last, named ``credit``."""
    return pd.DataFrame(
        {
            "applicant_id": [f"A{i:04d}" for i in range(rows)],
            "status": [f"A1{i % 4 + 1}" for i in range(rows)],
            "duration": [6 + (i * 7) % 60 for i in range(rows)],
            "purpose": [("car", "radio/tv", "business", "education")[i % 4] for i in range(rows)],
            "credit_amount": [1000 + 37 * i for i in range(rows)],
            "sex": [("male", "female")[i % 2] for i in range(rows)],
            "credit": [("good", "bad", "good")[i % 3] for i in range(rows)],
        }
    )


def test_a_real_tables_id_and_two_valued_last_column_are_the_key_and_the_label():
    guess = guess_roles(german_head())
    assert guess["key_column"] == "applicant_id"
    assert guess["label_column"] == "credit"
    assert guess["roles"] == {
        "applicant_id": "excluded",
        "status": "categorical",
        "duration": "numeric",
        "purpose": "categorical",
        "credit_amount": "numeric",
        "sex": "categorical",
        "credit": "excluded",
    }


@pytest.mark.parametrize(
    ("name", "tokens"),
    [
        ("applicant_id", ["applicant", "id"]),
        ("customerID", ["customer", "id"]),
        ("Record-Key", ["record", "key"]),
        ("hours_per_week", ["hours", "per", "week"]),
    ],
)
def test_name_tokens(name, tokens):
    assert name_tokens(name) == tokens


def test_camel_case_key_and_a_named_outcome_win_over_position():
    frame = german_head().rename(columns={"applicant_id": "customerID"})
    frame.insert(1, "loan_outcome", ["yes", "no", "maybe", "no"] * 10)
    guess = guess_roles(frame)
    assert (guess["key_column"], guess["label_column"]) == ("customerID", "loan_outcome")
    assert guess["roles"]["credit"] == "categorical"


def test_no_guess_when_nothing_fits():
    frame = pd.DataFrame(
        {
            "work_class": ["a", "b", "c"] * 10,
            "customer_id": ["x"] * 30,  # named like a key but not unique
            "score": [0.1 * i for i in range(30)],
        }
    )
    guess = guess_roles(frame)
    assert (guess["key_column"], guess["label_column"]) == ("", "")
    assert guess["roles"] == {
        "work_class": "categorical",
        "customer_id": "excluded",  # constant: flagged
        "score": "numeric",
    }
    assert guess["flags"] == {
        "customer_id": "constant: 'x' in every row read; it adds nothing to φ"
    }


def test_a_wage_table_guesses_no_label_and_flags_its_constant_and_id_columns():
    """ISLR's Wage as a team uploads it: row ids, a constant region, the outcome (wage and its
    log) with no label-like name. No label is guessed (the page then makes the admin choose);
    the constant column is flagged and excluded, the ids flagged."""
    rows = 30
    frame = pd.DataFrame(
        {
            "X": [str(231655 + 7919 * i) for i in range(rows)],
            "age": [str(18 + i % 20) for i in range(rows)],
            "region": ["2. Middle Atlantic"] * rows,
            "education": [("1. < HS Grad", "3. Some College")[i % 2] for i in range(rows)],
            "name": [f"Worker {i}" for i in range(rows)],
            "wage": [f"{75 + i * 1.37:.3f}" for i in range(rows)],
            "logwage": [f"{4.3 + i * 0.01:.3f}" for i in range(rows)],
        }
    )
    guess = guess_roles(frame)
    assert guess["label_column"] == ""
    assert guess["roles"]["region"] == "excluded"
    assert guess["roles"]["name"] == "excluded"
    assert set(guess["flags"]) == {"X", "region", "name"}
    assert guess["flags"]["name"].startswith("near-unique: 30 distinct values in 30 rows")
    assert guess["roles"]["wage"] == "numeric"  # the admin chooses the label on the page
