"""Re-index triggers through the API: incremental by default, everything with full=true."""

from __future__ import annotations

from pathlib import Path

from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import PROJECT_ROOT, Settings
from tests.conftest import wait_until_ready

TOKEN = "reindex-test-token-0123456789"


async def test_full_reindex_re_embeds_every_chunk_and_keeps_answering(db_url: str, fixture_seeds: Path) -> None:
    app = create_app(Settings(
        database_url=db_url, seeds_dir=fixture_seeds, admin_token=TOKEN,
        migrations_dir=PROJECT_ROOT / "migrations", flags_file=PROJECT_ROOT / "flags.yaml",
        db_connect_timeout=10,
    ))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with AsyncTestClient(app=app, timeout=60) as client:
        await wait_until_ready(client)
        incremental = (await client.post("/admin/reindex", headers=headers)).json()
        assert incremental["embedded"] == 0
        full = await client.post("/admin/reindex", json={"full": True}, headers=headers)
        assert full.status_code == 200, full.text
        report = full.json()
        assert report["embedded"] == report["total"] > 0 and report["reused"] == 0
        answer = (await client.post("/retrieve", json={"query": "explain workspace", "phase": 3})).json()
        assert answer["phase"] == 3 and answer["fallback_path"] == []
