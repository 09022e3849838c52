"""Shared fixtures: a real PostgreSQL for the whole test session.

Fixtures (all integration tests should use these, never mocks):

- `pg_server` (session, sync): a running server. Without `DATABASE_URL` it is
  ONE embedded PostgreSQL (pgvector included) in a temporary directory,
  stopped at the end of the session; with `DATABASE_URL` that server is used
  (its role needs CREATEDB). Gives `.dsn(database)` and `.admin_dsn`.
- `db_url` (function, async): DSN of a fresh, empty database made for this
  test from a template that already has the `vector` extension (a cheap
  file copy), dropped afterwards. Nothing leaks between tests.
- `pool` (function, async): an asyncpg pool on `db_url`, pgvector codecs
  registered through `init=` (as in the service). Schema NOT migrated.
- `migrated_pool` (function, async): `pool` after every migration in
  `migrations/` was applied (`service.db.migrate.migrate_up`).
- `fixture_seeds` (function): a copy of `tests/fixtures/seeds` (3 small docs)
  in a temp dir, safe to edit.
- `paragraph_chunker`: a fast stand-in chunker (one chunk per paragraph).
- `table_dump`: `await table_dump(pool)` → every corpus row as JSON text.
- `service_client` (session, async): the real app (real seeds, embeddings,
  admin token `ADMIN_TOKEN_FOR_TESTS`) behind Litestar's AsyncTestClient on
  its own database, ready including phase 3. Shared by many tests: do not
  change its flags or corpus; build your own app for tests that mutate.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from service.db.embedded import EmbeddedPostgres
from service.db.migrate import migrate_up
from service.db.pool import create_pool
from service.domain.types import Chunk, Document
from service.embedding.base import available_cores
from service.settings import PROJECT_ROOT

# One ONNX export for the whole run, shared by every temporary data directory
# (and by the servers tests start as subprocesses, which inherit it).
os.environ.setdefault("EMBEDDING_CACHE_DIR", str(PROJECT_ROOT / ".cache" / "models"))
# Document vectors kept for this session only (embedding.keep_vectors): every corpus is embedded
# once per session, however many apps and servers seed it, and never taken from an earlier run.
if "EMBEDDING_VECTORS_DIR" not in os.environ:  # this module is imported twice (conftest, tests.conftest)
    os.environ["EMBEDDING_VECTORS_DIR"] = tempfile.mkdtemp(prefix="test-vectors-")
MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
FIXTURE_SEEDS = Path(__file__).parent / "fixtures" / "seeds"
TEMPLATE_DB = "test_template_vector"


@dataclass(frozen=True)
class PgServer:
    """A running PostgreSQL: `dsn(db)` addresses one database on it."""

    admin_dsn: str

    def dsn(self, database: str) -> str:
        return urlunsplit(urlsplit(self.admin_dsn)._replace(path=f"/{database}"))


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServer]:
    external = os.environ.get("DATABASE_URL")
    if external:
        yield PgServer(admin_dsn=external)
        return
    server = EmbeddedPostgres(tmp_path_factory.mktemp("pg") / "data")
    try:
        yield PgServer(admin_dsn=server.start())
    finally:
        server.stop()


_template_ready: set[str] = set()


async def _ensure_template(server: PgServer) -> None:
    if server.admin_dsn in _template_ready:
        return
    conn = await asyncpg.connect(server.admin_dsn)
    try:
        exists = await conn.fetchval("select 1 from pg_database where datname = $1", TEMPLATE_DB)
        if exists:  # left over from an interrupted session on DATABASE_URL
            await conn.execute(f'drop database "{TEMPLATE_DB}" with (force)')
        await conn.execute(f'create database "{TEMPLATE_DB}"')
    finally:
        await conn.close()
    tconn = await asyncpg.connect(server.dsn(TEMPLATE_DB))
    try:
        await tconn.execute("create extension if not exists vector")
    finally:
        await tconn.close()
    _template_ready.add(server.admin_dsn)


async def _create_database(server: PgServer) -> str:
    await _ensure_template(server)
    name = f"test_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(server.admin_dsn)
    try:
        await conn.execute(f'create database "{name}" template "{TEMPLATE_DB}"')
    finally:
        await conn.close()
    return name


async def _drop_database(server: PgServer, name: str) -> None:
    conn = await asyncpg.connect(server.admin_dsn)
    try:
        await conn.execute(f'drop database if exists "{name}" with (force)')
    finally:
        await conn.close()


@pytest.fixture
async def db_url(pg_server: PgServer) -> AsyncIterator[str]:
    name = await _create_database(pg_server)
    yield pg_server.dsn(name)
    await _drop_database(pg_server, name)


ADMIN_TOKEN_FOR_TESTS = "shared-test-admin-token-0123456789"


@contextlib.asynccontextmanager
async def decision_policy(client: Any, policy: str) -> AsyncIterator[None]:
    """`client`'s app under `decision.policy: <policy>` (a runtime override, removed after)."""
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"}
    response = await client.put("/admin/flags", json={"name": "decision.policy", "value": policy}, headers=auth)
    assert response.status_code == 200, response.text
    try:
        yield
    finally:
        response = await client.delete("/admin/flags/decision.policy", headers=auth)
        assert response.status_code in (200, 204), response.text


