"""Hostile documentation files (issue 33 item 2) on a real PostgreSQL.

One policy for every kind (docs/operations/seeding-safety.md): a bad file refuses the whole
seed with a reason per file, and the corpus stored before stays exactly as it was
(`repo.corpus_fingerprint` before == after). Each kind is tried alone, then all of them at once
through `POST /admin/seed` (a 422 listing every file, never a 5xx).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.db import repo
from service.domain.types import Chunk, Document
from service.ingest.markdown import MAX_NESTING, MAX_PAGE_BYTES, SeedError, before_each_read
from service.ingest.rst import LINE_LENGTH_LIMIT
from service.ingest.seeder import seed
from service.state import get_state
from tests.conftest import ADMIN_TOKEN_FOR_TESTS, app_settings, run_job, wait_until_ready

Chunker = Callable[[Document], list[Chunk]]
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"}
VANISHING = "concepts/vanishing.md"


@dataclass(frozen=True)
class BadFile:
    path: str
    reason: str
    """Must appear in the file's reason."""
    make: Callable[[Path, Path], None]
    """(seeds dir, a directory outside it) → writes the file."""


def _write(relative: str, content: bytes) -> Callable[[Path, Path], None]:
    def make(seeds: Path, _outside: Path) -> None:
        (seeds / relative).write_bytes(content)
    return make


def _sparse(relative: str, size: int) -> Callable[[Path, Path], None]:
    def make(seeds: Path, _outside: Path) -> None:
        with (seeds / relative).open("wb") as handle:
            handle.truncate(size)  # no data blocks: 50 MB on paper, nothing on disk
    return make


def _symlink_loop(seeds: Path, _outside: Path) -> None:
    (seeds / "concepts" / "loop-a.md").symlink_to("loop-b.md")
    (seeds / "concepts" / "loop-b.md").symlink_to("loop-a.md")


def _symlink_outside(seeds: Path, outside: Path) -> None:
    secret = outside / "secret.md"
    secret.write_text("# Secret\n\nNot part of the documentation.\n")
    (seeds / "concepts" / "escape.md").symlink_to(secret)


def _vanishing(seeds: Path, _outside: Path) -> None:
    """A good page, listed, then deleted by `_delete_vanishing` right before it is read."""
    (seeds / VANISHING).write_text("# Vanishing\n\nThis page is listed, then gone.\n")


_ALIAS_BOMB = (
    "---\ntitle: Bomb\n" + "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9))
    + "---\n# Bomb\n\n9^9 lols.\n"
).encode()

BAD_FILES: dict[str, BadFile] = {
    "50 MB page": BadFile("concepts/huge.md", f"52,428,800 bytes: larger than {MAX_PAGE_BYTES:,}",
                          _sparse("concepts/huge.md", 50 * 2**20)),
    "binary named .md": BadFile("concepts/image.md", "a binary file",
                                _write("concepts/image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")),
    "symlink loop": BadFile("concepts/loop-a.md", "a symlink loop", _symlink_loop),
    "symlink outside SEEDS_DIR": BadFile("concepts/escape.md", "outside SEEDS_DIR (not followed)",
                                         _symlink_outside),
    "YAML alias bomb": BadFile("concepts/bomb.md", "YAML aliases", _write("concepts/bomb.md", _ALIAS_BOMB)),
    "10,000-deep nested list": BadFile("concepts/deep-list.md", f"more than {MAX_NESTING} lists or quotes",
                                       _write("concepts/deep-list.md", b"# Deep\n\n" + b"- " * 10_000 + b"x\n")),
    "10,000-deep blockquote": BadFile("concepts/deep-quote.md", f"more than {MAX_NESTING} lists or quotes",
                                      _write("concepts/deep-quote.md", b"# Deep\n\n" + b">" * 10_000 + b" x\n")),
    "single 5 MB line": BadFile("concepts/one-line.md", "larger than",
                                _write("concepts/one-line.md", b"# One line\n\n" + b"word " * (2**20))),
    "line over the line limit": BadFile(
        "concepts/wide.md", f"a line longer than {LINE_LENGTH_LIMIT:,} characters ({2 * LINE_LENGTH_LIMIT:,})",
        _write("concepts/wide.md", b"# Wide\n\n" + b"w" * (2 * LINE_LENGTH_LIMIT) + b"\n")),
    "non-UTF-8 text": BadFile("concepts/latin1.md", "not valid UTF-8 (byte 0xe9 at offset 11, line 3)",
                              _write("concepts/latin1.md", "# Cafe\n\nCafé au lait.\n".encode("latin-1"))),
    "file gone while seeding": BadFile(VANISHING, "disappeared while seeding", _vanishing),
}


