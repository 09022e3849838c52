"""Migration runner on a real PostgreSQL: up, down, up again, twice, concurrently."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from service.db.migrate import applied_versions, discover, migrate_down, migrate_up
from service.settings import PROJECT_ROOT

MIGRATIONS = PROJECT_ROOT / "migrations"
ALL = [m.version for m in discover(MIGRATIONS)]


async def _tables(conn: asyncpg.Connection[Any]) -> set[str]:
    rows = await conn.fetch("select tablename from pg_tables where schemaname = 'public'")
    return {r["tablename"] for r in rows}


async def test_up_down_up(db_url: str) -> None:
    conn = await asyncpg.connect(db_url)
    try:
        assert await migrate_up(conn, MIGRATIONS) == ALL
        assert {"docs_knowledge", "docs_knowledge_chunks"} <= await _tables(conn)
        assert await applied_versions(conn) == ALL

        assert await migrate_down(conn, MIGRATIONS, to=1) == sorted(
            (v for v in ALL if v > 1), reverse=True
        )
        tables = await _tables(conn)
        assert "docs_knowledge" in tables and "docs_knowledge_chunks" not in tables
        assert await applied_versions(conn) == [1]

        await migrate_down(conn, MIGRATIONS, to=0)
        assert await _tables(conn) == {"schema_migrations"}
        assert await applied_versions(conn) == []

        assert await migrate_up(conn, MIGRATIONS) == ALL
        assert await applied_versions(conn) == ALL
    finally:
        await conn.close()


async def test_up_twice_is_a_no_op(db_url: str) -> None:
    conn = await asyncpg.connect(db_url)
    try:
        await migrate_up(conn, MIGRATIONS)
        before = await conn.fetch("select * from schema_migrations order by version")
        assert await migrate_up(conn, MIGRATIONS) == []
        assert await conn.fetch("select * from schema_migrations order by version") == before
    finally:
        await conn.close()


async def test_concurrent_runners_apply_each_migration_once(db_url: str) -> None:
    conns = [await asyncpg.connect(db_url) for _ in range(3)]
    try:
        results = await asyncio.gather(*(migrate_up(c, MIGRATIONS) for c in conns))
        assert sorted(results, key=len) == [[], [], ALL]
        assert await applied_versions(conns[0]) == ALL
    finally:
        for c in conns:
            await c.close()


async def test_down_to_current_version_does_nothing(db_url: str) -> None:
    conn = await asyncpg.connect(db_url)
    try:
        await migrate_up(conn, MIGRATIONS)
        assert await migrate_down(conn, MIGRATIONS, to=ALL[-1]) == []
    finally:
        await conn.close()
