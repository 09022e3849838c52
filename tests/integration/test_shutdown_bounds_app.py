"""A real app (real PostgreSQL) whose shutdown hook never ends still shuts down: the hook is left
behind after its bound, the hooks after it run, and the pool is closed (service/lifespan.py)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from service import lifespan
from service.app import create_app
from service.state import get_state
from tests.conftest import app_settings, logged_messages, wait_until_ready

BOUND_S = 0.5


async def test_a_hook_that_never_ends_does_not_hold_the_shutdown(
    db_url: str, fixture_seeds: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lifespan, "SHUTDOWN_STEP_TIMEOUT_S", BOUND_S)
    app = create_app(app_settings(db_url, fixture_seeds))
    state = get_state(app.state)
    ran_after: list[str] = []

    async def stuck_forever() -> None:
        await asyncio.Event().wait()

    async def after_it() -> None:
        ran_after.append("after")

    with logged_messages("service.lifespan", logging.ERROR) as logged:
        async with AsyncTestClient(app=app, timeout=60) as client:
            await wait_until_ready(client, semantic=False)
            pool = state.pool
            assert pool is not None
            state.on_shutdown.insert(0, stuck_forever)  # first, before the service's own hooks
            state.on_shutdown.append(after_it)
    # Reached: the client's exit waited on the app's shutdown, which went on past the stuck hook.
    assert ran_after == ["after"]
    assert state.pool is None and pool.is_closing()
    assert any("stuck_forever did not finish within 0.5 s" in line for line in logged), logged
