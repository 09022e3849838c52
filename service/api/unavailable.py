"""Writes while the database is away: 503 with `Retry-After`, never a 500, never a silent loss.

A write (seed, reindex, flag change) that cannot reach the database is
refused as a whole: nothing is kept in this replica's memory only (the flag
store applies a change after its transaction commits, the seed reloads after
its transaction commits), and the client is told when to try again.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
from litestar.exceptions import HTTPException, ServiceUnavailableException

from service.db.errors import database_cause
from service.state import AppState

RETRY_AFTER_S = 5
"""About one restart of the embedded server, or a few probes of an external one."""


class DatabaseUnavailableError(ServiceUnavailableException):
    def __init__(self, detail: str) -> None:
        super().__init__(detail=detail, headers={"Retry-After": str(RETRY_AFTER_S)})


def require_pool(st: AppState, what: str) -> asyncpg.Pool[Any]:
    """The pool, or 503: the database is starting, restarting or away (as the
    supervisor last saw it, at most `WATCH_INTERVAL_S` ago)."""
    db = st.database
    away = db.not_ready_reason() if db is not None else None
    if db is not None and (db.cause or "").startswith("database timeout"):
        away = None  # slow, not gone: try the write; `database_write` answers 503 if it times out
    if st.pool is None or away is not None:
        raise DatabaseUnavailableError(_refused(what, away or "the database is not ready yet"))
    return st.pool


@contextlib.asynccontextmanager
async def database_write(what: str) -> AsyncIterator[None]:
    """Turn a lost/refused/timed-out database inside a write into a 503 naming the cause.

    Other errors (a bug, a constraint) stay what they are.
    """
    try:
        yield
    except HTTPException:
        raise
    except TimeoutError as err:
        raise DatabaseUnavailableError(_refused(what, "database timeout")) from err
    except Exception as err:
        cause = database_cause(err)
        if cause is None or not cause.startswith(("database unreachable", "database timeout")):
            raise
        raise DatabaseUnavailableError(_refused(what, cause)) from err


def _refused(what: str, cause: str) -> str:
    return f"{what} refused: {cause}; not applied, retry in {RETRY_AFTER_S} s"
