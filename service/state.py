"""What the running service holds in memory, kept on `app.state`.

The lead's retrieval pipeline reads `corpus` and rebuilds its indexes when
`corpus.version` changes; `on_corpus_loaded` hooks run after every reload.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import asyncpg

from service.db import repo
from service.domain.types import Chunk, Document
from service.settings import Settings

if TYPE_CHECKING:
    from litestar.datastructures import State

    from service.db.embedded import EmbeddedPostgres
    from service.db.supervisor import DatabaseSupervisor
    from service.ingest.seeder import Chunker, SeedReport

log = logging.getLogger(__name__)

STATE_KEY = "service"


@dataclass(frozen=True)
class CorpusSnapshot:
    """An immutable view of the stored corpus; `version` 0 means never loaded."""

    documents: tuple[Document, ...] = ()
    chunks: tuple[Chunk, ...] = ()
    version: int = 0


CorpusHook = Callable[[CorpusSnapshot], Awaitable[None]]
PoolHook = Callable[[str], Awaitable[None]]
"""Runs once the pool is open, with the DSN (e.g. the flag store's LISTEN loop)."""


@dataclass
class AppState:
    settings: Settings
    flags: Any = None
    """`service.flags.Flags` loaded at start-up (Any keeps this module import-light)."""
    chunker: Chunker | None = None
    expected_migration: int = 0
    """Newest migration on disk; /ready wants the database at least there."""
    pool: asyncpg.Pool[Any] | None = None
    """None while the database is not up (yet)."""
    embedded: EmbeddedPostgres | None = None
    database: DatabaseSupervisor | None = None
    """Starts, watches and restarts the database (`service.db.supervisor`)."""
    corpus: CorpusSnapshot = field(default_factory=CorpusSnapshot)
    on_corpus_loaded: list[CorpusHook] = field(default_factory=list)
    on_pool_ready: list[PoolHook] = field(default_factory=list)
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    not_ready_reason: str | None = "starting"
    """Why /ready answers 503; None once the corpus is loaded."""
    last_seed_report: SeedReport | None = None
    last_seed_error: str | None = None
    fatal_error: str | None = None
    """Set when start-up cannot succeed; `request_shutdown` then stops the server."""
    request_shutdown: Callable[[], None] | None = None
    seed_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Serialises seeds inside this process (the DB lock covers other processes)."""

    async def reload_corpus(self) -> CorpusSnapshot:
        """Load the corpus from the database, publish it, run the hooks."""
        if self.pool is None:
            raise RuntimeError("database pool is not ready")
        documents = await repo.load_documents(self.pool)
        chunks = await repo.load_chunks(self.pool)
        snapshot = CorpusSnapshot(
            documents=tuple(documents), chunks=tuple(chunks), version=self.corpus.version + 1
        )
        self.corpus = snapshot
        for hook in self.on_corpus_loaded:
            await hook(snapshot)
        log.info("corpus v%d loaded: %d documents, %d chunks",
                 snapshot.version, len(documents), len(chunks))
        return snapshot

    def fail(self, message: str) -> None:
        """Start-up cannot succeed: record why and ask the server to exit."""
        log.error("fatal: %s", message)
        self.fatal_error = message
        self.not_ready_reason = message
        if self.request_shutdown is not None:
            self.request_shutdown()


def get_state(state: State) -> AppState:
    """The AppState inside Litestar's `app.state` / injected `state`."""
    value = state[STATE_KEY]
    assert isinstance(value, AppState)
    return value
