"""Re-index triggers through the API: incremental by default, everything with full=true.

A full re-index marks every vector stale and re-embeds them; docs/api.md
promises the old vectors keep serving meanwhile. The test holds the re-index
inside its first embedding batch (a threading event on the model thread) and
asks phase 3 a question while every stored vector is marked stale. The re-index
is a job: its POST answered 202 while the work was held (tests/integration/test_jobs.py
has the rest of the job's contract).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import asyncpg
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import PROJECT_ROOT, Settings
from service.state import get_state
from tests.conftest import end_of, quiet_flags_file, run_job, wait_until_ready

TOKEN = "reindex-test-token-0123456789"
QUESTION = {"query": "explain workspace", "phase": 3}


async def test_full_reindex_re_embeds_every_chunk_and_old_vectors_keep_serving(
    db_url: str, fixture_seeds: Path
) -> None:
    app = create_app(Settings(
        database_url=db_url, seeds_dir=fixture_seeds, admin_token=TOKEN,
        migrations_dir=PROJECT_ROOT / "migrations", flags_file=quiet_flags_file(),
        db_connect_timeout=10,
    ))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with AsyncTestClient(app=app, timeout=60) as client:
        await wait_until_ready(client)
        incremental = (await run_job(client, "/admin/reindex", headers))["result"]
        assert incremental["embedded"] == 0
        before = (await client.post("/retrieve", json=QUESTION)).json()
        # The question's vector is now cached: while the re-index holds the model
        # thread, phase 3 needs only the stored chunk vectors.
        assert before["phase"] == 3 and before["results"][0]["doc_slug"] == "concepts/workspace"

        semantic = get_state(app.state).semantic
        assert semantic is not None
        embedder: Any = semantic.embedder
        original = embedder.embed_passages
        inside, release = threading.Event(), threading.Event()

        def held(items: Any) -> Any:
            inside.set()
            assert release.wait(timeout=120), "the test never released the re-index"
            return original(items)

        embedder.embed_passages = held
        try:
            started = await client.post("/admin/reindex", json={"full": True}, headers=headers)
            assert started.status_code == 202, started.text
            assert await asyncio.to_thread(inside.wait, 120), "the full re-index never started embedding"
            async with _connect(db_url) as conn:  # the re-index is really under way: nothing re-embedded yet
                stale = await conn.fetchval("select count(*) from chunk_embeddings where input_hash = 'stale'")
                total = await conn.fetchval("select count(*) from docs_knowledge_chunks")
            assert stale == total > 0
            during = (await client.post("/retrieve", json=QUESTION)).json()
            job = (await client.get(started.json()["job"]["status_url"], headers=headers)).json()["job"]
            assert job["state"] == "running", job
        finally:
            release.set()
            embedder.embed_passages = original
        assert during["phase"] == 3 and during["fallback_path"] == [], during["fallback_path"]
        assert during["status"] == "answer"
        assert [r["doc_slug"] for r in during["results"]] == [r["doc_slug"] for r in before["results"]]
        assert during["results"][0]["source"] in ("hybrid", "embedding")

        job = await end_of(client, job, headers)
        assert job["state"] == "done", job
        report = job["result"]
        assert report["embedded"] == report["total"] > 0 and report["reused"] == 0
        after = (await client.post("/retrieve", json=QUESTION)).json()
        assert after["phase"] == 3 and after["fallback_path"] == []
        assert after["results"][0]["doc_slug"] == "concepts/workspace"


class _connect:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    async def __aenter__(self) -> asyncpg.Connection[Any]:
        self.conn: asyncpg.Connection[Any] = await asyncpg.connect(self.dsn)
        return self.conn

    async def __aexit__(self, *exc: object) -> None:
        await self.conn.close()
