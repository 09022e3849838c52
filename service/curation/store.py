"""Curations in PostgreSQL (migration 011), in memory on every replica.

Like the flag store: a change writes the row and an audit row and sends
`NOTIFY curations_changed` in one transaction; every replica LISTENs on a
dedicated connection and re-reads the table when notified, and after a lost
connection reconnects with back-off and re-reads everything. The request path
reads `active` (an attribute, no I/O).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import asyncpg
import msgspec

from service.curation.rules import Action, Curation, Match

log = logging.getLogger(__name__)

CHANNEL = "curations_changed"
KEEPALIVE_S = 5.0
BACKOFF_START_S = 0.1
BACKOFF_MAX_S = 5.0
STOP_TIMEOUT_S = 10.0
_COLUMNS = "id, match, phrase, query, action, doc_slug, header_path, note, created_by, created_at"


class DuplicateCuration(ValueError):
    """The same match, phrase, action and page is already curated."""


def _curation(row: asyncpg.Record) -> Curation:
    data = dict(row)
    data["created_at"] = data["created_at"].isoformat()
    return msgspec.convert(data, Curation)


class CurationStore:
    def __init__(self, *, keepalive_s: float = KEEPALIVE_S) -> None:
        self.active: tuple[Curation, ...] = ()
        self.keepalive_s = keepalive_s
        self.listener_connected = False
        self.syncs = 0
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._dirty = False

    # -- database -------------------------------------------------------------
    async def load(self, conn: Any) -> None:
        rows = await conn.fetch(f"select {_COLUMNS} from curations order by id")
        self.active = tuple(_curation(r) for r in rows)
        self.syncs += 1

    async def create(
        self, pool: asyncpg.Pool[Any], *, match: Match, phrase: str, query: str, action: Action,
        doc_slug: str, header_path: str | None, note: str | None, actor: str,
    ) -> Curation:
        async with pool.acquire() as conn, conn.transaction():
            try:
                row = await conn.fetchrow(
                    "insert into curations (match, phrase, query, action, doc_slug, header_path, note, created_by)"
                    f" values ($1, $2, $3, $4, $5, $6, $7, $8) returning {_COLUMNS}",
                    match, phrase, query, action, doc_slug, header_path, note, actor,
                )
            except asyncpg.UniqueViolationError as err:
                raise DuplicateCuration(f"already curated: {action} {doc_slug} for {match} '{phrase}'") from err
            assert row is not None
            made = _curation(row)
            await self._audit(conn, made, "create", actor)
            await self.load(conn)
            await conn.execute("select pg_notify($1, $2)", CHANNEL, str(made.id))
        return made

    async def delete(self, pool: asyncpg.Pool[Any], curation_id: int, actor: str) -> Curation | None:
        async with pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(f"delete from curations where id = $1 returning {_COLUMNS}", curation_id)
            if row is None:
                return None
            gone = _curation(row)
            await self._audit(conn, gone, "delete", actor)
            await self.load(conn)
            await conn.execute("select pg_notify($1, $2)", CHANNEL, str(curation_id))
        return gone

    @staticmethod
    async def _audit(conn: Any, cur: Curation, action: str, actor: str) -> None:
        await conn.execute(
            "insert into curation_audit (curation_id, action, curation, actor) values ($1, $2, $3::jsonb, $4)",
            cur.id, action, json.dumps(msgspec.to_builtins(cur)), actor,
        )

    @staticmethod
    async def audit(pool: asyncpg.Pool[Any], limit: int = 50) -> list[dict[str, Any]]:
        rows = await pool.fetch(
            "select curation_id, action, curation::text as curation, actor, at from curation_audit"
            " order by id desc limit $1", limit,
        )
        return [{"curation_id": r["curation_id"], "action": r["action"], "curation": json.loads(r["curation"]),
                 "actor": r["actor"], "at": r["at"].isoformat()} for r in rows]

    # -- LISTEN / NOTIFY --------------------------------------------------------
    async def start(self, dsn: str) -> None:
        try:
            conn = await asyncpg.connect(dsn, timeout=10)
            try:
                await self.load(conn)
            finally:
                await conn.close()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            log.warning("could not load curations at start-up: %s", err)
        if self._task is None:
            self._task = asyncio.create_task(self._listen_forever(dsn), name="curation-listener")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT_S)
            if not done:
                log.error("curation listener did not stop within %.0f s", STOP_TIMEOUT_S)

    def _on_notify(self, *_args: Any) -> None:
        self._dirty = True
        self._wake.set()

    def _on_lost(self, _conn: Any) -> None:
        self._wake.set()

    async def _listen_forever(self, dsn: str) -> None:
        delay = BACKOFF_START_S
        while True:
            conn: Any = None
            try:
                conn = await asyncpg.connect(dsn, timeout=10)
                conn.add_termination_listener(self._on_lost)
                await conn.add_listener(CHANNEL, self._on_notify)
                self._dirty = False
                await self.load(conn)  # resynchronise: anything changed while away
                self.listener_connected = True
                delay = BACKOFF_START_S
                await self._serve(conn)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # lost or refused: reconnect with back-off
                log.debug("curation listener: %s", err)
            finally:
                self.listener_connected = False
                if conn is not None:
                    conn.terminate()
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)

    async def _serve(self, conn: Any) -> None:
        while True:
            # asyncio.timeout, not wait_for (see flag_store: a cancel racing a NOTIFY).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.keepalive_s):
                    await self._wake.wait()
            self._wake.clear()
            if conn.is_closed():
                raise ConnectionError("LISTEN connection closed")
            if self._dirty:
                self._dirty = False
                await asyncio.wait_for(self.load(conn), self.keepalive_s)
            else:
                await conn.fetchval("select 1", timeout=self.keepalive_s)
