"""The corpus's self-check (issue 40 item 2): run at each corpus load when `decision.corpus_probes`
is on, each run kept in PostgreSQL (another replica's load adds its own, the same figures on the
same pages), named in `/ready` with its figures, and moving phase 3's p only at a strength above
0 (the default is 0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import pytest
import yaml
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.decide.corpus_probes import MIN_PROBES, adapted, shift_of
from service.flags import DecisionFlags
from service.settings import PROJECT_ROOT
from tests.conftest import ADMIN_TOKEN_FOR_TESTS, app_settings, quiet_flags_file, wait_until_ready

SEEDS = PROJECT_ROOT / "seeds"
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"}
# A question whose p lies inside (0, 1) under the shipped fit (0.90), so a shift shows in it, and
# that is answered either way, so its first result carries the decision's explanation.
QUESTION = "workspace"


def _flags(tmp_path: Path, **decision: Any) -> Path:
    data = yaml.safe_load(quiet_flags_file().read_text(encoding="utf-8")) or {}
    data["decision"] = {**data.get("decision", {}), **decision}
    target = tmp_path / f"flags-{len(list(tmp_path.glob('flags-*')))}.yaml"
    target.write_text(yaml.safe_dump(data), encoding="utf-8")
    return target


async def _ask(client: Any) -> dict[str, Any]:
    response = await client.post("/retrieve", json={"query": QUESTION, "phase": 3})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["phase"] == 3, body
    return body


async def test_the_self_check_is_stored_at_each_load_shown_and_shifts_p_only_when_asked(db_url: str, tmp_path: Path) -> None:
    strength = 0.5
    on = app_settings(db_url, SEEDS, flags_file=_flags(tmp_path, corpus_probes=True, corpus_shift_strength=strength))
    async with AsyncTestClient(app=create_app(on), timeout=300) as client:
        ready = await wait_until_ready(client)
        check = ready["corpus_self_check"]
        assert check is not None, ready
        assert check["kind"] == "sentence" and check["probes"] >= MIN_PROBES, check
        assert 0 <= check["hits"] <= check["probes"] and 0 < check["mean_p"] < 1, check
        assert check["fit"] == ready["calibration"], (check, ready["calibration"])
        defaults = DecisionFlags()
        expected = shift_of(check["hits"], check["probes"], check["mean_p"], strength, defaults.corpus_shift_reference)
        assert check["shift"] == pytest.approx(expected, abs=1e-3) and check["shift"] != 0, check
        asked = await _ask(client)
        shifted = asked["confidence"]
        explained = [m for r in asked["results"] for m in r["match_explain"]]
        assert any("self-check's shift" in m for m in explained), asked
        # Under the seed rules no p decides: /ready shows no shift until the fit decides again.
        response = await client.put("/admin/flags", json={"name": "decision.policy", "value": "seed_rules"},
                                    headers=AUTH)
        assert response.status_code == 200, response.text
        assert (await client.get("/ready")).json()["corpus_self_check"]["shift"] == 0
        response = await client.delete("/admin/flags/decision.policy", headers=AUTH)
        assert response.status_code == 200, response.text
        assert (await client.get("/ready")).json()["corpus_self_check"]["shift"] == check["shift"]
        # The same question at strength 0: p as the fit gives it, which the shift moved.
        response = await client.put("/admin/flags", json={"name": "decision.corpus_shift_strength", "value": 0},
                                    headers=AUTH)
        assert response.status_code == 200, response.text
        assert (await client.get("/ready")).json()["corpus_self_check"]["shift"] == 0
        plain = (await _ask(client))["confidence"]
        assert 0 < plain < 1 and shifted != plain, (plain, shifted)
        assert shifted == pytest.approx(adapted(plain, check["shift"]), abs=2e-3), (plain, shifted, check)

    async with AsyncTestClient(app=create_app(on), timeout=300) as client:  # another replica, same pages
        again = (await wait_until_ready(client))["corpus_self_check"]
    # The same figures; the shift is 0 there too: the runtime override above is every replica's.
    assert again == {**check, "shift": 0.0}, (again, check)
    conn = await asyncpg.connect(db_url)
    try:
        rows = await conn.fetch("select fit, kind, probes, hits, mean_p from corpus_probes order by id")
    finally:
        await conn.close()
    assert [(r["fit"], r["kind"], r["probes"], r["hits"], r["mean_p"]) for r in rows] == \
        [(check["fit"], "sentence", check["probes"], check["hits"], check["mean_p"])] * 2

    # Off (the default): no check, nothing in /ready, p as the fit gives it.
    async with AsyncTestClient(app=create_app(app_settings(db_url, SEEDS)), timeout=300) as client:
        ready = await wait_until_ready(client)
        assert ready["corpus_self_check"] is None, ready
        assert (await _ask(client))["confidence"] == pytest.approx(plain, abs=1e-4)
