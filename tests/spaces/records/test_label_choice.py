"""The columns page of a table whose outcome no name gives away (ISLR's Wage): the admin must
choose the label or say there is none, and the constant and id-like columns are flagged."""

from __future__ import annotations

from spaces.models import EmbeddingImport, EmbeddingSpace
from spaces.records import importing
from spaces.records.forms import LABEL_REQUIRED, NO_LABEL

from .uploading import choose, post_file, text

ROWS = [
    f"{231655 + 7919 * i},{18 + i % 20},2. Middle Atlantic,{('1. HS', '2. College')[i % 2]},"
    f"{75 + i * 1.37:.3f},{4.3 + i * 0.01:.3f}"
    for i in range(30)
]
WAGE = ("X,age,region,education,wage,logwage\n" + "\n".join(ROWS) + "\n").encode()


def answer(label: str) -> dict:
    roles = ["excluded", "numeric", "excluded", "categorical", "excluded:hidden", "excluded"]
    return {f"col_{i}": role for i, role in enumerate(roles)} | {
        "label_column": label,
        "key_column": "X",
    }


def test_no_recognised_label_makes_the_admin_choose_it(
    staff_client, media_root, queued, django_capture_on_commit_callbacks
):
    url = post_file(staff_client, WAGE, "Wage.csv", name="wage")["Location"]
    page = staff_client.get(url)
    assert page.context["form"]["label_column"].value() in ("", None)
    body = text(page)
    assert "No column was recognised as the outcome" in body
    assert 'data-flag="region"' in body
    assert "constant: '2. Middle Atlantic'" in body
    assert 'data-flag="X"' in body
    # Left unchosen: a form error, nothing queued.
    refused = choose(staff_client, url, answer(""), django_capture_on_commit_callbacks)
    assert refused.status_code == 400
    assert LABEL_REQUIRED in text(refused)
    assert EmbeddingImport.objects.get().stage == "columns"
    # Chosen: wage is the label, kept out of φ and hidden from annotators.
    assert (
        choose(staff_client, url, answer("wage"), django_capture_on_commit_callbacks).status_code
        == 302
    )
    assert importing.record_import_run(import_id=EmbeddingImport.objects.get().pk) == "done"
    space = EmbeddingSpace.objects.get(name="wage")
    assert space.label_column == "wage"
    assert "wage" in space.hidden_columns
    assert "wage" not in space.feature_map["feature_names"]


def test_none_is_an_explicit_answer(
    staff_client, media_root, queued, django_capture_on_commit_callbacks
):
    url = post_file(staff_client, WAGE, "Wage.csv", name="wage")["Location"]
    done = choose(staff_client, url, answer(NO_LABEL), django_capture_on_commit_callbacks)
    assert done.status_code == 302
    assert EmbeddingImport.objects.get().options["label_column"] == ""
