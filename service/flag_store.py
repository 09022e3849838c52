"""Runtime flags: flags.yaml < environment < overrides in PostgreSQL (< kill switch).

- The file and the environment are read once, at start-up (`create_app`); a
  bad value stops start-up naming the key.
- Overrides live in `flag_overrides` (migration 004).  `set()` / `delete()`
  validate through the schema, write the override and an audit row in one
  transaction, and `NOTIFY flags_changed` (delivered at commit).
- Every replica LISTENs on a dedicated connection and reloads all overrides
  when notified; after a lost connection it reconnects with back-off and
  re-reads everything (a notification sent while it was away is not lost,
  only late).  A keep-alive query every few seconds notices a silently dead
  link.
- `flags()` is what the request path calls: an attribute read, no I/O.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import asyncpg
import msgspec

from service.db.listener import KEEPALIVE_S, ChangeListener, MirroredTable
from service.flags import (
    FlagError,
    Flags,
    apply_env_overrides,
    apply_overrides,
    flag_keys,
    get_value,
)

log = logging.getLogger(__name__)

CHANNEL = "flags_changed"
Source = Literal["file", "env", "override", "kill_switch"]


@dataclass(frozen=True)
class FlagChange:
    name: str
    old_value: Any
    new_value: Any


class FlagStore(MirroredTable):
    """The flags in force on this replica, and the LISTEN loop that keeps them current."""

    def __init__(
        self,
        file_flags: Flags,
        env: Mapping[str, Any],
        *,
        on_change: Callable[[Flags], None] | None = None,
        keepalive_s: float = KEEPALIVE_S,
    ) -> None:
        self.file_flags = file_flags
        self.env = dict(env)
        self.base = apply_env_overrides(file_flags, self.env)
        self.keys = frozenset(flag_keys(self.base))
        self.overrides: dict[str, Any] = {}
        self.rejected: dict[str, str] = {}
        """Stored overrides the current schema refuses (kept in the DB, not applied)."""
        self.current = self.base
        self.on_change = on_change
        self.last_sync: float | None = None
        """Wall time of the last full read of `flag_overrides`."""
        self.syncs = 0
        self.listener = ChangeListener(CHANNEL, self.load, name="flag", keepalive_s=keepalive_s)

    # -- the request path -----------------------------------------------------
    def flags(self) -> Flags:
        return self.current

    # -- validation -----------------------------------------------------------
    def validate(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Check each change against the schema; the FlagError names the field.

        Types are strict (``"2"`` is not a phase); returns the changes as the
        schema read them, which is what gets stored.
        """
        if not changes:
            raise FlagError("no flag given: send {\"name\": ..., \"value\": ...} or a map")
        for name in changes:
            if name not in self.keys:
                raise FlagError(f"unknown flag `{name}`")
        # All at once, over the overrides in force: the result must be a
        # consistent whole (e.g. default_top_k 20 needs max_top_k >= 20 too).
        flags = apply_overrides(self.base, {**self.overrides, **changes}, "override")
        return {name: get_value(flags, name) for name in changes}

    def _apply(self, stored: Mapping[str, Any]) -> None:
        accepted: dict[str, Any] = {}
        rejected: dict[str, str] = {}
        try:  # the usual case: the stored set is consistent as a whole
            flags = apply_overrides(self.base, stored, "stored overrides")
            accepted = dict(stored)
        except FlagError:
            # Keep what fits, one at a time, and report the rest.
            flags = self.base
            for name in sorted(stored):
                try:
                    flags = apply_overrides(flags, {name: stored[name]}, f"stored override `{name}`")
                except FlagError as err:
                    rejected[name] = str(err)
                    continue
                accepted[name] = stored[name]
        for name, reason in rejected.items():
            if self.rejected.get(name) != reason:
                log.error("ignoring stored flag override: %s", reason)
        changed = accepted != self.overrides
        self.overrides, self.rejected, self.current = accepted, rejected, flags
        self.last_sync = time.time()
        self.syncs += 1
        if changed:
            log.info("flag overrides in force: %s", json.dumps(accepted, sort_keys=True))
            if self.on_change is not None:
                self.on_change(flags)

    # -- database -------------------------------------------------------------
    @staticmethod
    async def _read(conn: Any) -> dict[str, Any]:
        rows = await conn.fetch("select name, value::text as value from flag_overrides")
        return {row["name"]: json.loads(row["value"]) for row in rows}

    async def load(self, conn: Any) -> None:
        """Re-read every override (start-up, notification, reconnect)."""
        self._apply(await self._read(conn))

    async def set(self, pool: asyncpg.Pool[Any], changes: Mapping[str, Any], actor: str) -> list[FlagChange]:
        """Validate, store with audit rows, NOTIFY — one transaction."""
        values = self.validate(changes)
        done: list[FlagChange] = []
        async with pool.acquire() as conn, conn.transaction():
            for name in sorted(values):
                new = json.dumps(values[name])
                old = await conn.fetchval(
                    "select value::text from flag_overrides where name = $1 for update", name
                )
                await conn.execute(
                    "insert into flag_overrides (name, value, updated_at, updated_by)"
                    " values ($1, $2::jsonb, now(), $3)"
                    " on conflict (name) do update set value = excluded.value,"
                    " updated_at = excluded.updated_at, updated_by = excluded.updated_by",
                    name, new, actor,
                )
                await _audit(conn, name, old, new, "set", actor)
                done.append(FlagChange(name, json.loads(old) if old else None, values[name]))
            stored = await self._read(conn)
            await conn.execute("select pg_notify($1, $2)", CHANNEL, json.dumps(sorted(values)))
        self._apply(stored)  # in force here at once; other replicas on the notification
        return done

    async def delete(self, pool: asyncpg.Pool[Any], name: str, actor: str) -> FlagChange | None:
        """Drop an override; None if there was none."""
        async with pool.acquire() as conn, conn.transaction():
            old = await conn.fetchval(
                "delete from flag_overrides where name = $1 returning value::text", name
            )
            if old is None:
                return None
            await _audit(conn, name, old, None, "delete", actor)
            stored = await self._read(conn)
            await conn.execute("select pg_notify($1, $2)", CHANNEL, json.dumps([name]))
        self._apply(stored)
        return FlagChange(name, json.loads(old), None)

    @staticmethod
    async def audit(pool: asyncpg.Pool[Any], limit: int = 20) -> list[dict[str, Any]]:
        rows = await pool.fetch(
            "select name, old_value::text as old, new_value::text as new, action, actor_address,"
            " at from flag_audit order by id desc limit $1", limit,
        )
        return [
            {"name": r["name"], "old_value": json.loads(r["old"]) if r["old"] else None,
             "new_value": json.loads(r["new"]) if r["new"] else None, "action": r["action"],
             "actor_address": r["actor_address"], "at": r["at"].isoformat()}
            for r in rows
        ]


    @property
    def listener_pid(self) -> int | None:
        """Server pid of the LISTEN connection (diagnostics and tests)."""
        return self.listener.server_pid

    # -- reporting --------------------------------------------------------------
    def sources(self) -> dict[str, Source]:
        out: dict[str, Source] = {}
        for name in sorted(self.keys):
            if name in self.overrides:
                out[name] = "override"
            elif name in self.env:
                out[name] = "env"
            else:
                out[name] = "file"
        return out

    def describe(self, ceiling: int | None) -> list[dict[str, Any]]:
        """Each effective value with its source; `ceiling` is the kill switch's."""
        values: dict[str, Any] = msgspec.to_builtins(self.current)
        entries: list[dict[str, Any]] = []
        for name, source in self.sources().items():
            value: Any = values
            for part in name.split("."):
                value = value[part]
            entry: dict[str, Any] = {"name": name, "value": value, "source": source}
            if ceiling is not None and name == "enabled" and ceiling == 0 and value:
                entry.update(value=False, source="kill_switch", configured=value,
                             configured_source=source)
            elif ceiling is not None and name == "phase" and 0 < ceiling < value:
                entry.update(value=ceiling, source="kill_switch", configured=value,
                             configured_source=source)
            entries.append(entry)
        return entries


async def _audit(conn: Any, name: str, old: str | None, new: str | None, action: str, actor: str) -> None:
    await conn.execute(
        "insert into flag_audit (name, old_value, new_value, action, actor_address)"
        " values ($1, $2::jsonb, $3::jsonb, $4, $5)",
        name, old, new, action, actor,
    )
