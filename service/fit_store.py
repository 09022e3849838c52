"""The corpus's own decision fits in PostgreSQL (migration 016), the active one on every replica.

A fit learned from reviewed traffic (`evaluation/from_review.py`) is stored with its figures,
active or not; at most one row is active. Like the flag store: a change writes the rows and
an audit row and sends `NOTIFY decision_fits_changed` in one transaction; every replica
LISTENs on a dedicated connection and re-reads the active fit when notified (and after a
lost connection), then hands it to its `Decider` (`on_change`). The request path never
reads this table.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import asyncpg
import msgspec

from service.db.listener import KEEPALIVE_S, ChangeListener, MirroredTable
from service.decide.calibration import CalibrationError, CalibrationModel, parse_model

log = logging.getLogger(__name__)

CHANNEL = "decision_fits_changed"
_COLUMNS = "id, created_at, version, source, figures::text as figures, active, created_by, reason"

OnChange = Callable[[CalibrationModel | None, str | None], None]
"""(the active stored fit or None, why a stored active fit cannot be used or None)."""


class StoredFit(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    created_at: str
    version: str
    source: str
    figures: dict[str, Any]
    active: bool
    created_by: str
    reason: str


class UnknownFit(LookupError):
    """No stored fit has this id."""


class UnusableFit(ValueError):
    """The stored fit's model cannot decide here (other features or format, other pages)."""


def _fit(row: asyncpg.Record) -> StoredFit:
    return StoredFit(
        id=row["id"], created_at=row["created_at"].isoformat(), version=row["version"], source=row["source"],
        figures=json.loads(row["figures"]), active=row["active"], created_by=row["created_by"],
        reason=row["reason"],
    )


class FitStore(MirroredTable):
    """The active fit on this replica, and the LISTEN loop that keeps it current."""

    def __init__(self, *, on_change: OnChange | None = None, keepalive_s: float = KEEPALIVE_S) -> None:
        self.active: StoredFit | None = None
        self.model: CalibrationModel | None = None
        """The active fit's model, once it parsed (None: no active fit, or it did not parse)."""
        self.error: str | None = None
        self.on_change = on_change
        self.syncs = 0
        self.listener = ChangeListener(CHANNEL, self.load, name="decision-fit", keepalive_s=keepalive_s)

    # -- every replica ----------------------------------------------------------------
    async def load(self, conn: Any) -> None:
        """Re-read the active fit (start-up, notification, reconnect)."""
        row = await conn.fetchrow(
            f"select {_COLUMNS}, model::text as model from decision_fits where active"
        )
        self.syncs += 1
        active = None if row is None else _fit(row)
        if active == self.active:
            return
        model, error = None, None
        if row is not None:
            try:
                model = parse_model(row["model"], f"stored decision fit #{row['id']}")
            except CalibrationError as err:
                error = f"{err}; the fit file decides instead"
                log.error("active decision fit unusable: %s", error)
        self.active, self.model, self.error = active, model, error
        log.info("decision fit in force: %s", f"#{active.id} {active.version}" if active else "none stored")
        if self.on_change is not None:
            self.on_change(model, error)

    # -- changes ------------------------------------------------------------------------
    async def add(
        self, pool: asyncpg.Pool[Any], model: CalibrationModel, figures: dict[str, Any], *,
        actor: str, reason: str, activate: bool,
    ) -> StoredFit:
        """Store a fit (and make it the active one when `activate`), audited, in one transaction."""
        async with pool.acquire() as conn, conn.transaction():
            fit_id = await conn.fetchval(
                "insert into decision_fits (version, source, model, figures, created_by, reason)"
                " values ($1, 'review', $2::jsonb, $3::jsonb, $4, $5) returning id",
                model.version, msgspec.json.encode(model).decode(), json.dumps(figures), actor, reason,
            )
            await _audit(conn, fit_id, "fit", actor, reason)
            if activate:
                await self._activate(conn, fit_id, actor, reason)
            row = await conn.fetchrow(f"select {_COLUMNS} from decision_fits where id = $1", fit_id)
            assert row is not None
            await self.load(conn)
        return _fit(row)

    async def activate(
        self, pool: asyncpg.Pool[Any], fit_id: int, *, actor: str, reason: str, served_pages: str,
    ) -> StoredFit:
        """Make a stored fit the active one (restore an earlier fit); it must decide these pages."""
        async with pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                f"select {_COLUMNS}, model::text as model from decision_fits where id = $1 for update", fit_id
            )
            if row is None:
                raise UnknownFit(fit_id)
            try:
                model = parse_model(row["model"], f"stored decision fit #{fit_id}")
            except CalibrationError as err:
                raise UnusableFit(str(err)) from err
            if not model.fits(served_pages):
                raise UnusableFit(f"decision fit #{fit_id} ({model.version}) was fitted on other pages than "
                                  "the served ones; fit again from review")
            await self._activate(conn, fit_id, actor, reason)
            row = await conn.fetchrow(f"select {_COLUMNS} from decision_fits where id = $1", fit_id)
            assert row is not None
            await self.load(conn)
        return _fit(row)

    async def deactivate(self, pool: asyncpg.Pool[Any], *, actor: str, reason: str) -> StoredFit | None:
        """No stored fit decides any more (the fit file, else the portable fit); the one that was active."""
        async with pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                f"update decision_fits set active = false where active returning {_COLUMNS}"
            )
            if row is None:
                return None
            await _audit(conn, row["id"], "deactivate", actor, reason)
            await conn.execute("select pg_notify($1, $2)", CHANNEL, str(row["id"]))
            await self.load(conn)
        return _fit(row)

    @staticmethod
    async def _activate(conn: Any, fit_id: int, actor: str, reason: str) -> None:
        # The old one off first: the partial unique index is checked row by row.
        await conn.execute("update decision_fits set active = false where active and id <> $1", fit_id)
        await conn.execute("update decision_fits set active = true where id = $1", fit_id)
        await _audit(conn, fit_id, "activate", actor, reason)
        await conn.execute("select pg_notify($1, $2)", CHANNEL, str(fit_id))

    # -- reading ------------------------------------------------------------------------
    @staticmethod
    async def history(pool: asyncpg.Pool[Any], limit: int = 50) -> list[StoredFit]:
        rows = await pool.fetch(f"select {_COLUMNS} from decision_fits order by id desc limit $1", limit)
        return [_fit(r) for r in rows]

    @staticmethod
    async def audit(pool: asyncpg.Pool[Any], limit: int = 50) -> list[dict[str, Any]]:
        rows = await pool.fetch(
            "select fit_id, action, actor, reason, at from decision_fit_audit order by id desc limit $1", limit,
        )
        return [{"fit_id": r["fit_id"], "action": r["action"], "actor": r["actor"], "reason": r["reason"],
                 "at": r["at"].isoformat()} for r in rows]


async def _audit(conn: Any, fit_id: int, action: str, actor: str, reason: str) -> None:
    await conn.execute(
        "insert into decision_fit_audit (fit_id, action, actor, reason) values ($1, $2, $3, $4)",
        fit_id, action, actor, reason,
    )
