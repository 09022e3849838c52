"""The one place the stages meet: converse → normalise → route → retrieve → decide → settle
→ curate → Outcome.

Tiers retrieve (service/tiers.py), the `Decider` decides (service/decide/decider.py); this
module runs the fallback chain 3 → 2 → 1 → Tier-1 cache → generic reply inside each tier's
time budget, and reports every attempt to the kill switch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import msgspec

from service.conversation import stage as conversation
from service.conversation.topic import topic_words
from service.db.errors import database_cause
from service.decide import clarify
from service.decide.calibration import pages_fingerprint
from service.decide.decider import Decider
from service.domain.candidates import Candidates
from service.domain.outcome import MAX_PHASE, FallbackStep, Outcome, Route, Tier
from service.domain.types import (
    Chunk,
    Decision,
    Document,
    Evidence,
    NormalizedQuery,
)
from service.embedding.batcher import EmbeddingQueueFull
from service.flags import Flags
from service.memory import release_free_memory
from service.normalize.lexicon import Synonyms, build_lexicon
from service.normalize.query import normalize_query
from service.respond import TierOutcome, generic, log_query, outcome_of
from service.routing.phases import PhaseRecorder, Router, starting_phase
from service.scoring.hybrid import HybridRetriever
from service.scoring.indexes import CorpusIndexes, build_indexes
from service.scoring.semantic import SemanticLeg, SemanticSearch
from service.scoring.tier1_cache import Tier1Cache
from service.telemetry import Telemetry, current_trace_id, optional_span
from service.tiers import (
    CacheTier,
    CorpusNotLoaded,
    HybridTier,
    KeywordTier,
    NoCacheEntry,
    TierContext,
    page_passage,
)

__all__ = ["Pipeline", "RetrieveParams", "SemanticLeg", "TierContext", "TierFaults", "TierOutcome"]


log = logging.getLogger("service.query")


@dataclass(frozen=True)
class RetrieveParams:
    """A validated request: the query is already trimmed and within limits."""

    query: str
    phase_cap: int | None = None
    top_k: int | None = None
    category: str | None = None
    conversation: conversation.Conversation | None = None
    """history / ui_context / reply_to (None: a single message, read on its own)."""


class Tiered(Protocol):
    async def run(self, ctx: TierContext) -> Candidates: ...


TierHook = Callable[[Tier, TierContext], Awaitable[None]]
Curate = Callable[[NormalizedQuery, Decision], tuple[Decision, list[str]]]
QueryObserver = Callable[[NormalizedQuery, Outcome], None]
"""Gets every answered request (the query log)."""


@dataclass
class TierFaults:
    """The fault tests' seam: `before_tier` runs inside each tier's time budget, before the
    tier (they make a phase really wait on the database with pg_sleep). None in service."""

    before_tier: TierHook | None = None


class Pipeline:
    """Holds the in-memory indexes and runs one request through the tiers. Built once, whole
    (service/wiring.py `build_pipeline`); `load_corpus` swaps the corpus in."""

    def __init__(
        self,
        *,
        cache: Tier1Cache,
        synonyms: Synonyms,
        flags: Callable[[], Flags],
        decider: Decider | None = None,
        semantic: Callable[[], SemanticSearch | None] = lambda: None,
        recorder: PhaseRecorder | None = None,
        router: Router | None = None,
        telemetry: Telemetry | None = None,
        curate: Curate | None = None,
        on_query: QueryObserver | None = None,
        faults: TierFaults | None = None,
    ) -> None:
        self.flags = flags
        self.router = router
        """The kill switch's `route` (None: the flags alone decide the phase)."""
        self.cache = cache
        self.synonyms = synonyms
        self.decider = decider or Decider()
        self.recorder = recorder
        self.telemetry = telemetry
        self.curate = curate
        """Operator pins and hides (service/curation); returns the decision and provenance lines."""
        self.on_query = on_query
        """Gets every answered request (the query log); must not block or raise."""
        self.faults = faults or TierFaults()
        self.indexes: CorpusIndexes | None = None
        self.anchors: Mapping[tuple[str, int], str] = {}
        """(doc_slug, chunk_index) → the chunk's heading anchor, for evidence."""
        # Normalises queries while no corpus is loaded (stopwords and synonyms only).
        self.empty_lexicon = build_lexicon(titles=[], keywords=[], texts=[], synonyms=synonyms)
        self.topic_words: frozenset[str] = frozenset()
        """Words that name a page's subject (title words, glossary terms, synonyms): a message
        with one has a topic of its own (service/conversation/topic.py)."""
        self.hybrid_tier = HybridTier(self.require_indexes, semantic, synonyms)
        self._tiers: dict[Tier, Tiered] = {
            Tier.phase3: self.hybrid_tier,
            Tier.phase2: KeywordTier(2, self.require_indexes),
            Tier.phase1: KeywordTier(1, self.require_indexes),
            Tier.cache: CacheTier(cache),
        }

    # -- corpus -----------------------------------------------------------
    def load_corpus(self, documents: Sequence[Document], chunks: Sequence[Chunk], version: int) -> None:
        """Swap in indexes of a new corpus (built first, then replaced atomically)."""
        self.indexes = build_indexes(
            documents, chunks, self.synonyms, version,
            extra_known_terms=[c.term for c in self.cache.concepts],
        )
        self.anchors = {(c.doc_slug, c.chunk_index): c.anchor for c in chunks if c.anchor}
        self.decider.serve_pages(pages_fingerprint(d.slug for d in documents))
        self.topic_words = topic_words(
            [*(d.title for d in documents), *(c.term for c in self.cache.concepts), *self.synonyms.words],
            stopwords=self.indexes.lexicon.stopwords,
        )
        release_free_memory()

    def require_indexes(self) -> CorpusIndexes:
        if self.indexes is None or self.indexes.empty:
            raise CorpusNotLoaded("no corpus loaded: the database has not been reachable yet")
        return self.indexes

    def hybrid(self) -> HybridRetriever:
        """Phase 3's retrieval over the current corpus (the lab's `eval` uses this too)."""
        return self.hybrid_tier.retriever()

    def normalise(self, text: str, flags: Flags) -> tuple[NormalizedQuery, list[str]]:
        indexes = self.indexes
        lexicon = self.empty_lexicon if indexes is None else indexes.lexicon
        query, notes = normalize_query(text, lexicon, flags.typo)
        notes.extend(
            f"typo: '{c.original}' → '{c.corrected}' (similarity {c.similarity:g})" for c in query.corrections
        )
        return query, notes

    def tiers(self, phase: int) -> list[tuple[Tier, Tiered]]:
        """The fallback chain from `phase` down: 3 → 2 → 1 → Tier-1 cache."""
        chain = [Tier.of_phase(p) for p in range(min(phase, MAX_PHASE), 0, -1)]
        return [(tier, self._tiers[tier]) for tier in (*chain, Tier.cache)]

    # -- request ----------------------------------------------------------
    async def run_request(self, params: RetrieveParams) -> Outcome:
        """Run with the flags in force now (file < env < overrides < kill switch)."""
        flags = self.flags()
        route = self.router(flags) if self.router else None
        return await self.run(params, flags, route)

    async def run(
        self, params: RetrieveParams, flags: Flags, route: Route | None = None, *, observe: bool = True
    ) -> Outcome:
        """Answer one request; never raises because a tier failed.

        `route` is the kill switch's verdict (None: no kill switch, the flags decide).
        `observe=False` (the golden replay) leaves no trace: no kill-switch samples,
        metrics or query log, so a replay can neither trip nor heal the switch.
        """
        started = time.perf_counter()
        with optional_span(self.telemetry, "retrieve") as root:
            outcome, kinds = await self._run(params, flags, route, started, observe)
            if root is not None:
                root.set_attribute("retrieval.status", outcome.status)
                root.set_attribute("retrieval.phase", outcome.phase)
        if self.telemetry is not None and observe:
            self.telemetry.observe(
                phase=outcome.phase, status=outcome.status, latency_ms=outcome.latency_ms,
                fallbacks=kinds, stats=outcome.stats,
            )
        return outcome

    async def _run(
        self, params: RetrieveParams, flags: Flags, route: Route | None, started: float, observe: bool
    ) -> tuple[Outcome, list[tuple[Tier, str]]]:
        request_id = uuid.uuid4().hex
        phase, skipped = starting_phase(params.phase_cap or MAX_PHASE, flags, route)
        if phase == 0:
            outcome = generic("disabled", request_id, started, skipped, "disabled")
            return outcome, [(step.tier, "skipped") for step in skipped]
        resolution = self._converse(params)
        with optional_span(self.telemetry, "normalise"):
            query, notes = self.normalise(params.query if resolution is None else resolution.query, flags)
        flags = self.decider.with_points(flags)
        ctx = TierContext(
            query=query, notes=notes, category=params.category, flags=flags,
            top_k=params.top_k or flags.retrieval.default_top_k,
        )
        answered, fallback, kinds = await self._fall_back(ctx, phase, observe)
        fallback = [*skipped, *fallback]
        kinds = [(step.tier, "skipped") for step in skipped] + kinds
        if answered is not None and resolution is not None:
            answered, resolution = self._settle(answered, resolution, query, flags)
        if answered is not None:
            answered, curation_steps = self._curated(query, answered)
            fallback.extend(curation_steps)
        with optional_span(self.telemetry, "decide") as span:
            outcome = outcome_of(answered, ctx.top_k, tuple(fallback), request_id, started, self.anchors)
            if resolution is not None:
                outcome = msgspec.structs.replace(outcome, conversation=resolution.trace)
            if span is not None:
                span.set_attribute("retrieval.decision", outcome.status)
        if observe:
            log_query(query, outcome, current_trace_id(self.telemetry))
            if self.on_query is not None:
                self.on_query(query, outcome)
        return outcome, kinds

    async def _fall_back(
        self, ctx: TierContext, phase: int, observe: bool
    ) -> tuple[TierOutcome | None, list[FallbackStep], list[tuple[Tier, str]]]:
        """Each tier from `phase` down, in its time budget, until one answers."""
        fallback: list[FallbackStep] = []
        kinds: list[tuple[Tier, str]] = []
        flags = ctx.flags
        timeout = flags.timeouts.phase_ms / 1000
        for name, tier in self.tiers(phase):
            tier_started = time.perf_counter()
            with optional_span(self.telemetry, f"tier.{name}") as span:
                try:
                    answered = await asyncio.wait_for(self._attempt(name, tier, ctx), timeout=timeout)
                except TimeoutError as exc:  # the phase's budget, or the database's (DatabaseTimeout)
                    cause = database_cause(exc)
                    reason, kind = cause or f"timeout after {flags.timeouts.phase_ms} ms", "timeout"
                    # The phase's own budget running out is latency (an overloaded machine), so
                    # only a sustained p95 breach trips on it; a database timeout is an error.
                    self._record(name, tier_started, error=cause is not None, observe=observe,
                                 database=cause is not None)
                except NoCacheEntry as exc:
                    reason, kind = str(exc), "no_cache_entry"
                except EmbeddingQueueFull as exc:
                    # Load shed on purpose: not a failure for the kill switch to count.
                    reason, kind = str(exc), "queue_full"
                except Exception as exc:  # a failing tier is passed over, never surfaced
                    cause = database_cause(exc)
                    # A database outage is expected and named; a traceback only for the unexpected.
                    log.warning("tier %s failed: %s", name, cause or exc,
                                exc_info=cause is None and not isinstance(exc, CorpusNotLoaded))
                    reason, kind = cause or f"{type(exc).__name__}: {exc}", type(exc).__name__
                    self._record(name, tier_started, error=True, observe=observe, database=cause is not None)
                else:
                    self._record(name, tier_started, error=False, observe=observe)
                    return answered, fallback, kinds
                fallback.append(FallbackStep(tier=name, reason=reason))
                kinds.append((name, kind))
                if span is not None and self.telemetry is not None:
                    self.telemetry.mark_error(span, kind)
        return None, fallback, kinds

    async def _attempt(self, name: Tier, tier: Tiered, ctx: TierContext) -> TierOutcome:
        """One tier: retrieve, then decide (both inside the tier's time budget)."""
        if self.faults.before_tier is not None:
            await self.faults.before_tier(name, ctx)
        candidates = await tier.run(ctx)
        decided = self.decider.decide(candidates, ctx.query, ctx.flags)
        return TierOutcome(name, decided.decision, candidates, decided.signals)

    # -- after the decision: the conversation's say, then the operator's curations ---------
    def _converse(self, params: RetrieveParams) -> conversation.Resolution | None:
        """The text to search, given the earlier turns, the screen or the clarification replied to."""
        if params.conversation is None:
            return None
        indexes = self.indexes
        lexicon = self.empty_lexicon if indexes is None else indexes.lexicon
        topics = self.topic_words

        def foreign(word: str) -> bool:
            return len(word) > 2 and word not in lexicon.stopwords and word not in lexicon.vocabulary \
                and word.removesuffix("s") not in lexicon.vocabulary and word not in topics

        return conversation.resolve(params.query, params.conversation,
                                    has_topic=topics.__contains__, foreign=foreign)

    def _settle(
        self, answered: TierOutcome, resolution: conversation.Resolution, query: NormalizedQuery, flags: Flags
    ) -> tuple[TierOutcome, conversation.Resolution]:
        def on_page(slug: str) -> Evidence | None:
            return self._page_evidence(slug, answered, query, flags)

        decision, resolution = conversation.settle(answered.decision, resolution, on_page, _TEXTS)
        return dataclasses.replace(answered, decision=decision), resolution

    def _curated(self, query: NormalizedQuery, answered: TierOutcome) -> tuple[TierOutcome, list[FallbackStep]]:
        """Operator curations (service/curation): each one that changed the answer is named."""
        if self.curate is None:
            return answered, []
        curated, notes = self.curate(query, answered.decision)
        if not notes:
            return answered, []
        return dataclasses.replace(answered, decision=curated), [
            FallbackStep(tier=Tier.curation, reason=note) for note in notes
        ]

    def _page_evidence(self, slug: str, answered: TierOutcome, query: NormalizedQuery, flags: Flags) -> Evidence | None:
        """A page's best passage for the searched question: from the tier's ranking, else its own units."""
        best = next((e for e in answered.candidates.ranking if e.doc_slug == slug), None)
        if best is not None or self.indexes is None or slug not in self.indexes.documents_by_slug:
            return best
        title = self.normalise(self.indexes.documents_by_slug[slug].title, flags)[0]
        return page_passage(self.indexes, answered.phase, slug, (*query.tokens, *title.tokens), flags)

    def _record(self, tier: Tier, started: float, error: bool, observe: bool, database: bool = False) -> None:
        if self.recorder is not None and observe and tier is not Tier.cache:
            self.recorder.record(tier, (time.perf_counter() - started) * 1000, error, database)


_TEXTS = conversation.Texts(no_match=clarify.NO_MATCH, suggest=(
    lambda title: clarify.SINGLE_LOW_CONFIDENCE.format(top_a=title)), choose=clarify.choose)
