"""Start-up and shutdown of the resources kept on `app.state`.

Start-up order: embedded PostgreSQL (unless DATABASE_URL) → connect, retrying
while the server is not up yet → check `vector` → migrate → pool → seed →
load the corpus → ready → supervise. All of it runs in a background task, so
the HTTP server answers `/health` and `/ready` (503 with the reason) while the
database is still coming up, and an embedded data directory that cannot start
is retried and reported instead of stopping the service. Once ready,
`DatabaseSupervisor.watch` restarts a dead embedded server (or notices an
external one coming back), re-opens the pool, re-subscribes the flag listener
and tells the kill switch the database answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

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
from service.db.supervisor import DatabaseSupervisor
from service.ingest.markdown import SeedError
from service.operations import OPS_KEY, Operations
from service.state import AppState, get_state

log = logging.getLogger(__name__)

POOL_CLOSE_TIMEOUT_S = 10.0
# Each shutdown step gets a bound: a step that never ends must not keep the process (or a
# test client's exit) waiting for ever; the one that overran is named in the log.
SHUTDOWN_STEP_TIMEOUT_S = 15.0
# The supervisor's probe reads the table phase 3 needs, so a lock on it or a
# server too slow to answer within timeouts.db_ms counts as "not answering".
PROBE_SQL = "select 1 from chunk_embeddings limit 1"


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


def build_supervisor(st: AppState, ops: Operations | None) -> DatabaseSupervisor:
    """The database's supervisor, hooked to the pool, the flag listener, the kill switch
    and the restart counter in /metrics."""
    settings = st.settings
    if settings.database_url is None:
        st.embedded = EmbeddedPostgres(settings.data_dir, port=settings.pg_port)
    on_restart = None
    if ops is not None:
        restarts = ops.telemetry.meter_provider.get_meter("service.db").create_counter(
            "database_restarts", description="Embedded PostgreSQL restarts after an unexpected exit")
        restarts.add(0)  # exported as 0 before the first restart

        def on_restart() -> None:
            restarts.add(1)

    supervisor = DatabaseSupervisor(
        embedded=st.embedded, dsn=settings.database_url, probe_sql=PROBE_SQL,
        timeout_ms=lambda: int(st.flags.timeouts.db_ms), on_restart=on_restart,
    )

    def pool_changed(pool: object) -> None:
        st.pool = pool  # type: ignore[assignment]

    supervisor.pool_changed = pool_changed
    if ops is not None:
        store, kill_switch = ops.store, ops.kill_switch

        async def resubscribe() -> None:
            store.resubscribe()  # the listener reconnects and re-reads every override now

        supervisor.on_up.append(resubscribe)
        supervisor.on_answer.append(kill_switch.database_answered)
    st.database = supervisor
    return supervisor


async def supervise(st: AppState, supervisor: DatabaseSupervisor) -> None:
    """Start the database (retrying), bootstrap, then watch it until shutdown."""
    st.not_ready_reason = "starting the database"
    dsn = await supervisor.start_server()
    await bootstrap(st, dsn)
    if st.fatal_error is not None or st.pool is None:
        return
    supervisor.attach_pool(st.pool)
    await supervisor.watch()


@contextlib.asynccontextmanager
async def lifespan(app: Litestar) -> AsyncIterator[None]:
    st = get_state(app.state)
    ops = app.state.get(OPS_KEY)
    supervisor = build_supervisor(st, ops)
    task = asyncio.create_task(supervise(st, supervisor), name="database-supervisor")
    try:
        yield
    finally:
        task.cancel()
        await _finished_within(task, SHUTDOWN_STEP_TIMEOUT_S, "the database supervisor")
        await supervisor.wait_idle()  # a pg_ctl start/restart in a thread must end first
        for hook in st.on_shutdown:
            await _bounded_shutdown_step(hook)
        if st.pool is not None:
            pool, st.pool = st.pool, None
            closing = asyncio.ensure_future(pool.close())
            if not await _finished_within(closing, POOL_CLOSE_TIMEOUT_S, "closing the pool"):
                closing.cancel()  # a connection still checked out: close it by force
                pool.terminate()
        if st.embedded is not None:
            await asyncio.to_thread(st.embedded.stop)


async def _bounded_shutdown_step(hook: Callable[[], Awaitable[None]]) -> None:
    """One shutdown hook, within its bound; a failing or stuck hook must not keep the pool open."""
    step = asyncio.ensure_future(hook())
    if not await _finished_within(step, SHUTDOWN_STEP_TIMEOUT_S, getattr(hook, "__qualname__", repr(hook))):
        step.cancel()


async def _finished_within(step: asyncio.Future[None], bound_s: float, what: str) -> bool:
    """Wait for one shutdown step up to `bound_s`, logging an overrun or a failure by `what`;
    True when it ended. `asyncio.wait`, not `wait_for`: a step that swallows its cancellation
    is left behind, not waited on."""
    done, _ = await asyncio.wait({step}, timeout=bound_s)
    if not done:
        log.error("shutdown: %s did not finish within %g s; going on", what, bound_s)
        return False
    if not step.cancelled() and (err := step.exception()) is not None:
        log.error("shutdown: %s failed", what, exc_info=err)
    return True
