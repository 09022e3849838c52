"""Start-up and shutdown of the resources kept on `app.state`.

Start-up order: embedded PostgreSQL (unless DATABASE_URL) → connect, retrying
while the server is not up yet → check `vector` → migrate → pool → seed →
load the corpus → ready. Everything after the embedded server runs in a
background task, so the HTTP server answers `/health` and `/ready` (503 with
the reason) while the database is still coming up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from litestar import Litestar

from service.db.embedded import EmbeddedPostgres
from service.db.migrate import MigrationError, migrate_up
from service.db.pool import (
    DatabaseUnavailable,
    VectorExtensionMissing,
    connect_with_retry,
    create_pool,
    describe_error,
    ensure_vector_available,
)
from service.ingest.markdown import SeedError
from service.state import AppState, get_state

log = logging.getLogger(__name__)

POOL_CLOSE_TIMEOUT_S = 10.0


async def bootstrap(st: AppState, dsn: str) -> None:
    """Bring the database and corpus up; publish progress in `not_ready_reason`."""
    settings = st.settings

    def on_retry(attempt: int, err: BaseException) -> None:
        st.not_ready_reason = (
            f"database not reachable yet (attempt {attempt}): {describe_error(err)}"
        )

    try:
        st.not_ready_reason = "connecting to the database"
        conn = await connect_with_retry(
            dsn, timeout_total=settings.db_connect_timeout, on_retry=on_retry
        )
        try:
            await ensure_vector_available(conn)
            st.not_ready_reason = "applying migrations"
            await migrate_up(conn, settings.migrations_dir)
        finally:
            await conn.close()
        st.pool = await create_pool(dsn)
        for hook in st.on_pool_ready:
            await hook(dsn)
        if settings.seed_on_start:
            st.not_ready_reason = "seeding"
            try:
                await st.reseed()
            except (SeedError, FileNotFoundError) as err:
                # Keep serving what the database already holds (previous corpus).
                log.error("start-up seed failed; serving the stored corpus: %s", err)
        if st.corpus.version == 0:
            await st.reload_corpus()
        if not st.corpus.documents:
            st.not_ready_reason = "the corpus is empty" + (
                f" (last seed failed: {st.last_seed_error})" if st.last_seed_error else ""
            )
            return
        st.not_ready_reason = None
        log.info("ready: %d documents, %d chunks",
                 len(st.corpus.documents), len(st.corpus.chunks))
    except asyncio.CancelledError:
        raise
    except (DatabaseUnavailable, VectorExtensionMissing, MigrationError) as err:
        st.fail(str(err))
    except Exception as err:  # anything else is a bug or a broken database: stop
        log.exception("start-up failed")
        st.fail(f"start-up failed: {describe_error(err)}")


@contextlib.asynccontextmanager
async def lifespan(app: Litestar) -> AsyncIterator[None]:
    st = get_state(app.state)
    dsn = st.settings.database_url
    if dsn is None:
        st.embedded = EmbeddedPostgres(st.settings.data_dir, port=st.settings.pg_port)
        dsn = await asyncio.to_thread(st.embedded.start)
    task = asyncio.create_task(bootstrap(st, dsn), name="bootstrap")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        for hook in st.on_shutdown:
            try:
                await hook()
            except Exception:  # one failing hook must not keep the pool open
                log.exception("shutdown hook failed")
        if st.pool is not None:
            pool, st.pool = st.pool, None
            try:
                await asyncio.wait_for(pool.close(), POOL_CLOSE_TIMEOUT_S)
            except TimeoutError:
                pool.terminate()
        if st.embedded is not None:
            await asyncio.to_thread(st.embedded.stop)
