"""``Bad``: one bad request and the answer it must get; helpers the area modules share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.files.uploadedfile import SimpleUploadedFile

from ..conftest import World


def A(w: World) -> int:
    return w.study_a.pk


def B(w: World) -> int:
    return w.study_b.pk


@dataclass(frozen=True)
class Bad:
    endpoint: str  # a key of the authorization matrix
    what: str
    method: str
    url: Callable[[World], str]
    status: int
    message: str
    body: Callable[[World], object] | bytes | str | None = None
    content_type: str = "application/json"
    role: str = "ann_a"


def upload(name: str, content: bytes):
    return SimpleUploadedFile(name, content)


def raw(text: str) -> bytes:
    return text.encode()
