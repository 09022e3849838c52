"""A small migration runner: `migrations/NNN_name.up.sql` / `.down.sql`.

- Applied versions are recorded in `schema_migrations`.
- Each migration runs in its own transaction together with its bookkeeping
  row, so a failure leaves the previous version fully in place.
- A session advisory lock serialises concurrent runners (two replicas
  starting at once): the second waits, then finds nothing left to do.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

log = logging.getLogger(__name__)

# Arbitrary but fixed: identifies "schema migration" among advisory locks.
MIGRATION_LOCK_KEY = 0x5EED_0001
_FILE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.(up|down)\.sql$")

_BOOKKEEPING = """
create table if not exists schema_migrations (
    version    integer primary key,
    name       text not null,
    checksum   text not null,
    applied_at timestamptz not null default now()
)
"""


class MigrationError(RuntimeError):
    """The migrations directory or a requested step is invalid."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    up_sql: str
    down_sql: str | None

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.up_sql.encode()).hexdigest()


def discover(migrations_dir: Path) -> list[Migration]:
    """All migrations in version order; rejects gaps in naming and duplicates."""
    ups: dict[int, tuple[str, str]] = {}
    downs: dict[int, str] = {}
    if not migrations_dir.is_dir():
        raise MigrationError(f"migrations directory {migrations_dir} does not exist")
    for path in sorted(migrations_dir.iterdir()):
        if path.suffix != ".sql":
            continue
        match = _FILE.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: expected NNN_name.up.sql or NNN_name.down.sql")
        version, name, direction = int(match[1]), match[2], match[3]
        target = ups if direction == "up" else downs
        if version in target:
            raise MigrationError(f"{path.name}: version {version:03d} is defined twice")
        if direction == "up":
            ups[version] = (name, path.read_text(encoding="utf-8"))
        else:
            downs[version] = path.read_text(encoding="utf-8")
    orphans = set(downs) - set(ups)
    if orphans:
        raise MigrationError(f"down migration without up: {sorted(orphans)}")
    return [
        Migration(version=v, name=ups[v][0], up_sql=ups[v][1], down_sql=downs.get(v))
        for v in sorted(ups)
    ]


def latest_version(migrations_dir: Path) -> int:
    migrations = discover(migrations_dir)
    return migrations[-1].version if migrations else 0


async def applied_versions(conn: asyncpg.Connection[Any]) -> list[int]:
    exists = await conn.fetchval("select to_regclass('schema_migrations') is not null")
    if not exists:
        return []
    rows = await conn.fetch("select version from schema_migrations order by version")
    return [int(r["version"]) for r in rows]


async def current_version(conn: asyncpg.Connection[Any]) -> int:
    versions = await applied_versions(conn)
    return versions[-1] if versions else 0


async def migrate_up(conn: asyncpg.Connection[Any], migrations_dir: Path) -> list[int]:
    """Apply every pending migration; return the versions applied now."""
    migrations = discover(migrations_dir)
    applied_now: list[int] = []
    await conn.execute("select pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
    try:
        await conn.execute(_BOOKKEEPING)
        done = {
            int(r["version"]): str(r["checksum"])
            for r in await conn.fetch("select version, checksum from schema_migrations")
        }
        for m in migrations:
            if m.version in done:
                if done[m.version] != m.checksum:
                    log.warning("migration %03d_%s changed after it was applied", m.version, m.name)
                continue
            async with conn.transaction():
                await conn.execute(m.up_sql)
                await conn.execute(
                    "insert into schema_migrations (version, name, checksum) values ($1, $2, $3)",
                    m.version, m.name, m.checksum,
                )
            log.info("applied migration %03d_%s", m.version, m.name)
            applied_now.append(m.version)
    finally:
        await conn.execute("select pg_advisory_unlock($1)", MIGRATION_LOCK_KEY)
    return applied_now


async def migrate_down(conn: asyncpg.Connection[Any], migrations_dir: Path, to: int) -> list[int]:
    """Revert applied migrations newer than `to` (newest first); return them."""
    if to < 0:
        raise MigrationError("--to must be >= 0")
    by_version = {m.version: m for m in discover(migrations_dir)}
    reverted: list[int] = []
    await conn.execute("select pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
    try:
        for version in reversed(await applied_versions(conn)):
            if version <= to:
                break
            m = by_version.get(version)
            if m is None or m.down_sql is None:
                raise MigrationError(f"migration {version:03d} has no .down.sql to revert it")
            async with conn.transaction():
                await conn.execute(m.down_sql)
                await conn.execute("delete from schema_migrations where version = $1", version)
            log.info("reverted migration %03d_%s", m.version, m.name)
            reverted.append(version)
    finally:
        await conn.execute("select pg_advisory_unlock($1)", MIGRATION_LOCK_KEY)
    return reverted
