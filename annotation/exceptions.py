"""Errors the annotation services raise; the API and the pages map them to 4xx answers."""

from __future__ import annotations


class AnnotationError(Exception):
    """Base class: a readable one-line message and the HTTP status it maps to."""

    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(AnnotationError):
    status_code = 400


class NotAllowed(AnnotationError):
    status_code = 403


class NotFound(AnnotationError):
    status_code = 404


class Conflict(AnnotationError):
    status_code = 409
