"""The test databases can be dropped: before pytest-django drops them, ``tests/conftest.py``
closes every connection the process still holds, also one another thread opened (a live
server's request thread, a context the browser driver ran code in), which Django's own teardown
does not see and which made PostgreSQL refuse the drop."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from .conftest import close_every_connection


@pytest.mark.django_db(transaction=True)
def test_a_connection_another_thread_left_open_is_closed_before_the_drop():
    kept = []

    def query() -> None:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
        kept.append(connections["default"])  # the thread ends, its connection stays open

    worker = threading.Thread(target=query)
    worker.start()
    worker.join()
    (other,) = kept
    assert other is not connections["default"]
    assert other.connection is not None
    assert close_every_connection() >= 1
    assert other.connection is None
    assert connections["default"].connection is None
    with connections["default"].cursor() as cursor:  # this thread's reconnects as usual
        cursor.execute("SELECT 1")


def test_a_dead_weak_proxy_among_the_objects_does_not_stop_it():
    import gc
    import weakref

    class Gone:
        pass

    thing = Gone()
    proxies = [weakref.proxy(thing)]  # a list is tracked by gc; the proxy in it outlives thing
    del thing
    gc.collect()
    assert close_every_connection() >= 0
    assert len(proxies) == 1
