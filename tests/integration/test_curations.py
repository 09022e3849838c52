"""Curations on a real PostgreSQL: pin, hide, audit, a second replica, a page removed by a later seed."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from service.settings import PROJECT_ROOT
from tests.conftest import run_job
from tests.integration.test_feedback_loop import AUTH, ask, running


async def eventually(check: Callable[[], Any], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


def curation_steps(body: dict[str, Any]) -> list[str]:
    return [s["reason"] for s in body["fallback_path"] if s["tier"] == "curation"]


async def curate(client: Any, **body: Any) -> Any:
    return await client.post("/admin/curations", json=body, headers=AUTH)


async def test_pin_and_hide_reach_every_replica_with_provenance_audit_and_stale_pages(
    db_url: str, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds"
    shutil.copytree(PROJECT_ROOT / "tests" / "fixtures" / "seeds", seeds)
    async with running(db_url, seeds) as a, running(db_url, seeds) as b:
        before = await ask(a, "switch workspaces", phase=1)
        assert before["results"][0]["doc_slug"] == "concepts/workspace" and not curation_steps(before)

        pin = await curate(a, query="Switch workspaces!", match="exact", action="pin",
                           doc_slug="actions/navigation", note="the bar lives on the navigation page")
        assert pin.status_code == 201, pin.text
        made = pin.json()
        assert made["phrase"] == "switch workspace"  # normalised as a request is: case, punctuation, plural
        assert made["created_by"] == "admin@testclient"

        pinned = await ask(a, "switch workspaces", phase=1)
        assert pinned["status"] == "answer" and pinned["results"][0]["doc_slug"] == "actions/navigation"
        steps = curation_steps(pinned)
        assert len(steps) == 1 and steps[0].startswith(f"curation #{made['id']} (pin actions/navigation")
        assert steps[0].endswith("by admin@testclient")
        # Exact: a longer query is not pinned.
        assert not curation_steps(await ask(a, "switch workspaces quickly", phase=1))

        async def b_pinned() -> bool:
            body = await ask(b, "switch workspaces", phase=1)
            return bool(body["results"]) and body["results"][0]["doc_slug"] == "actions/navigation"

        await eventually(b_pinned, timeout=2)  # the other replica, through LISTEN/NOTIFY

        hide = await curate(a, query="workspace", match="contains", action="hide", doc_slug="concepts/workspace")
        assert hide.status_code == 201, hide.text
        hidden = await ask(a, "what is a workspace", phase=1)
        assert "concepts/workspace" not in [r["doc_slug"] for r in hidden["results"]]
        assert any("hide concepts/workspace" in s for s in curation_steps(hidden))

        # Refused: unknown page or section, section on a hide, a duplicate, stopwords only.
        assert (await curate(a, query="calendar", match="exact", action="pin",
                             doc_slug="concepts/calendar")).status_code == 400
        assert (await curate(a, query="links", match="exact", action="pin", doc_slug="widgets/quick-links",
                             header_path="No such heading")).status_code == 400
        assert (await curate(a, query="links", match="exact", action="hide", doc_slug="widgets/quick-links",
                             header_path="Quick Links")).status_code == 400
        dup = await curate(a, query="switch workspaces", match="exact", action="pin", doc_slug="actions/navigation")
        assert dup.status_code == 409
        only_stopwords = await curate(a, query="what is the", match="exact", action="pin",
                                      doc_slug="actions/navigation")
        assert only_stopwords.status_code == 400 and "query" in only_stopwords.json()["error"]
        assert (await a.post("/admin/curations", json={})).status_code == 401

        listed = (await a.get("/admin/curations", headers=AUTH)).json()
        assert [c["action"] for c in listed["curations"]] == ["pin", "hide"]
        assert [(e["action"], e["actor"]) for e in listed["audit"]] == [
            ("create", "admin@testclient"), ("create", "admin@testclient")]

        # A later seed removes the pinned page: the pin is reported stale and skipped, never a 500.
        (seeds / "actions" / "navigation.md").unlink()
        assert (await run_job(a, "/admin/seed", AUTH))["state"] == "done"
        stale = (await a.get("/admin/curations", headers=AUTH)).json()["curations"][0]
        assert stale["stale"] is True and stale["stale_reason"] == "page actions/navigation is no longer in the corpus"
        after = await ask(a, "switch workspaces", phase=1)
        assert "actions/navigation" not in [r["doc_slug"] for r in after["results"]]
        assert not any("pin" in s for s in curation_steps(after))

        gone = await a.delete(f"/admin/curations/{made['id']}", headers=AUTH)
        assert gone.status_code == 200 and gone.json()["deleted"]["id"] == made["id"]
        assert (await a.delete(f"/admin/curations/{made['id']}", headers=AUTH)).status_code == 404
        audit = (await a.get("/admin/curations", headers=AUTH)).json()["audit"]
        assert audit[0]["action"] == "delete" and audit[0]["curation"]["doc_slug"] == "actions/navigation"

        async def b_unpinned() -> bool:
            return len(b.app.state["curator"].store.active) == 1

        await eventually(b_unpinned, timeout=2)
