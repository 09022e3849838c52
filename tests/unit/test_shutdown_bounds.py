"""Shutdown ends even when a hook never does: each step has a bound and is named in the log."""

from __future__ import annotations

import asyncio
import logging

import pytest

from service import lifespan

BOUND_S = 0.2


@pytest.fixture(autouse=True)
def short_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifespan, "SHUTDOWN_STEP_TIMEOUT_S", BOUND_S)


async def never_ends() -> None:
    await asyncio.Event().wait()


RELEASED = asyncio.Event()


async def ignores_its_cancellation() -> None:
    while not RELEASED.is_set():  # swallows every cancel until the test lets it go
        try:
            await RELEASED.wait()
        except asyncio.CancelledError:
            continue


async def fails() -> None:
    raise RuntimeError("flush refused")


async def test_a_stuck_hook_is_left_behind_and_named(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    async def later() -> None:
        ran.append("later")

    caplog.set_level(logging.ERROR, logger="service.lifespan")
    try:
        for hook in (never_ends, ignores_its_cancellation, fails, later):
            await lifespan._bounded_shutdown_step(hook)
    finally:
        RELEASED.set()

    assert ran == ["later"]  # reached: the steps after a stuck or failing one still run
    logged = caplog.text
    assert "never_ends did not finish" in logged
    assert "ignores_its_cancellation did not finish" in logged
    assert "fails failed" in logged and "flush refused" in logged
