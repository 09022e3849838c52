"""What the running service holds in memory, kept on `app.state`.

The lead's retrieval pipeline reads `corpus` and rebuilds its indexes when
`corpus.version` changes; `on_corpus_loaded` hooks run after every reload.
Routes (service/api) reach start-up's work only through this module: the
seed (`AppState.reseed`), the phase 3 status (`semantic`) and the embedding
index (`reindex`, set by service/wiring.py), never by importing the wiring.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg

from service.db import repo
from service.decide.corpus_probes import CorpusProbes
from service.domain.types import Chunk, Document
from service.flags import Flags
from service.job_store import JobStore
from service.settings import Settings

if TYPE_CHECKING:
    from litestar.datastructures import State

    from service.db.embedded import EmbeddedPostgres
    from service.db.supervisor import DatabaseSupervisor
    from service.ingest.indexer import IndexReport
    from service.ingest.seeder import Chunker, SeedReport
    from service.relevance.model import RelevanceModel
    from service.scoring.semantic import SemanticLeg

log = logging.getLogger(__name__)

STATE_KEY = "service"


@dataclass(frozen=True)
class CorpusSnapshot:
    """An immutable view of the stored corpus; `version` 0 means never loaded."""

    documents: tuple[Document, ...] = ()
    chunks: tuple[Chunk, ...] = ()
    version: int = 0


@dataclass
class SemanticStatus:
    """What /ready and /admin report about phase 3."""

    model_dir: Path
    model_name: str | None = None
    loaded: bool = False
    indexing: bool = False
    last_index: IndexReport | None = None
    serving_model: str | None = None
    """The model queries use: the new one only once its vectors are complete."""
    error: str | None = None
    embedder: Any = None
    leg: SemanticLeg | None = None
    """Phase 3's semantic leg, once the model is loaded and its vectors exist (service/wiring.py)."""
    backend: str = "torch"
    """embedding.backend at start-up (service/embedding/backends.py)."""
    cache_dir: Path = Path(".data/models")
    """Where exported ONNX graphs are kept (beside the database's data)."""
    threads: int = 0
    """embedding.threads at start-up (0: sized to the cores)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass
class DecisionStatus:
    """What /ready reports about the answer / clarify / no-match rule."""

    policy: Callable[[], str] = lambda: "seed_rules"
    """The rule in force now (`decision.policy`; the seed rules when no fitted file loaded)."""
    calibration: Callable[[], str | None] = lambda: None
    """The version of the fit in use (the corpus's own, or the portable one), else of the
    corpus's own file that does not fit the served pages."""
    error: Callable[[], str | None] = lambda: None
    """Why the fitted file is not in use (not loaded, or fitted on other pages)."""
    failure: Callable[[], str | None] = lambda: None
    """The part of `error` that is a failure: the corpus's own fit could not be loaded or read
    (a fit made on other pages is no failure: the portable fit or the seed rules decide)."""
    source: Callable[[], str | None] = lambda: None
    """Where the fit in use comes from: `review` (learned from reviewed traffic, stored in
    PostgreSQL), `file` (the corpus's own fit file) or `portable` (service/learning)."""
    held_out: Callable[[], dict[str, Any] | None] = lambda: None
    """A fit from review: on how many reviewed queries it was fitted and its held-out figures."""
    self_check: Callable[[], CorpusProbes | None] = lambda: None
    """The served corpus's self-check (`decision.corpus_probes`; service/corpus_check.py)."""
    corpus_shift: Callable[[], float] = lambda: 0.0
    """The shift of phase 3's p the self-check gives now, in logits (0 at strength 0)."""


CorpusHook = Callable[[CorpusSnapshot], Awaitable[None]]
Say = Callable[[str], None]
"""How far a long piece of work is, in a line (a job's progress)."""
PoolHook = Callable[[str], Awaitable[None]]
"""Runs once the pool is open, with the DSN (e.g. the flag store's LISTEN loop)."""


@dataclass
class AppState:
    settings: Settings
    flags: Flags
    """The flags in force (start-up's, then every runtime change)."""
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
    semantic: SemanticStatus | None = None
    """Phase 3's model and index status (set by service/wiring.py)."""
    reindex: Callable[[bool, Say | None], Awaitable[IndexReport | None]] | None = None
    """Embed chunks lacking a vector (True: re-embed all), saying how far it is; None on
    failure (see `semantic.error`)."""
    decision: DecisionStatus = field(default_factory=DecisionStatus)
    """The decision policy and its fitted file (set by service/wiring.py)."""
    jobs: JobStore = field(init=False)
    """Long admin work (reindex, seed, decision fits) as jobs in PostgreSQL."""
    relevance: RelevanceModel | None = None
    """The relevance model, loaded at start-up where `relevance.enabled` (service/wiring.py)."""

    def __post_init__(self) -> None:
        self.jobs = JobStore(corpus=self.settings.seeds_dir.name)

    async def reseed(self, say: Say | None = None) -> SeedReport:
        """Seed from `settings.seeds_dir`, then reload the in-memory corpus.

        On a SeedError the database and the served corpus stay as they were.
        """
        from service.ingest.markdown import SeedError
        from service.ingest.seeder import SeedOptions, seed

        if self.pool is None or self.chunker is None:
            raise RuntimeError("database pool is not ready")
        async with self.seed_lock:
            if say is not None:
                say(f"seeding from {self.settings.seeds_dir.name}/")
            try:
                report = await seed(
                    self.pool, self.settings.seeds_dir, self.chunker, SeedOptions.from_flags(self.flags)
                )
            except (SeedError, FileNotFoundError) as err:
                self.last_seed_error = str(err)
                raise
            self.last_seed_report = report
            self.last_seed_error = None
            if say is not None:
                say("reloading the corpus and embedding what changed")
            await self.reload_corpus()
            return report

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
