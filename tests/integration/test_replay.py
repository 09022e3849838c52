"""Golden replay is deterministic: in-process it ignores the kill switch; over HTTP it names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from litestar.testing import AsyncTestClient

from service.app import create_app
from service.golden import load_golden
from service.replay import Summary, replay_cases
from service.replay_command import _run_in_process
from service.settings import PROJECT_ROOT, Settings
from tests.conftest import wait_until_ready

TOKEN = "replay-test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
GOLDEN = PROJECT_ROOT / "tests" / "golden" / "navigation.yaml"


def _settings(db_url: str, seeds: Path = PROJECT_ROOT / "seeds") -> Settings:
    return Settings(
        database_url=db_url, admin_token=TOKEN, seeds_dir=seeds,
        flags_file=PROJECT_ROOT / "flags.yaml", migrations_dir=PROJECT_ROOT / "migrations",
        db_connect_timeout=30,
    )


async def test_replay_under_a_killed_switch_and_capped_flags(db_url: str) -> None:
    cases = load_golden(GOLDEN)
    async with AsyncTestClient(app=create_app(_settings(db_url)), timeout=120) as client:
        await wait_until_ready(client)
        assert (await client.put("/admin/flags", json={"name": "phase", "value": 1}, headers=AUTH)).status_code == 200
        assert (await client.post("/admin/kill", json={"reason": "drill"}, headers=AUTH)).status_code == 200

        # In-process: every case at its own phase, the switch and the phase flag not applied.
        report = (await client.post("/admin/replay", json={"file": "navigation"}, headers=AUTH)).json()
        assert report["failed"] == 0 and report["skipped"] == 0, [
            r for r in report["results"] if r["outcome"] not in ("PASS", "XFAIL")]
        # Every run as expected: a pass, or a case marked known_failure that still fails.
        assert report["passed"] + report["known_failures"] == len(report["results"]) > 0
        assert all((r["outcome"] == "XFAIL") == (r["known_failure"] is not None) for r in report["results"])
        assert "kill switch" in report["note"]
        events = (await client.get("/admin/flags", headers=AUTH)).json()["kill_switch"]
        assert events["state"] == "manual"  # the replay neither healed nor fed it
        assert all(w["samples"] == 0 for w in events["windows"].values())

        async def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            response = await client.post("/retrieve", json=body)
            return response.status_code, response.json()

        # As any client: answered below their phase, and said why, but not failures; the known
        # failures that apply are those of the policy in force (what `--url` reads from /ready).
        policy = (await client.get("/ready")).json()["decision_policy"]
        killed = await replay_cases(cases, post, policy=policy)
        assert Summary(killed).failed == 0
        assert {r.detail for r in killed if r.phase == 1} == {"kill switch: manual kill (drill)"}
        assert {r.detail for r in killed if r.phase > 1} == {"capped by flags at phase 1"}
        assert "not evaluated at their phase" in Summary(killed).line()

        assert (await client.post("/admin/reset", headers=AUTH)).status_code == 200
        capped = await replay_cases(cases, post, policy=policy)
        assert all(r.ok and not r.skipped for r in capped if r.phase == 1)
        assert {r.verdict for r in capped if r.phase > 1} == {"capped by flags"}
        await client.delete("/admin/flags/phase", headers=AUTH)


async def test_command_line_replay_in_process(db_url: str, fixture_seeds: Path, tmp_path: Path) -> None:
    golden = tmp_path / "mini.yaml"
    golden.write_text(
        "cases:\n"
        "  - {id: workspace, query: explain workspace, expect: {decision: answer, top: concepts/workspace}}\n"
        "  - {id: wrong, query: explain workspace, expect: {decision: answer, top: widgets/quick-links}}\n",
        encoding="utf-8",
    )
    results = await _run_in_process(_settings(db_url, fixture_seeds), golden, phase=1)
    assert [(r.case_id, r.phase, r.verdict) for r in results] == [("workspace", 1, "pass"), ("wrong", 1, "fail")]
    assert "expected widgets/quick-links" in results[1].line()
