"""The HTTP app on a real PostgreSQL (DATABASE_URL path): health, ready, admin."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import PROJECT_ROOT, Settings
from tests.conftest import quiet_flags_file, run_job, wait_until_ready

TOKEN = "test-admin-token-0123456789"



def _settings(db_url: str, seeds: Path, token: str | None) -> Settings:
    return Settings(
        database_url=db_url, seeds_dir=seeds, admin_token=token,
        migrations_dir=PROJECT_ROOT / "migrations", flags_file=quiet_flags_file(),
        db_connect_timeout=10,
    )


async def _wait_ready(client: AsyncTestClient) -> dict[str, object]:  # type: ignore[type-arg]
    return await wait_until_ready(client, semantic=False)


@pytest.fixture
async def client(db_url: str, fixture_seeds: Path) -> AsyncIterator[AsyncTestClient]:  # type: ignore[type-arg]
    app = create_app(_settings(db_url, fixture_seeds, TOKEN))
    async with AsyncTestClient(app=app) as c:
        await _wait_ready(c)
        yield c


async def test_health_and_ready(client: AsyncTestClient) -> None:  # type: ignore[type-arg]
    assert (await client.get("/health")).json() == {"status": "ok"}
    body = await _wait_ready(client)
    assert body["documents"] == 3
    assert isinstance(body["chunks"], int) and body["chunks"] >= 3
    assert body["migrations"] >= 2  # type: ignore[operator]


async def test_openapi_schema_is_served(client: AsyncTestClient) -> None:  # type: ignore[type-arg]
    response = await client.get("/schema/openapi.json")
    assert response.status_code == 200
    assert {"/health", "/ready", "/admin/seed"} <= set(response.json()["paths"])


@pytest.mark.parametrize(
    ("headers", "status", "fragment"),
    [
        ({}, 401, "missing Authorization"),
        ({"Authorization": "Basic abc"}, 401, "malformed"),
        ({"Authorization": "Bearer"}, 401, "malformed"),
        ({"Authorization": f"Bearer {TOKEN} extra"}, 401, "malformed"),
        ({"Authorization": "Bearer wrong-token"}, 403, "invalid admin token"),
        ({"Authorization": f"Bearer {TOKEN}x"}, 403, "invalid admin token"),
    ],
)
async def test_admin_rejects_bad_credentials(
    client: AsyncTestClient, headers: dict[str, str], status: int, fragment: str  # type: ignore[type-arg]
) -> None:
    response = await client.post("/admin/seed", headers=headers)
    assert response.status_code == status
    assert fragment in response.json()["error"]
    assert TOKEN not in response.text


async def test_admin_seed_with_right_token(
    client: AsyncTestClient, fixture_seeds: Path  # type: ignore[type-arg]
) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    job = await run_job(client, "/admin/seed", auth)
    assert (job["kind"], job["state"]) == ("seed", "done"), job
    assert job["result"]["documents"] == {
        "inserted": 0, "updated": 0, "unchanged": 3, "deleted": 0
    }
    version_before = (await _wait_ready(client))["corpus_version"]
    (fixture_seeds / "actions" / "navigation.md").unlink()
    job = await run_job(client, "/admin/seed", auth)
    assert job["result"]["documents"]["deleted"] == 1
    ready = await _wait_ready(client)
    assert ready["documents"] == 2
    assert ready["corpus_version"] == version_before + 1  # type: ignore[operator]


async def test_admin_seed_with_bad_file_keeps_previous_corpus(
    client: AsyncTestClient, fixture_seeds: Path  # type: ignore[type-arg]
) -> None:
    # Any Markdown is a page now; broken YAML front matter is still a bad file.
    (fixture_seeds / "concepts" / "bad.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    job = await run_job(client, "/admin/seed", {"Authorization": f"Bearer {TOKEN}"})
    assert job["state"] == "failed" and "previous corpus is still served" in job["error"], job
    rejected = job["result"]["rejected"]
    assert rejected[0]["file"].endswith("bad.md")
    assert "front matter" in rejected[0]["reason"]
    ready = await _wait_ready(client)
    assert ready["documents"] == 3 and "bad.md" in str(ready["last_seed_error"])


async def test_admin_disabled_without_token(db_url: str, fixture_seeds: Path) -> None:
    app = create_app(_settings(db_url, fixture_seeds, None))
    async with AsyncTestClient(app=app) as c:
        await _wait_ready(c)
        response = await c.post("/admin/seed", headers={"Authorization": "Bearer anything"})
        assert response.status_code == 403
        assert "disabled" in response.json()["error"]


async def test_client_errors_are_4xx_json(client: AsyncTestClient) -> None:  # type: ignore[type-arg]
    response = await client.get("/no/such/route")
    assert response.status_code == 404 and "error" in response.json()
    response = await client.put("/health")
    assert response.status_code == 405 and "error" in response.json()
    # The 16 KiB limit applies wherever a body is read (it is parsed before the handler).
    big = b'{"query": "' + b"a" * 20_000 + b'"}'
    response = await client.post(
        "/retrieve", content=big, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413 and "error" in response.json()


async def test_not_ready_while_database_is_unreachable(
    fixture_seeds: Path, tmp_path: Path
) -> None:
    dead = f"postgresql://postgres@/postgres?host={tmp_path}&port=1"
    settings = replace(_settings(dead, fixture_seeds, TOKEN), db_connect_timeout=60)
    async with AsyncTestClient(app=create_app(settings)) as c:
        await asyncio.sleep(0.5)
        response = await c.get("/ready")
        assert response.status_code == 503
        assert "database not reachable yet" in response.json()["reason"]
        assert (await c.get("/health")).status_code == 200
