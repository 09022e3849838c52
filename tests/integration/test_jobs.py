"""Long admin work as jobs (issue 42 item 5), on a real PostgreSQL shared by two replicas.

`POST /admin/reindex` and `POST /admin/seed` answer 202 with the job while its work is held
inside its first embedding batch (a threading event on the model thread): the answer does not
wait for the work. The other replica reads the job, and refuses a second one of its kind with
a 409 naming it; the job's end and result are read there too. A finished job outlives a
restart; a job whose process was killed is failed (interrupted), never left running, and does
not block the next one. (The decision fit's job is read from a second replica in
test_learning_loop.py; the store itself in test_job_store.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.db.embedded import free_port
from service.state import get_state
from tests.conftest import ADMIN_TOKEN_FOR_TESTS, app_settings, end_of, run_job, wait_until_ready
from tests.serve_process import start_serve, wait_ready

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"}
HOLD_TIMEOUT_S = 120


@contextlib.contextmanager
def held_embedding(app: Litestar) -> Iterator[threading.Event]:
    """`app`'s embedding batches wait inside the model thread until the block ends; the event
    is set once one is waiting."""
    semantic = get_state(app.state).semantic
    assert semantic is not None and semantic.embedder is not None
    embedder: Any = semantic.embedder
    original = embedder.embed_passages
    inside, release = threading.Event(), threading.Event()

    def held(items: Any) -> Any:
        inside.set()
        assert release.wait(timeout=HOLD_TIMEOUT_S), "the test never released the embedding"
        return original(items)

    embedder.embed_passages = held
    try:
        yield inside
    finally:
        release.set()
        embedder.embed_passages = original


async def _entered(inside: threading.Event) -> None:
    assert await asyncio.to_thread(inside.wait, HOLD_TIMEOUT_S), "the job never reached its embedding"


async def test_reindex_and_seed_answer_at_once_and_either_replica_reads_and_serialises_them(
    db_url: str, fixture_seeds: Path,
) -> None:
    settings = app_settings(db_url, fixture_seeds)
    here, there = create_app(settings), create_app(settings)
    async with AsyncTestClient(app=here, timeout=60) as a, AsyncTestClient(app=there, timeout=60) as b:
        await wait_until_ready(a)
        await wait_until_ready(b, semantic=False)

        # A full re-index: 202 with the job while its work is held.
        with held_embedding(here) as inside:
            started = await a.post("/admin/reindex", json={"full": True}, headers=AUTH)
            assert started.status_code == 202, started.text
            job = started.json()["job"]
            assert (job["kind"], job["state"], job["params"], job["result"]) == ("reindex", "running", {"full": True}, None)
            assert started.headers["location"] == job["status_url"] == f"/admin/jobs/{job['id']}"
            await _entered(inside)
            seen = (await b.get(job["status_url"], headers=AUTH)).json()["job"]
            assert (seen["id"], seen["kind"], seen["state"]) == (job["id"], "reindex", "running"), seen
            for client in (a, b):  # one at a time, whichever replica is asked
                refused = await client.post("/admin/reindex", headers=AUTH)
                assert refused.status_code == 409, refused.text
                assert job["id"] in refused.json()["error"], refused.text
                assert refused.json()["detail"][0]["job"]["id"] == job["id"]
                assert refused.json()["detail"][0]["message"]
        done = await end_of(b, job, AUTH)
        assert done["state"] == "done" and done["error"] is None, done
        assert done["result"]["embedded"] == done["result"]["total"] > 0 and done["result"]["reused"] == 0

        # A seed of a changed page: its job is held where it embeds what changed.
        page = fixture_seeds / "concepts" / "workspace.md"
        page.write_text(page.read_text(encoding="utf-8") + "\n\nA paragraph the seed job brings.\n", encoding="utf-8")
        with held_embedding(here) as inside:
            started = await a.post("/admin/seed", headers=AUTH)
            assert started.status_code == 202, started.text
            job = started.json()["job"]
            assert (job["kind"], job["state"]) == ("seed", "running"), job
            await _entered(inside)
            assert (await b.get(job["status_url"], headers=AUTH)).json()["job"]["state"] == "running"
            refused = await b.post("/admin/seed", headers=AUTH)
            assert refused.status_code == 409 and job["id"] in refused.json()["error"], refused.text
        done = await end_of(b, job, AUTH)
        assert done["state"] == "done", done
        assert done["result"]["documents"] == {"inserted": 0, "updated": 1, "unchanged": 2, "deleted": 0}
        assert "A paragraph the seed job brings." in (await a.get("/documents/concepts/workspace")).json()["content"]

        listed = (await b.get("/admin/jobs", headers=AUTH)).json()["jobs"]
        assert [(j["kind"], j["state"]) for j in listed] == [("seed", "done"), ("reindex", "done")]
        assert [j["kind"] for j in (await a.get("/admin/jobs", params={"kind": "reindex"}, headers=AUTH)).json()[
            "jobs"]] == ["reindex"]
        assert (await b.get("/admin/jobs/no-such-job", headers=AUTH)).status_code == 404


async def test_a_finished_job_outlives_a_restart_and_a_killed_one_is_failed_as_interrupted(
    db_url: str, fixture_seeds: Path, tmp_path: Path,
) -> None:
    hold, log, port = tmp_path / "hold", tmp_path / "serve.log", free_port()
    hold.mkdir()
    proc = start_serve(tmp_path / "data", port, log, argv=[str(Path(__file__).with_name("held_job_serve.py"))],
                       env={"DATABASE_URL": db_url, "SEEDS_DIR": str(fixture_seeds),
                            "ADMIN_TOKEN": ADMIN_TOKEN_FOR_TESTS, "HOLD_DIR": str(hold)})
    try:
        await asyncio.to_thread(wait_ready, proc, port, log, timeout_s=240, semantic=False)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as served:
            finished = await run_job(served, "/admin/seed", AUTH)
            assert finished["state"] == "done", finished
            (hold / "hold").touch()
            started = await served.post("/admin/seed", headers=AUTH)
            assert started.status_code == 202, started.text
            held = started.json()["job"]
            deadline = time.monotonic() + HOLD_TIMEOUT_S
            while not (hold / "held").exists():  # the job's work is under way
                assert time.monotonic() < deadline and proc.poll() is None, log.read_text()[-3000:]
                await asyncio.sleep(0.05)
        proc.kill()  # the process dies with its job running: no shutdown, nothing written
        await asyncio.to_thread(proc.wait)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    # The restart: another process on the same database.
    async with AsyncTestClient(app=create_app(app_settings(db_url, fixture_seeds)), timeout=60) as restarted:
        await wait_until_ready(restarted, semantic=False)
        assert (await restarted.get(finished["status_url"], headers=AUTH)).json()["job"] == finished
        interrupted = await end_of(restarted, held, AUTH)
        assert interrupted["state"] == "failed" and interrupted["error"].startswith("interrupted"), interrupted
        assert interrupted["finished_at"] is not None
        assert (await run_job(restarted, "/admin/seed", AUTH))["state"] == "done"  # the dead one blocks nothing
