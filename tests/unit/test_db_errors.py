"""Database failures in words a user reads in `fallback_path` and `/ready`."""

from __future__ import annotations

import errno

import asyncpg
import pytest

from service.db.errors import DatabaseTimeout, DatabaseUnreachable, database_cause


@pytest.mark.parametrize(("error", "cause"), [
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), "database unreachable: connection refused"),
    (FileNotFoundError(errno.ENOENT, "No such file"), "database unreachable: no server socket"),
    (ConnectionResetError(errno.ECONNRESET, "reset"), "database unreachable: connection reset"),
    (DatabaseTimeout(2000), "database timeout after 2000 ms"),
    (DatabaseUnreachable("no connection pool"), "database unreachable: no connection pool"),
    (asyncpg.CannotConnectNowError("the database system is starting up"),
     "database unreachable: the database system is starting up"),
    (asyncpg.AdminShutdownError("terminating connection due to administrator command"),
     "database unreachable: server shut down"),
    (asyncpg.ConnectionDoesNotExistError("connection was closed"), "database unreachable: connection lost"),
    (asyncpg.InterfaceError("pool is closed"), "database unreachable: connection closed"),
    (asyncpg.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
     "database unreachable: connection broken"),
    (asyncpg.QueryCanceledError("canceling statement"), "database error: QueryCanceledError (57014)"),
])
def test_database_failures_are_named(error: BaseException, cause: str) -> None:
    assert database_cause(error) == cause


@pytest.mark.parametrize("error", [ValueError("bug"), LookupError("no embeddings indexed yet"),
                                   TimeoutError()])
def test_other_failures_are_not_blamed_on_the_database(error: BaseException) -> None:
    assert database_cause(error) is None
