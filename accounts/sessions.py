"""Browser sessions that outlive the cache: Django's ``cached_db`` engine, falling back to the
database whenever the cache does not answer.

``django.contrib.sessions.backends.cached_db`` reads a session from the cache first and writes
through to the database — but it lets a cache error escape from ``load`` (its ``set`` after a
database read), ``exists`` (every new session key) and ``delete`` (logout, the key cycled at
login): with Redis unreachable every page, every session-authenticated API call and the login
form answered 500 (found by an attack on the production configuration, issue 26). Here each
cache call is guarded: a down cache costs one session query per request, never a request. And
a session write that loses the database connection is a database error (500, retried), not
Django's 400 "session deleted" (the fault run's ``terminate-db`` found it on a login).

The database stays the truth; the cache holds a copy for at most ``SESSION_CACHE_SECONDS``
(not the session's whole age), so a logout or a changed session written while the cache did
not answer is missed by a cache that comes back with old entries (a network split rather than
a restart) for at most that long. A password change needs no such bound: the session's
password hash is checked against the user read from the database.

``SESSION_ENGINE = "accounts.sessions"``; the Redis client's socket timeouts
(``REDIS_TIMEOUT_MS``) keep an unreachable Redis to milliseconds per call.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.sessions.backends.base import UpdateError
from django.contrib.sessions.backends.cached_db import SessionStore as CachedDbStore
from django.contrib.sessions.backends.db import SessionStore as DbStore
from django.db import InterfaceError, OperationalError

logger = logging.getLogger(__name__)


class SessionStore(CachedDbStore):
    """``cached_db`` with every cache call guarded (the database decides when it fails)."""

    def _cache_seconds(self, age: int) -> int:
        return max(0, min(int(age), int(settings.SESSION_CACHE_SECONDS)))

    def _cache_set(self, data, age: int) -> None:
        try:
            self._cache.set(self.cache_key, data, self._cache_seconds(age))
        except Exception:  # noqa: BLE001 - a down cache: the database has the session
            logger.warning("session cache unreachable: session kept in the database only")

    def load(self):
        try:
            data = self._cache.get(self.cache_key)
        except Exception:  # noqa: BLE001 - down cache (or an invalid key): read the database
            data = None
        if data is None:
            found = self._get_session_from_db()
            if not found:
                return {}
            data = self.decode(found.session_data)
            self._cache_set(data, self.get_expiry_age(expiry=found.expire_date))
        return data

    def exists(self, session_key) -> bool:
        if not session_key:
            return False
        try:
            if (self.cache_key_prefix + session_key) in self._cache:
                return True
        except Exception:  # noqa: BLE001 - the database says whether the key is taken
            pass
        return DbStore.exists(self, session_key)

    def save(self, must_create: bool = False) -> None:
        try:
            DbStore.save(self, must_create)
        except UpdateError as error:
            # Django turns *any* database error of an update into UpdateError, which its
            # middleware answers 400 ("the session was deleted"). A lost connection (a
            # restarted database, a terminated backend) is the server's failure: a 500, which
            # clients retry; a session really gone meanwhile is still UpdateError.
            if isinstance(error.__context__, (OperationalError, InterfaceError)):
                raise error.__context__ from None
            raise
        self._cache_set(self._session, self.get_expiry_age())

    def delete(self, session_key=None) -> None:
        DbStore.delete(self, session_key)
        if session_key is None:
            if self.session_key is None:
                return
            session_key = self.session_key
        try:
            self._cache.delete(self.cache_key_prefix + session_key)
        except Exception:  # noqa: BLE001 - the entry expires within SESSION_CACHE_SECONDS
            logger.warning(
                "session cache unreachable: a deleted session may stay cached up to %s s",
                settings.SESSION_CACHE_SECONDS,
            )
