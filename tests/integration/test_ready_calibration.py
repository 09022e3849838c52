"""`/ready` reports the decision fit only where the policy in force uses it (issue 33 item 5).

On a corpus the shipped fit was not made on (the three fixture pages), `calibrated` has
something to say (the fit does not match the served pages, run fit-decisions); `seed_rules`
uses no fit, so it reports none and asks nothing of the operator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from tests.conftest import app_settings, decision_policy, wait_until_ready


@pytest.fixture
async def client(db_url: str, fixture_seeds: Path) -> AsyncIterator[Any]:
    async with AsyncTestClient(app=create_app(app_settings(db_url, fixture_seeds))) as c:
        await wait_until_ready(c, semantic=False)
        yield c


async def test_calibration_reported_only_under_calibrated(client: Any) -> None:
    async with decision_policy(client, "calibrated"):
        ready = (await client.get("/ready")).json()
    assert ready["calibration_error"] and "fit-decisions" in ready["calibration_error"], ready
    assert ready["calibration"], ready  # the fit that decides instead (the portable one)

    async with decision_policy(client, "seed_rules"):
        ready = (await client.get("/ready")).json()
    assert ready["decision_policy"] == "seed_rules", ready
    assert ready["calibration"] is None, ready
    assert ready["calibration_error"] is None, ready
