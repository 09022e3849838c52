"""Where a CLI command's database comes from: DATABASE_URL, or the embedded server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from service.settings import Settings

T = TypeVar("T")


def run_with_database(settings: Settings, work: Callable[[str], Awaitable[T]]) -> T:
    """Run `work(dsn)` against DATABASE_URL, or an embedded server started for it.

    The embedded server is stopped however `work` ends (the CLI turns SIGTERM
    into SystemExit, so the `finally` runs then too).
    """
    from service.db.embedded import EmbeddedPostgres

    embedded = None
    dsn = settings.database_url
    try:
        if dsn is None:
            embedded = EmbeddedPostgres(settings.data_dir, port=settings.pg_port)
            dsn = embedded.start()
        return asyncio.run(work(dsn))  # type: ignore[arg-type]
    finally:
        if embedded is not None:
            embedded.stop()
