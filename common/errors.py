"""One application error type, mapped once for the API and once for the pages.

Services raise :class:`AppError` subclasses with a readable one-line message. The API turns
them into ``{"detail": message}`` with the class's status (:func:`api_exception_handler`, the
project's DRF ``EXCEPTION_HANDLER``); the pages into the matching error page
(:class:`AppErrorMiddleware`). The rule for 403 against 404 lives in ``annotation.access``:
someone who may not see a study at all gets :class:`NotFound` (the study stays hidden), a member
whose role does not allow the action gets :class:`NotAllowed`.

A write that loses a race to a unique constraint (two identical set-up POSTs at once: both
read "not there yet", both insert) is a :class:`Conflict` with the same message the read
check gives, never a 500: :func:`duplicate_as_conflict` around the insert. Its sibling for rows
that a concurrent request deletes (two deletes of one space, a space attached to a study while it
is deleted): :func:`locked_or_gone` reads the row locked until the commit, and a row gone
meanwhile is a :class:`NotFound` (or the error the caller names), never ``DoesNotExist`` or a
foreign key refused at the commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.http import HttpResponse
from django.template.loader import render_to_string
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class AppError(Exception):
    """Base class: a readable one-line message and the HTTP status it maps to."""

    status_code = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(AppError):
    status_code = 400


class NotAllowed(AppError):
    status_code = 403


class NotFound(AppError):
    status_code = 404


class Conflict(AppError):
    status_code = 409


class PayloadTooLarge(AppError):
    status_code = 413


class TooBusy(AppError):
    """Too much of one kind of work in flight: 429, to try again after ``retry_after`` seconds
    (the API's ``Retry-After`` header)."""

    status_code = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = int(retry_after)


def is_unique_violation(error: IntegrityError) -> bool:
    """A unique constraint or index refused the write (not a foreign key, not a NOT NULL)."""
    cause = error.__cause__
    if getattr(cause, "sqlstate", None) == "23505":  # PostgreSQL (psycopg)
        return True
    return "UNIQUE constraint failed" in str(error)  # SQLite


@contextmanager
def duplicate_as_conflict(message: str | Callable[[], str]) -> Iterator[None]:
    """Inserts in a savepoint; a unique violation becomes ``Conflict(message)`` (a callable
    message is asked after the savepoint rolled back, so it may query). Other integrity errors
    pass through."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError as error:
        if not is_unique_violation(error):
            raise
        raise Conflict(message() if callable(message) else message) from error


def locked_or_gone(queryset, message: str, *, error: type[AppError] = NotFound):
    """The first row of ``queryset`` locked for the rest of the transaction (``SELECT … FOR
    UPDATE``: a concurrent delete waits for the commit, or this waits for the delete's); none,
    because a request that won the race deleted it, raises ``error(message)``."""
    row = queryset.select_for_update().first()
    if row is None:
        raise error(message)
    return row


def api_exception_handler(exc, context):
    """DRF's handler, plus application errors and Django's ``ValidationError`` as 4xx."""
    if isinstance(exc, AppError):
        retry = getattr(exc, "retry_after", None)
        headers = {"Retry-After": str(retry)} if retry is not None else None
        return Response({"detail": exc.message}, status=exc.status_code, headers=headers)
    if isinstance(exc, DjangoValidationError):
        return Response({"detail": " ".join(exc.messages)}, status=400)
    return drf_exception_handler(exc, context)


class AppErrorMiddleware:
    """Pages: an :class:`AppError` raised by a view becomes the error page of its status."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        """The app's own error page with the error's message, also with DEBUG on (Django's
        debug pages are for bugs, not for a refusal the app meant)."""
        if not isinstance(exception, AppError):
            return None
        template = {403: "403.html", 404: "404.html"}.get(exception.status_code, "400.html")
        body = render_to_string(template, {"exception": exception.message}, request=request)
        response = HttpResponse(body, status=exception.status_code)
        if getattr(exception, "retry_after", None) is not None:
            response["Retry-After"] = str(exception.retry_after)
        return response
