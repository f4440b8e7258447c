"""What the record-upload tests share: the table, the answer of its columns form, the posts."""

from __future__ import annotations

import html
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from spaces.models import EmbeddingImport, EmbeddingSpace

CSV = b"id,age,sex,hours,income\np1,39,Male,40,<=50K\np2, 50,Female,13,>50K\np3,38,Male,40,<=50K\n"


ANSWER = {
    "col_0": "excluded",
    "col_1": "numeric",
    "col_2": "categorical",
    "col_3": "categorical",
    "col_4": "excluded:hidden",
    "label_column": "income",
    "key_column": "id",
}


def post_file(client, content: bytes, filename: str, name: str = "people"):
    data = {"file": SimpleUploadedFile(filename, content), "name": name}
    return client.post(reverse("spaces:records-upload"), data)


def text(response) -> str:
    return html.unescape(response.content.decode())


def uploads_left(media: Path) -> list[Path]:
    return [p for p in media.glob("uploads/**/*") if p.is_file()]


def nothing_created(media: Path) -> bool:
    return (
        not EmbeddingSpace.objects.exists()
        and not EmbeddingImport.objects.exists()
        and not uploads_left(media)
    )


def choose(client, url: str, answer: dict, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return client.post(url, answer)
