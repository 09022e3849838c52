"""What a database failure means to a user, in words: `database unreachable: connection
refused`, `database timeout after 2000 ms`.

The pipeline puts these in `fallback_path`, the kill switch counts them as
database errors (a trip they cause probes again as soon as the database
answers), the supervisor shows them in `/ready`. Classified by exception
class (asyncpg's SQLSTATE classes, the OS errors), never by message text.
"""

from __future__ import annotations

import errno

import asyncpg


class DatabaseTimeout(TimeoutError):
    """A database call took longer than `timeouts.db_ms`."""

    def __init__(self, limit_ms: int) -> None:
        super().__init__(f"database timeout after {limit_ms} ms")
        self.limit_ms = limit_ms


class DatabaseUnreachable(ConnectionError):
    """No connection to use: the pool is closed while the database restarts or is away."""


_OS_CAUSES = {
    errno.ECONNREFUSED: "connection refused",
    errno.ENOENT: "no server socket",
    errno.ECONNRESET: "connection reset",
    errno.EPIPE: "connection lost",
    errno.ETIMEDOUT: "connection timed out",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
}


# When the error carries no errno (raised by a library rather than the OS).
_CONNECTION_CAUSES: tuple[tuple[type[OSError], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    (ConnectionResetError, "connection reset"),
    (ConnectionAbortedError, "connection aborted"),
    (BrokenPipeError, "connection lost"),
)


def database_cause(err: BaseException) -> str | None:
    """`database unreachable: ...` / `database timeout ...` / `database error: ...`,
    or None when `err` is not a database failure (a bug, a missing model)."""
    if isinstance(err, DatabaseTimeout):
        return str(err)
    if isinstance(err, DatabaseUnreachable):
        return f"database unreachable: {err}"
    if isinstance(err, asyncpg.CannotConnectNowError):
        return "database unreachable: the database system is starting up"
    if isinstance(err, asyncpg.TooManyConnectionsError):
        return "database unreachable: too many connections"
    if isinstance(err, (asyncpg.AdminShutdownError, asyncpg.CrashShutdownError)):
        return "database unreachable: server shut down"
    if isinstance(err, asyncpg.ConnectionDoesNotExistError):
        return "database unreachable: connection lost"
    if isinstance(err, asyncpg.InterfaceError):  # closed pool/connection on our side
        return "database unreachable: connection closed"
    if isinstance(err, asyncpg.InternalClientError):  # a connection cut mid-operation
        return "database unreachable: connection broken"
    if isinstance(err, asyncpg.PostgresError):
        return f"database error: {type(err).__name__} ({err.sqlstate})"
    if isinstance(err, OSError) and not isinstance(err, TimeoutError):
        cause = _OS_CAUSES.get(err.errno or 0) or next(
            (text for cls, text in _CONNECTION_CAUSES if isinstance(err, cls)), None)
        if cause is None:
            cause = (err.strerror or str(err) or type(err).__name__).lower()
        return f"database unreachable: {cause}"
    return None
