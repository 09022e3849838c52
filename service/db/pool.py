"""asyncpg connections and pool: retry until the server is up, pgvector codecs.

Errors are classified by asyncpg's SQLSTATE exception classes, never by text.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import asyncpg
from pgvector.asyncpg import register_vector

from service.flags import SemanticFlags

log = logging.getLogger(__name__)

# Worth retrying: the server is starting, restarting or briefly overloaded.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,  # refused / no such socket yet / DNS
    TimeoutError,
    asyncpg.CannotConnectNowError,  # 57P03: "the database system is starting up"
    asyncpg.TooManyConnectionsError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
)
BACKOFF_START_S = 0.2
BACKOFF_MAX_S = 5.0


class DatabaseUnavailable(RuntimeError):
    """The database stayed unreachable for the whole retry budget."""


class VectorExtensionMissing(RuntimeError):
    """The server cannot provide the pgvector extension."""


async def connect_with_retry(
    dsn: str,
    *,
    timeout_total: float,
    on_retry: Callable[[int, BaseException], None] | None = None,
) -> asyncpg.Connection[Any]:
    """Connect, retrying transient failures with capped exponential backoff.

    `timeout_total` bounds the whole wait; `on_retry(attempt, error)` lets the
    caller publish why it is not ready yet.
    """
    deadline = time.monotonic() + timeout_total
    delay = BACKOFF_START_S
    attempt = 0
    while True:
        attempt += 1
        try:
            return await asyncpg.connect(dsn, timeout=10)
        except TRANSIENT_ERRORS as err:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DatabaseUnavailable(
                    f"database unreachable after {attempt} attempts: {describe_error(err)}"
                ) from err
            if on_retry is not None:
                on_retry(attempt, err)
            log.info("database not reachable (attempt %d): %s", attempt, describe_error(err))
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, BACKOFF_MAX_S)


def describe_error(err: BaseException) -> str:
    """Short, credential-free description of a connection error."""
    text = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


async def ensure_vector_available(conn: asyncpg.Connection[Any]) -> None:
    """Fail early with a clear message if `create extension vector` cannot work."""
    available = await conn.fetchval(
        "select exists(select 1 from pg_available_extensions where name = 'vector')"
    )
    if not available:
        raise VectorExtensionMissing(
            "the PostgreSQL server does not offer the 'vector' extension (pgvector); "
            "install pgvector on it or unset DATABASE_URL to use the embedded server"
        )


async def _init_connection(conn: asyncpg.Connection[Any]) -> None:
    # Register the codec only once migrations created the type: a pool made
    # before `create extension vector` must still work (tests, migrate CLI).
    if await conn.fetchval("select to_regtype('vector') is not null"):
        await register_vector(conn)


# HNSW search settings every pooled connection starts with, so a vector query
# is one round trip; a query wanting other values sets them in a transaction.
# ef_search is the flag's default (`semantic.ef_search`, which must cover the
# candidate pool or HNSW returns fewer rows); iterative scans keep walking the
# graph until the model/category filters pass.
HNSW_SESSION_SETTINGS = {"hnsw.ef_search": str(SemanticFlags().ef_search), "hnsw.iterative_scan": "strict_order"}


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool[Any]:
    """A pool whose connections know the pgvector types and the HNSW defaults."""
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        command_timeout=30,
        server_settings=HNSW_SESSION_SETTINGS,
    )
    return pool