def _delete_vanishing(seeds: Path) -> Callable[[Path], None]:
    def hook(path: Path) -> None:
        if path == seeds / VANISHING:
            path.unlink()
    return hook


def _make_all(seeds: Path, outside: Path, kinds: list[str]) -> None:
    for kind in kinds:
        BAD_FILES[kind].make(seeds, outside)


@pytest.mark.parametrize("kind", list(BAD_FILES))
async def test_bad_file_refuses_the_seed_naming_it(
    kind: str, migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, tmp_path: Path,
    paragraph_chunker: Chunker,
) -> None:
    await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    before = await repo.corpus_fingerprint(migrated_pool)
    good = fixture_seeds / "concepts" / "workspace.md"  # a good edit waits for a good tree
    good.write_text(good.read_text() + "\nMore text.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    bad = BAD_FILES[kind]
    bad.make(fixture_seeds, outside)
    with before_each_read(_delete_vanishing(fixture_seeds)), pytest.raises(SeedError) as info:
        await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    reasons = {os.path.relpath(e.path, fixture_seeds): e.reason for e in info.value.errors}
    assert bad.path in reasons, reasons
    assert bad.reason in reasons[bad.path], reasons
    assert await repo.corpus_fingerprint(migrated_pool) == before


async def test_every_bad_file_at_once_is_listed_and_nothing_is_lost(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, tmp_path: Path, paragraph_chunker: Chunker,
) -> None:
    await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    before = await repo.corpus_fingerprint(migrated_pool)
    outside = tmp_path / "outside"
    outside.mkdir()
    _make_all(fixture_seeds, outside, list(BAD_FILES))
    with before_each_read(_delete_vanishing(fixture_seeds)), pytest.raises(SeedError) as info:
        await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    reasons = {os.path.relpath(e.path, fixture_seeds): e.reason for e in info.value.errors}
    expected = {b.path: b.reason for b in BAD_FILES.values()}
    # The loop's other half is reported too; every other reason is the one its kind expects.
    assert set(reasons) == {*expected, "concepts/loop-b.md"}, reasons
    assert all(expected[path] in reasons[path] for path in expected), reasons
    assert await repo.corpus_fingerprint(migrated_pool) == before

    # The bad files gone, the seed goes through.
    for kind in BAD_FILES:
        for path in (BAD_FILES[kind].path, "concepts/loop-b.md"):
            (fixture_seeds / path).unlink(missing_ok=True)
    report = await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    assert report.documents.inserted == 0 and report.documents.deleted == 0


@pytest.fixture
async def client(db_url: str, fixture_seeds: Path) -> AsyncIterator[Any]:
    async with AsyncTestClient(app=create_app(app_settings(db_url, fixture_seeds))) as c:
        await wait_until_ready(c, semantic=False)
        yield c


async def test_an_admin_seed_job_fails_listing_each_file(client: Any, fixture_seeds: Path, tmp_path: Path) -> None:
    before, fingerprint = (await client.get("/ready")).json(), await _fingerprint(client)
    outside = tmp_path / "outside"
    outside.mkdir()
    _make_all(fixture_seeds, outside, list(BAD_FILES))
    with before_each_read(_delete_vanishing(fixture_seeds)):
        job = await run_job(client, "/admin/seed", AUTH)
    assert job["state"] == "failed" and "previous corpus is still served" in job["error"], job
    listed = {os.path.relpath(item["file"], fixture_seeds): item["reason"] for item in job["result"]["rejected"]}
    assert {b.path for b in BAD_FILES.values()} <= set(listed), listed
    after = (await client.get("/ready")).json()
    assert (after["documents"], after["chunks"], after["corpus_version"]) == (
        before["documents"], before["chunks"], before["corpus_version"])
    assert VANISHING.rsplit("/", 1)[-1] in str(after["last_seed_error"])
    assert await _fingerprint(client) == fingerprint


async def _fingerprint(client: Any) -> str:
    """Over a connection of our own (the app's pool lives on the test client's event loop)."""
    conn = await asyncpg.connect(get_state(client.app.state).settings.database_url)
    try:
        return await repo.corpus_fingerprint(conn)  # type: ignore[arg-type]
    finally:
        await conn.close()