READY_TIMEOUT_S = 240.0


async def wait_until_ready(
    client: Any, semantic: bool = True, timeout_s: float = READY_TIMEOUT_S
) -> dict[str, Any]:
    """Poll /ready until the corpus (and, by default, phase 3) can answer."""
    from service.readiness import http_get
    from service.readiness import wait_until_ready as wait

    return await wait(http_get(client), timeout_s=timeout_s, semantic=semantic)


async def post_beside(client: Any, path: str, **kwargs: Any) -> Any:
    """POST from a worker thread, so the test's event loop stays free meanwhile.

    Litestar's AsyncTestClient blocks the calling event loop until the app
    (on its own loop, in a portal thread) has answered; a test that must act
    while a request is in flight sends that request through this.
    """
    import asyncio

    import httpx

    # The same in-memory transport; not closed here, the test client owns it.
    sync = httpx.Client(transport=client._transport, base_url=client.base_url, timeout=120)
    return await asyncio.to_thread(sync.post, path, **kwargs)


JOB_WAIT_S = 30
"""A status call's long poll (`?wait=`): answered as soon as the job ends."""
JOB_GIVE_UP_S = 900
"""A job still running after this long is stuck: the test fails rather than hangs."""


async def end_of(client: Any, job: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """The job once it ended (done or failed), read from its status URL on `client`'s app."""
    import time

    give_up = time.monotonic() + JOB_GIVE_UP_S
    while job["state"] in ("queued", "running"):
        assert time.monotonic() < give_up, f"the job never ended: {job}"
        response = await client.get(job["status_url"], headers=headers, params={"wait": JOB_WAIT_S})
        assert response.status_code == 200, response.text
        job = response.json()["job"]
    return job


async def run_job(client: Any, path: str, headers: dict[str, str], **kwargs: Any) -> dict[str, Any]:
    """POST an admin job (`/admin/seed`, `/admin/reindex`): 202 at once; then the job once it ended."""
    response = await client.post(path, headers=headers, **kwargs)
    assert response.status_code == 202, response.text
    return await end_of(client, response.json()["job"], headers)


# Kill-switch limits no machine load can reach: an app in a test that is not
# about the kill switch must not lose phases because the CPU is busy. The
# kill-switch tests use the shipped flags.yaml (and an injected clock).
UNREACHABLE_KILL_SWITCH = {"p95_ms": 1e9, "error_rate": 1.0, "min_samples": 10**9}
# Nor pass a phase over because a busy CPU made it slow (timeout tests set their own).
PATIENT_TIMEOUTS = {"db_ms": 60_000, "phase_ms": 60_000}
_quiet_flags: list[Path] = []


def quiet_flags_file() -> Path:
    """flags.yaml with the kill switch and timeouts out of reach, and the model on every core
    (written once per session)."""
    import tempfile

    import yaml

    if not _quiet_flags:
        # `or {}`: the shipped flags.yaml may override nothing (all comments).
        data = yaml.safe_load((PROJECT_ROOT / "flags.yaml").read_text(encoding="utf-8")) or {}
        data["kill_switch"] = {**data.get("kill_switch", {}), **UNREACHABLE_KILL_SWITCH}
        data["timeouts"] = {**data.get("timeouts", {}), **PATIENT_TIMEOUTS}
        # Every core to the model: a test's set-up indexes a corpus while no traffic needs the
        # event loop's core, and Logseq's 715 chunks take twice as long on one thread.
        data["embedding"] = {**data.get("embedding", {}), "threads": available_cores()}
        target = Path(tempfile.mkdtemp(prefix="test-flags-")) / "flags.yaml"
        target.write_text(yaml.safe_dump(data), encoding="utf-8")
        _quiet_flags.append(target)
    return _quiet_flags[0]


@contextlib.contextmanager
def logged_messages(name: str, level: int) -> Iterator[list[str]]:
    """The messages logger `name` emits at `level` or above within the block. A handler on the
    logger itself: Litestar's logging config replaces the root handlers, so caplog sees none."""
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger, handler = logging.getLogger(name), Keep(level)
    previous = logger.level
    logger.addHandler(handler)
    if not logger.isEnabledFor(level):
        logger.setLevel(level)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def app_settings(database_url: str, seeds_dir: Path, **extra: Any) -> Any:
    """Settings of an app under test: real migrations, the quiet flags file, admin token."""
    from service.settings import Settings

    values: dict[str, Any] = {
        "database_url": database_url, "seeds_dir": seeds_dir, "admin_token": ADMIN_TOKEN_FOR_TESTS,
        "migrations_dir": MIGRATIONS_DIR, "flags_file": quiet_flags_file(), "db_connect_timeout": 30,
    }
    return Settings(**{**values, **extra})


@pytest.fixture(scope="session")
async def service_client(pg_server: PgServer) -> AsyncIterator[Any]:
    from litestar.testing import AsyncTestClient

    from service.app import create_app

    name = await _create_database(pg_server)
    settings = app_settings(pg_server.dsn(name), PROJECT_ROOT / "seeds")
    async with AsyncTestClient(app=create_app(settings), timeout=60) as client:
        await wait_until_ready(client)
        yield client
    await _drop_database(pg_server, name)


LOGSEQ_DOCS = Path(__file__).parent / "corpora" / "logseq-docs"
GOLDEN_DIR = Path(__file__).parent / "golden"


def golden_files(logseq: bool) -> list[Path]:
    """The golden files written for Logseq's documentation (`logseq*.yaml`, replayed against
    `logseq_client`), or every other one (the seed corpus, `service_client`)."""
    return [p for p in sorted(GOLDEN_DIR.glob("*.yaml")) if p.stem.startswith("logseq") == logseq]
# Seeding and embedding ~1,000 chunks: minutes on a loaded 2-core machine.
LOGSEQ_READY_TIMEOUT_S = 1200.0


@pytest.fixture(scope="session")
async def logseq_dsn(pg_server: PgServer) -> AsyncIterator[str]:
    """The session's database for Logseq's documentation; `logseq_client` seeds and embeds it."""
    name = await _create_database(pg_server)
    yield pg_server.dsn(name)
    await _drop_database(pg_server, name)


@pytest.fixture(scope="session")
async def logseq_client(logseq_dsn: str) -> AsyncIterator[Any]:
    """One real app seeded with Logseq's documentation (tests/corpora/logseq-docs), read-only:
    a later replica on `logseq_dsn` with the same SEEDS_DIR finds everything unchanged."""
    from litestar.testing import AsyncTestClient

    from service.app import create_app

    settings = app_settings(logseq_dsn, LOGSEQ_DOCS)
    async with AsyncTestClient(app=create_app(settings), timeout=60) as client:
        await wait_until_ready(client, timeout_s=LOGSEQ_READY_TIMEOUT_S)
        yield client


MKDOCS_DOCS = Path(__file__).parent / "corpora" / "mkdocs-docs"


@pytest.fixture(scope="session")
async def mkdocs_client(pg_server: PgServer) -> AsyncIterator[Any]:
    """One real app seeded and embedded with MkDocs' documentation (tests/corpora/mkdocs-docs,
    ~310 chunks), once per session; read-only (runtime flag overrides must be removed after)."""
    from litestar.testing import AsyncTestClient

    from service.app import create_app

    name = await _create_database(pg_server)
    settings = app_settings(pg_server.dsn(name), MKDOCS_DOCS)
    async with AsyncTestClient(app=create_app(settings), timeout=60) as client:
        await wait_until_ready(client, timeout_s=LOGSEQ_READY_TIMEOUT_S)
        yield client
    await _drop_database(pg_server, name)


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[asyncpg.Pool[Any]]:
    p = await create_pool(db_url, min_size=1, max_size=5)
    try:
        yield p
    finally:
        await p.close()


@pytest.fixture
async def migrated_pool(db_url: str) -> AsyncIterator[asyncpg.Pool[Any]]:
    conn = await asyncpg.connect(db_url)
    try:
        await migrate_up(conn, MIGRATIONS_DIR)
    finally:
        await conn.close()
    # The pool is made after migrating so every connection has the vector codecs.
    p = await create_pool(db_url, min_size=1, max_size=5)
    try:
        yield p
    finally:
        await p.close()


@pytest.fixture
def fixture_seeds(tmp_path: Path) -> Path:
    target = tmp_path / "seeds"
    shutil.copytree(FIXTURE_SEEDS, target)
    return target


def _paragraph_chunks(doc: Document) -> list[Chunk]:
    """A trivial stand-in chunker: one chunk per blank-line-separated block."""
    blocks = [b.strip() for b in doc.content.split("\n\n") if b.strip()]
    return [
        Chunk(
            doc_slug=doc.slug, category=doc.category, title=doc.title, header_path=doc.title,
            chunk_index=i, content=text, keywords=doc.keywords,
            chunk_hash=hashlib.md5(text.encode()).hexdigest(), token_count=len(text.split()),
        )
        for i, text in enumerate(blocks)
    ]


@pytest.fixture
def paragraph_chunker() -> Callable[[Document], list[Chunk]]:
    """Fast deterministic chunker for seeding tests (no tokenizer to load)."""
    return _paragraph_chunks


async def dump_tables(pool: asyncpg.Pool[Any]) -> list[str]:
    """Every row of the corpus tables as JSON text, for byte-for-byte comparisons."""
    rows = await pool.fetch(
        "select 'd' || row_to_json(d)::text from docs_knowledge d order by id"
    )
    rows += await pool.fetch(
        "select 'c' || row_to_json(c)::text from docs_knowledge_chunks c"
        " order by doc_slug, chunk_index"
    )
    return [r[0] for r in rows]


@pytest.fixture
def table_dump() -> Callable[[asyncpg.Pool[Any]], Awaitable[list[str]]]:
    """`await table_dump(pool)`: all corpus rows (incl. timestamps) as JSON text."""
    return dump_tables


# With pytest-xdist (scripts/test.sh runs two workers), every test of one corpus's shared app
# runs on the same worker, so the app is seeded and embedded by one worker only.
_SHARED_APPS = {"logseq_client": "logseq", "logseq_dsn": "logseq", "mkdocs_client": "mkdocs"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        label = getattr(item, "operation_label", None)
        if label and "[" not in item.nodeid:
            # pytest 9 builds a node id from the function's name and its parametrize ids, so
            # schemathesis' items (one per operation, no parametrize) would all share one: xdist
            # would run one operation of all, and reports would not say which one failed.
            item._id = item._id.with_params(label)
        groups = {_SHARED_APPS[name] for name in getattr(item, "fixturenames", ()) if name in _SHARED_APPS}
        if groups:
            item.add_marker(pytest.mark.xdist_group("+".join(sorted(groups))))


def choice_problem(payload: dict[str, Any]) -> str | None:
    """What is wrong with a /retrieve response's choice (issue 40), else None: a question with fewer
    than two pages to choose from, or a no match that offers none and ends in a question."""
    from service.decide.clarify import SMALL_TALK

    if payload["status"] == "clarify" and len({o["doc_slug"] for o in payload["options"]}) < 2:
        return f"asks with options {[o['doc_slug'] for o in payload['options']]}: {payload['message']!r}"
    # Small talk's own reply ("You're welcome. Is there anything else …?") is conversation, not a no match's question.
    if (payload["status"] == "no_match" and payload["message"] not in SMALL_TALK.values() and not payload["options"]
            and payload["message"].rstrip().endswith("?")):
        return f"no match that asks a question it offers nothing for: {payload['message']!r}"
    return None
