"""`/ready` reports the decision fit only where the policy in force uses it (issue 33 item 5),
says in words which fit decides, and shows an error only when something failed (issue 42 item 4).

On a corpus the shipped fit was not made on (the three fixture pages), `calibrated` is decided
by the portable fit: the expected state of a new corpus, said as a note (the corpus's own fit
was made on other pages; run fit-decisions), not as an error, which a new user read as a
failure. An active stored fit that cannot be read is a failure, and is the error. `seed_rules`
uses no fit, so it reports none and asks nothing of the operator.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.fit_store import CHANNEL
from tests.conftest import app_settings, decision_policy, wait_until_ready


@pytest.fixture
async def client(db_url: str, fixture_seeds: Path) -> AsyncIterator[Any]:
    async with AsyncTestClient(app=create_app(app_settings(db_url, fixture_seeds))) as c:
        await wait_until_ready(c, semantic=False)
        yield c


async def test_calibration_reported_only_under_calibrated(client: Any) -> None:
    async with decision_policy(client, "calibrated"):
        ready = (await client.get("/ready")).json()
    assert ready["calibration_fit"] == "portable fit" and ready["calibration_source"] == "portable", ready
    assert ready["calibration"], ready  # the portable fit's version
    assert ready["calibration_error"] is None, ready  # nothing failed
    note = ready["calibration_note"]
    assert "not on the served ones" in note and "portable fit" in note and "fit-decisions" in note, ready

    async with decision_policy(client, "seed_rules"):
        ready = (await client.get("/ready")).json()
    assert ready["decision_policy"] == "seed_rules", ready
    assert ready["calibration"] is None and ready["calibration_fit"] is None, ready
    assert ready["calibration_error"] is None and ready["calibration_note"] is None, ready


async def test_an_unreadable_stored_fit_is_the_error(client: Any, db_url: str) -> None:
    conn = await asyncpg.connect(db_url)
    try:
        await conn.execute(
            "insert into decision_fits (version, source, model, figures, active, created_by)"
            " values ('broken-1', 'review', '{\"format\": \"not a fit\"}', '{}', true, 'test')")
        await conn.execute(f"notify {CHANNEL}")
    finally:
        await conn.close()
    async with decision_policy(client, "calibrated"):
        for _ in range(300):  # the replica's listener loads it
            ready = (await client.get("/ready")).json()
            if ready["calibration_error"]:
                break
            await asyncio.sleep(0.1)
    assert "stored decision fit" in ready["calibration_error"], ready
    assert ready["calibration_note"] is None, ready  # the error says why; nothing else to add
    assert ready["calibration_fit"] == "portable fit", ready  # what decides meanwhile
