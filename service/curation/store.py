"""Curations in PostgreSQL (migration 011), in memory on every replica.

Like the flag store: a change writes the row and an audit row and sends
`NOTIFY curations_changed` in one transaction; every replica LISTENs on a
dedicated connection and re-reads the table when notified, and after a lost
connection reconnects with back-off and re-reads everything. The request path
reads `active` (an attribute, no I/O).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import asyncpg
import msgspec

from service.curation.rules import Action, Curation, Match
from service.db.listener import KEEPALIVE_S, ChangeListener, MirroredTable

log = logging.getLogger(__name__)

CHANNEL = "curations_changed"
_COLUMNS = "id, match, phrase, query, action, doc_slug, header_path, note, created_by, created_at"


class DuplicateCuration(ValueError):
    """The same match, phrase, action and page is already curated."""


def _curation(row: asyncpg.Record) -> Curation:
    data = dict(row)
    data["created_at"] = data["created_at"].isoformat()
    return msgspec.convert(data, Curation)


class CurationStore(MirroredTable):
    def __init__(self, *, keepalive_s: float = KEEPALIVE_S) -> None:
        self.active: tuple[Curation, ...] = ()
        self.syncs = 0
        self.listener = ChangeListener(CHANNEL, self.load, name="curation", keepalive_s=keepalive_s)

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

