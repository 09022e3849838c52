"""Idempotent seeding on a real PostgreSQL, including every kind of bad file."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from service.db import repo
from service.domain.types import Chunk, Document
from service.ingest.markdown import SeedError
from service.ingest.seeder import SeedCounts, seed

Chunker = Callable[[Document], list[Chunk]]
Dump = Callable[[Any], Awaitable[list[str]]]


async def _versions(pool: asyncpg.Pool[Any]) -> dict[str, tuple[int, Any]]:
    rows = await pool.fetch("select slug, version, updated_at from docs_knowledge")
    return {r["slug"]: (r["version"], r["updated_at"]) for r in rows}


async def test_first_seed_inserts_everything(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, paragraph_chunker: Chunker
) -> None:
    report = await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    assert report.documents == SeedCounts(inserted=3)
    assert report.chunks.inserted > 3 and report.chunks.updated == 0
    docs = {d.slug: d for d in await repo.load_documents(migrated_pool)}
    assert set(docs) == {"concepts/workspace", "widgets/quick-links", "actions/navigation"}
    assert all(d.version == 1 for d in docs.values())
    # No keywords in front matter: extracted automatically.
    assert "navigation" in docs["actions/navigation"].keywords
    # No summary in front matter: the first paragraph.
    assert docs["widgets/quick-links"].summary.startswith("The Quick Links widget")


async def test_seeding_twice_changes_nothing(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, paragraph_chunker: Chunker,
    table_dump: Dump,
) -> None:
    await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    before = await table_dump(migrated_pool)
    report = await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    assert report.documents == SeedCounts(unchanged=3)
    assert report.chunks.unchanged == len([r for r in before if r.startswith("c")])
    assert not report.changed
    assert await table_dump(migrated_pool) == before  # updated_at, ids, versions untouched


async def test_editing_one_document_bumps_only_its_version(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, paragraph_chunker: Chunker
) -> None:
    await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    before = await _versions(migrated_pool)
    path = fixture_seeds / "widgets" / "quick-links.md"
    path.write_text(path.read_text() + "\n## Sorting links\n\nDrag a link to reorder it.\n")
    report = await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    assert report.documents == SeedCounts(updated=1, unchanged=2)
    assert report.chunks.inserted == 2 and report.chunks.updated == 0
    after = await _versions(migrated_pool)
    assert after["widgets/quick-links"][0] == 2
    assert after["widgets/quick-links"][1] > before["widgets/quick-links"][1]
    for slug in ("concepts/workspace", "actions/navigation"):
        assert after[slug] == before[slug]


async def test_changed_paragraph_rewrites_only_that_chunk(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, paragraph_chunker: Chunker
) -> None:
    await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    path = fixture_seeds / "concepts" / "workspace.md"
    path.write_text(path.read_text().replace("top to switch", "top of the screen to switch"))
    report = await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    assert report.chunks.updated == 1 and report.chunks.inserted == 0
    assert report.chunks.deleted == 0


async def test_a_section_keeps_the_names_other_pages_link_to_it_by(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, paragraph_chunker: Chunker
) -> None:
    await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    path = fixture_seeds / "concepts" / "workspace.md"
    path.write_text(path.read_text() + "\nSwitch with [`navigation.open`](../actions/navigation.md).\n")
    report = await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    # The linking paragraph is new; the page it links to is rewritten only in the names it keeps.
    assert report.chunks.inserted == 1 and report.chunks.updated == 1, report.chunks
    linked = {(c.doc_slug, c.chunk_index): c.linked_names for c in await repo.load_chunks(migrated_pool)}
    first = min(index for slug, index in linked if slug == "actions/navigation")
    assert linked[("actions/navigation", first)] == ("navigation.open",)
    assert sum(bool(names) for names in linked.values()) == 1
    again = await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    assert again.chunks.updated == 0 and again.chunks.inserted == 0


async def test_removing_a_file_removes_its_row_and_chunks(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, paragraph_chunker: Chunker
) -> None:
    await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    n_chunks = len(paragraph_chunker(
        next(d for d in await repo.load_documents(migrated_pool) if d.slug == "actions/navigation")
    ))
    (fixture_seeds / "actions" / "navigation.md").unlink()
    report = await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    assert report.documents == SeedCounts(deleted=1, unchanged=2)
    assert report.chunks.deleted == n_chunks
    assert "actions/navigation" not in {d.slug for d in await repo.load_documents(migrated_pool)}
    assert all(c.doc_slug != "actions/navigation" for c in await repo.load_chunks(migrated_pool))


BAD_FILES: dict[str, tuple[str, bytes, str]] = {
    "broken front matter": (
        "concepts/broken.md", b"---\ntitle: [unclosed\ncategory: concepts\n---\nBody\n",
        "broken front matter",
    ),
    "no closing front matter": (
        "concepts/open.md", b"---\ntitle: Open\ncategory: concepts\nBody\n", "no closing '---'",
    ),
    # Issue 17: a missing title (→ first heading / file name), a new category
    # and a category other than the folder are valid now (tests/unit/test_ingest_rules.py).
    "broken YAML names its line": (
        "concepts/badyaml.md", b"---\ntitle: Fine\nkeywords: [a, b\nsummary: x\n---\nBody.\n",
        "(line 4)",
    ),
    "duplicate slug from the path": (
        "concepts/Workspace.md", b"---\ntitle: Another workspace\n---\nBody.\n",
        "duplicate slug 'concepts/workspace'",
    ),
    "duplicate slug": (
        "concepts/workspace-copy.md",
        b"---\ntitle: Copy\ncategory: concepts\nslug: concepts/workspace\n---\nBody.\n",
        "duplicate slug 'concepts/workspace'",
    ),
    "non-UTF-8": (
        "concepts/latin1.md", b"---\ntitle: Caf\xe9\ncategory: concepts\n---\nBody.\n",
        "not valid UTF-8",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
async def test_bad_file_fails_naming_it_and_changes_nothing(
    kind: str, migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path,
    paragraph_chunker: Chunker, table_dump: Dump,
) -> None:
    await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    # Also edit a good file: the failed seed must not apply that change either.
    good = fixture_seeds / "concepts" / "workspace.md"
    good.write_text(good.read_text() + "\nMore text.\n")
    before = await table_dump(migrated_pool)
    relpath, content, reason = BAD_FILES[kind]
    (fixture_seeds / relpath).write_bytes(content)
    with pytest.raises(SeedError) as info:
        await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    message = str(info.value)
    assert Path(relpath).name in message
    assert reason in message
    assert await table_dump(migrated_pool) == before


async def test_seed_killed_mid_transaction_keeps_previous_corpus(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, paragraph_chunker: Chunker,
    table_dump: Dump,
) -> None:
    """Cancel a seed after it has written inside its transaction: nothing is applied.

    The next corpus adds a page (an insert, the seed's first write), edits one
    (an update) and deletes one; a row lock on the edited page holds the seed
    at its update, after the insert, until it is cancelled.
    """
    await seed(migrated_pool, fixture_seeds, paragraph_chunker)
    before = await table_dump(migrated_pool)
    (fixture_seeds / "actions" / "navigation.md").unlink()
    page = fixture_seeds / "concepts" / "workspace.md"
    page.write_text(page.read_text() + "\nA new closing paragraph.\n")
    (fixture_seeds / "concepts" / "entry.md").write_text(
        "---\ntitle: Entry\ncategory: concepts\nkeywords: [entry]\n---\n# Entry\n\nAn entry owns workspaces.\n"
    )
    blocker = await migrated_pool.acquire()
    tx = blocker.transaction()
    await tx.start()
    await blocker.execute("select 1 from docs_knowledge where slug = 'concepts/workspace' for update")
    task = asyncio.create_task(seed(migrated_pool, fixture_seeds, paragraph_chunker))
    try:
        backend = await _backend_waiting_on_a_lock(migrated_pool, task)
        # It has written (a transaction id is assigned at the first write, not by the
        # advisory lock), and its insert is not visible outside its transaction.
        assert await migrated_pool.fetchval(
            "select backend_xid is not null from pg_stat_activity where pid = $1", backend)
        assert await migrated_pool.fetchval(
            "select count(*) from docs_knowledge where slug = 'concepts/entry'") == 0
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await tx.rollback()
        await migrated_pool.release(blocker)
    assert task.cancelled()
    assert await table_dump(migrated_pool) == before
    report = await seed(migrated_pool, fixture_seeds, paragraph_chunker)  # next seed completes
    counts = report.documents
    assert (counts.inserted, counts.updated, counts.deleted) == (1, 1, 1)


async def _backend_waiting_on_a_lock(pool: asyncpg.Pool[Any], task: asyncio.Task[Any]) -> int:
    """The pid of the backend (of this test's database) that waits on a lock; fails if the task ends first."""
    for _ in range(600):
        assert not task.done(), task
        pid = await pool.fetchval(
            "select pid from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()"
        )
        if pid:
            return int(pid)
        await asyncio.sleep(0.05)
    raise AssertionError("the seed never reached the locked row")


async def test_concurrent_seeds_serialize(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path, paragraph_chunker: Chunker
) -> None:
    reports = await asyncio.gather(
        *(seed(migrated_pool, fixture_seeds, paragraph_chunker) for _ in range(3))
    )
    inserted = sorted(r.documents.inserted for r in reports)
    assert inserted == [0, 0, 3]


async def test_real_chunker_is_idempotent(
    migrated_pool: asyncpg.Pool[Any], fixture_seeds: Path
) -> None:
    from service.ingest.seeder import default_chunker

    chunker = default_chunker()
    first = await seed(migrated_pool, fixture_seeds, chunker)
    assert first.chunks.inserted >= 3
    second = await seed(migrated_pool, fixture_seeds, chunker)
    assert not second.changed
