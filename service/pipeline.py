"""The one place the stages are wired: normalise → route → score → decide → respond."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import msgspec

from service.conversation import stage as conversation
from service.conversation.topic import topic_words
from service.db.errors import database_cause
from service.decide import clarify
from service.decide.calibrated_policy import (
    SemanticView,
    calibrated_decision,
    multi_intent_on,
    top_page,
)
from service.decide.calibration import (
    CERTAIN_REASONS,
    CalibrationModel,
    decision_signals,
    multi_intent_pages,
    order_of,
    pages_fingerprint,
)
from service.decide.hybrid_policy import decide_hybrid
from service.decide.policy import MULTI_INTENT_DEPTH, decide, decide_multi_intent
from service.domain.outcome import MAX_PHASE, FallbackStep, Outcome, Route, Status, Tier
from service.domain.signals import DecisionSignals
from service.domain.types import (
    Answer,
    Chunk,
    Clarify,
    Decision,
    Document,
    Evidence,
    NoMatch,
    NormalizedQuery,
    Thresholds,
)
from service.embedding.batcher import EmbeddingQueueFull
from service.flags import Flags
from service.memory import release_free_memory
from service.normalize.lexicon import Synonyms, build_lexicon
from service.normalize.query import normalize_query
from service.scoring.chunks import dedupe_per_document
from service.scoring.glossary import Glossary
from service.scoring.hybrid import HybridCandidates, HybridRetriever
from service.scoring.indexes import CorpusIndexes, build_indexes
from service.scoring.keyword import KeywordIndex
from service.scoring.semantic import SemanticLeg, SemanticSearch

__all__ = ["Pipeline", "RetrieveParams", "SemanticLeg", "TierContext", "TierOutcome"]

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from service.telemetry import Telemetry

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


@dataclass(frozen=True)
class TierOutcome:
    tier: Tier
    phase: int
    decision: Decision
    stats: dict[str, float | int] = field(default_factory=dict)
    candidates: HybridCandidates | None = None
    """Phase 3's fused ranking and signals (None for the other tiers)."""
    signals: DecisionSignals | None = None
    """What the decision was made from, whichever policy made it."""
    explained: Callable[[Evidence], Evidence] | None = None
    """Adds snippet and `match_explain` to the evidence shown (phases 2 and 3 rank and
    decide on numbers: building text for every candidate was most of their CPU)."""


class CorpusNotLoaded(RuntimeError):
    """No corpus in memory yet (the database has not been reachable)."""


class NoCacheEntry(LookupError):
    """The Tier-1 cache has nothing for this query."""


@dataclass
class TierContext:
    """What every tier gets: the normalised query and the request's knobs."""

    query: NormalizedQuery
    notes: list[str]
    params: RetrieveParams
    flags: Flags
    top_k: int


TierFn = Callable[[TierContext], Awaitable[TierOutcome]]
TierHook = Callable[[Tier, TierContext], Awaitable[None]]
Router = Callable[[Flags], Route]
Curate = Callable[[NormalizedQuery, Decision], tuple[Decision, list[str]]]
QueryObserver = Callable[[NormalizedQuery, Outcome, str, str, dict[str, float | int]], None]
"""(query, outcome, decision reason, tier, tier stats) of one answered request."""


class PhaseRecorder(Protocol):
    """Receives one (phase, latency, error) sample per tier attempt (the kill-switch monitor)."""

    def record(self, tier: Tier, latency_ms: float, error: bool, database: bool = False) -> None: ...


def keyword_decision_for(
    index: KeywordIndex,
    ctx: TierContext,
    thresholds: Thresholds,
    max_per_doc: int | None,
    results: list[Evidence] | None = None,
    *,
    calibration: CalibrationModel | None = None,
    phase: int = 0,
    is_stub: Callable[[str], bool] | None = None,
) -> tuple[Decision, dict[str, float | int], DecisionSignals, Callable[[Evidence], Evidence] | None]:
    """Phases 1 and 2: search the whole query (and each intent), then decide.

    `calibration` with `decision.policy: calibrated` decides from p at `phase`;
    otherwise the seed rules.  Multi-intent answers come from the part searches either way.
    Returns the decision, stats, the decision signals of the ranking, and (when it searched)
    what adds the text to the evidence shown.
    """
    pool = ctx.flags.retrieval.candidate_pool
    category = ctx.params.category
    explained = None
    if results is None:
        hits = index.search_unexplained(
            ctx.query.tokens, category=category, limit=pool, notes=ctx.notes, lexical=ctx.flags.lexical,
        )
        results, explained = hits.results, hits.explained
    trimmed = 0
    if max_per_doc is not None and not ctx.query.is_multi_intent:
        results, trimmed = dedupe_per_document(results, max_per_doc)
    stats: dict[str, float | int] = {
        "matched_units": len(results),
        "total_units": len(index.units),
        "deduplicated": trimmed,
        "top_score": results[0].score if results else 0.0,
    }
    seed = decide(results, ctx.query, thresholds, is_stub=is_stub)
    signals = msgspec.structs.replace(decision_signals(ctx.query, results), keyword_reason=seed.reason)
    calibrated = calibration is not None and ctx.flags.decision.policy == "calibrated"
    if ctx.query.is_multi_intent:
        # Multi-intent looks only at the head of each part's ranking.
        parts = [
            index.search(p, category=category, limit=2 * MULTI_INTENT_DEPTH, notes=ctx.notes, lexical=ctx.flags.lexical)
            for p in ctx.query.parts
        ]
        signals = msgspec.structs.replace(signals, parts=tuple(
            part_signals(part_query(ctx.query, tokens), ranking, thresholds)
            for tokens, ranking in zip(ctx.query.parts, parts, strict=True)
        ))
        multi = decide_multi_intent(parts, ctx.query, thresholds)
        if multi is not None and calibrated:
            multi = sure_first(calibration, ctx.flags, phase, multi, signals)
        if multi is not None:
            # The parts' pages with their evidence from the whole query's ranking: one scale,
            # in the order of its scores, as every other answer.
            return multi_intent_on(results, multi), stats, signals, explained
    if calibrated and calibration is not None and seed.reason not in CERTAIN_REASONS:
        decision = calibrated_decision(calibration, ctx.flags.decision, phase, ctx.query, results, signals.features)
        return decision, stats, signals, explained
    return seed, stats, signals, explained


def stub_pages(indexes: CorpusIndexes, flags: Flags) -> Callable[[str], bool]:
    """Pages with less text than the fusion's short-page floor (`fusion.short_page_chars`)."""
    floor = flags.fusion.short_page_chars
    return lambda slug: indexes.page_chars(slug) < floor


def part_query(query: NormalizedQuery, tokens: tuple[str, ...]) -> NormalizedQuery:
    """One part of a multi-intent query as a query of its own (for its decision signals)."""
    return msgspec.structs.replace(query, tokens=tokens, phrase=" ".join(tokens), parts=(), is_multi_intent=False)


def part_signals(query: NormalizedQuery, ranking: list[Evidence], thresholds: Thresholds) -> DecisionSignals:
    """A multi-intent part's signals, with the seed rules' reason on its ranking."""
    return msgspec.structs.replace(decision_signals(query, ranking), keyword_reason=decide(ranking, query, thresholds).reason)


def sure_first(
    model: CalibrationModel | None, flags: Flags, phase: int, multi: Answer, signals: DecisionSignals
) -> Answer | None:
    """The multi-intent answer with the pages its parts are sure of first among its options (its
    results stay in the order of their scores), or None when it does not stand under the
    calibrated check (`calibration.multi_intent_pages`)."""
    if model is None:
        return multi
    order = multi_intent_pages(
        model.phases[str(phase)], flags.decision.at(phase), [e.doc_slug for e in multi.results], signals.parts,
    )
    if order is None:
        return None
    place = order_of(order)  # the results stay in the order of their scores
    return msgspec.structs.replace(multi, options=tuple(sorted(multi.options, key=lambda o: place(o.doc_slug))))


class Pipeline:
    """Holds the in-memory indexes and runs one request through the tiers."""

    def __init__(
        self,
        *,
        glossary: Glossary,
        synonyms: Synonyms,
        flags: Callable[[], Flags],
        recorder: PhaseRecorder | None = None,
        router: Router | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.flags = flags
        self.router = router
        """The kill switch's `route` (None: the flags alone decide the phase)."""
        self.glossary = glossary
        self.synonyms = synonyms
        self.recorder = recorder
        self.telemetry = telemetry
        self.tier_hook: TierHook | None = None
        """Runs inside each tier's time budget before the tier itself: the fault
        tests use it to make a phase really wait on the database (pg_sleep)."""
        self.indexes: CorpusIndexes | None = None
        self.anchors: Mapping[tuple[str, int], str] = {}
        """(doc_slug, chunk_index) → the chunk's heading anchor, for evidence."""
        self.semantic: SemanticSearch | None = None
        self.calibration: CalibrationModel | None = None
        """The corpus's own fitted decision (used when `decision.policy` is `calibrated`)."""
        self.portable_calibration: CalibrationModel | None = None
        """The portable fit: `calibrated` on a corpus the own fit was not made on."""
        self.served_pages = ""
        """`pages_fingerprint` of the loaded corpus."""
        self.curate: Curate | None = None
        """Operator pins and hides (service/curation); returns the decision and provenance lines."""
        self.on_query: QueryObserver | None = None
        """Gets every answered request (the query log); must not block or raise."""
        # Normalises queries while no corpus is loaded (stopwords and synonyms only).
        self.empty_lexicon = build_lexicon(titles=[], keywords=[], texts=[], synonyms=synonyms)
        self.topic_words: frozenset[str] = frozenset()
        """Words that name a page's subject (title words, glossary terms, synonyms): a message
        with one has a topic of its own (service/conversation/topic.py)."""

    # -- corpus -----------------------------------------------------------
    def load_corpus(self, documents: Sequence[Document], chunks: Sequence[Chunk], version: int) -> None:
        """Swap in indexes of a new corpus (built first, then replaced atomically)."""
        self.indexes = build_indexes(
            documents, chunks, self.synonyms, version,
            extra_known_terms=[c.term for c in self.glossary.concepts],
        )
        self.anchors = {(c.doc_slug, c.chunk_index): c.anchor for c in chunks if c.anchor}
        self.served_pages = pages_fingerprint(d.slug for d in documents)
        self.topic_words = topic_words(
            [*(d.title for d in documents), *(c.term for c in self.glossary.concepts), *self.synonyms.words],
            stopwords=self.indexes.lexicon.stopwords,
        )
        release_free_memory()

    def active_calibration(self) -> CalibrationModel | None:
        """The fit that decides under `calibrated`: the corpus's own when it was fitted on the
        served pages, else the portable one (fitted without corpus-scaled signals), else none
        (the seed rules decide)."""
        for model in (self.calibration, self.portable_calibration):
            if model is not None and model.fits(self.served_pages):
                return model
        return None

    def calibration_problem(self) -> str | None:
        model = self.calibration
        if model is None or model.fits(self.served_pages):
            return None
        instead = self.active_calibration()
        then = (f"the portable fit {instead.version} decides" if instead is not None
                else "the seed rules decide")
        return (f"calibration {model.version} was fitted on the pages of corpus {model.corpus!r}, not on the "
                f"served ones: {then}; fit this corpus with `python -m service fit-decisions`")

    def require_indexes(self) -> CorpusIndexes:
        if self.indexes is None or self.indexes.empty:
            raise CorpusNotLoaded("no corpus loaded: the database has not been reachable yet")
        return self.indexes

    def normalise(self, text: str, flags: Flags) -> tuple[NormalizedQuery, list[str]]:
        indexes = self.indexes
        lexicon = self.empty_lexicon if indexes is None else indexes.lexicon
        query, notes = normalize_query(text, lexicon, flags.typo)
        notes.extend(
            f"typo: '{c.original}' → '{c.corrected}' (similarity {c.similarity:g})" for c in query.corrections
        )
        return query, notes

    # -- tiers ------------------------------------------------------------
    async def phase1(self, ctx: TierContext) -> TierOutcome:
        indexes = self.require_indexes()
        decision, stats, signals, explained = keyword_decision_for(
            indexes.documents, ctx, ctx.flags.phases.for_phase(1), max_per_doc=None,
            calibration=self.active_calibration(), phase=1, is_stub=stub_pages(indexes, ctx.flags),
        )
        return TierOutcome(Tier.phase1, 1, decision, stats, signals=signals, explained=explained)

    async def phase2(self, ctx: TierContext) -> TierOutcome:
        indexes = self.require_indexes()
        if not indexes.chunks.units:
            raise CorpusNotLoaded("no chunks in memory")
        decision, stats, signals, explained = keyword_decision_for(
            indexes.chunks, ctx, ctx.flags.phases.for_phase(2),
            max_per_doc=ctx.flags.retrieval.max_chunks_per_doc, calibration=self.active_calibration(), phase=2,
            is_stub=stub_pages(indexes, ctx.flags),
        )
        return TierOutcome(Tier.phase2, 2, decision, stats, signals=signals, explained=explained)

    def hybrid(self) -> HybridRetriever:
        """Phase 3's retrieval over the current corpus (`eval` uses this too)."""
        indexes = self.require_indexes()
        if self.semantic is None:
            raise LookupError("no embedding model loaded")
        return HybridRetriever(indexes, self.semantic, self.synonyms)

    async def phase3(self, ctx: TierContext) -> TierOutcome:
        """Hybrid retrieval (scoring/hybrid.py), then the hybrid decision."""
        retriever = self.hybrid()
        flags = ctx.flags
        keyword_decision: list[tuple[Decision, DecisionSignals]] = []

        def decide_keyword(keyword: list[Evidence]) -> None:
            # Runs while the query is being embedded (the seed rules' view of the keyword leg).
            decision, _, keyword_signals, _ = keyword_decision_for(
                retriever.indexes.chunks, ctx, flags.phases.for_phase(3),
                flags.retrieval.max_chunks_per_doc, keyword, is_stub=stub_pages(retriever.indexes, flags),
            )
            keyword_decision.append((decision, keyword_signals))

        candidates = await retriever.retrieve(
            ctx.query, flags, category=ctx.params.category, notes=ctx.notes, while_embedding=decide_keyword,
        )
        seed_keyword, keyword_signals = keyword_decision[0]
        signals = msgspec.structs.replace(
            self.hybrid_signals(ctx.query, candidates, flags), parts=keyword_signals.parts,
            keyword_reason=keyword_signals.keyword_reason,
        )
        model = self.active_calibration() if flags.decision.policy == "calibrated" else None
        decision: Decision
        if (
            isinstance(seed_keyword, Answer) and seed_keyword.reason == "multi_intent"
            and sure_first(model, flags, 2, seed_keyword, keyword_signals) is not None
        ):
            # Multi-intent stays (its parts are keyword searches: phase 2's model judges them),
            # with phase 3's scores: one scale for every phase-3 result.
            decision = multi_intent_on(candidates.fused, seed_keyword)
        elif model is not None and signals.keyword_reason == "out_of_domain":
            decision = NoMatch(message=clarify.NO_MATCH, reason="out_of_domain")
        elif model is not None and signals.keyword_reason not in CERTAIN_REASONS:
            decision = calibrated_decision(
                model, flags.decision, 3, ctx.query, candidates.fused, signals.features,
                keyword=self.keyword_ranking(ctx.query, candidates, flags),
            )
        else:
            decision = decide_hybrid(candidates.fused, seed_keyword, candidates.signal, ctx.query, flags.semantic)
        return TierOutcome(
            Tier.phase3, 3, decision, candidates.stats(), candidates, signals, explained=candidates.explained,
        )

    @staticmethod
    def keyword_ranking(query: NormalizedQuery, candidates: HybridCandidates, flags: Flags) -> list[Evidence]:
        """Phase 3's keyword leg as phase 2 would rank it (de-duplicated the same way)."""
        if query.is_multi_intent:
            return list(candidates.keyword)
        return dedupe_per_document(candidates.keyword, flags.retrieval.max_chunks_per_doc)[0]

    def hybrid_signals(self, query: NormalizedQuery, candidates: HybridCandidates, flags: Flags) -> DecisionSignals:
        """The decision signals of phase 3's fused ranking, with each page's best cosine."""
        page_similarity: dict[str, float] = {}
        for hit in candidates.hits:
            page_similarity[hit.doc_slug] = max(page_similarity.get(hit.doc_slug, 0.0), hit.similarity)
        view = SemanticView(signal=candidates.signal, pages=page_similarity)
        keyword_top = top_page(self.keyword_ranking(query, candidates, flags))
        return decision_signals(query, candidates.fused, view, keyword_top)

    async def cache(self, ctx: TierContext) -> TierOutcome:
        evidence = self.glossary.answer(ctx.query)
        if evidence is None:
            raise NoCacheEntry("not an explain-type question about a core concept")
        return TierOutcome(Tier.cache, 0, Answer(results=(evidence,), confidence=1.0, reason="tier1_cache"))

    def tiers(self, phase: int) -> list[tuple[Tier, TierFn]]:
        """The fallback chain from `phase` down: 3 → 2 → 1 → Tier-1 cache."""
        chain: list[tuple[Tier, TierFn]] = []
        if phase >= 3:
            chain.append((Tier.phase3, self.phase3))
        if phase >= 2:
            chain.append((Tier.phase2, self.phase2))
        chain.append((Tier.phase1, self.phase1))
        chain.append((Tier.cache, self.cache))
        return chain

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
        with self._span("retrieve") as root:
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
        caller = params.phase_cap or MAX_PHASE
        phase, skipped = _route(caller, flags, route)
        if phase == 0:
            outcome = _generic("disabled", request_id, started, skipped, "disabled")
            return outcome, [(step.tier, "skipped") for step in skipped]
        resolution = self._converse(params)
        with self._span("normalise"):
            query, notes = self.normalise(params.query if resolution is None else resolution.query, flags)
        model = self.active_calibration()
        if model is not None and flags.decision.policy == "calibrated":
            flags = msgspec.structs.replace(flags, decision=model.points(flags.decision))
        ctx = TierContext(
            query=query, notes=notes, params=params, flags=flags,
            top_k=params.top_k or flags.retrieval.default_top_k,
        )
        fallback: list[FallbackStep] = list(skipped)
        kinds: list[tuple[Tier, str]] = [(step.tier, "skipped") for step in skipped]
        answered: TierOutcome | None = None
        timeout = flags.timeouts.phase_ms / 1000
        for name, tier in self.tiers(phase):
            tier_started = time.perf_counter()
            with self._span(f"tier.{name}") as span:
                try:
                    answered = await asyncio.wait_for(self._call(name, tier, ctx), timeout=timeout)
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
                    break
                fallback.append(FallbackStep(tier=name, reason=reason))
                kinds.append((name, kind))
                if span is not None and self.telemetry is not None:
                    self.telemetry.mark_error(span, kind)
        # The candidates carry no text until shown: kept across a conversation's settling
        # and a curation, which may bring any of them into view.
        explained = answered.explained if answered is not None else None
        if answered is not None and resolution is not None:
            answered, resolution = self._settle(answered, resolution, query, flags)
        if answered is not None and self.curate is not None:
            # Operator curations (service/curation): after retrieval, before the response;
            # each one that changed the answer is named in fallback_path.
            curated, curation_notes = self.curate(query, answered.decision)
            if curation_notes:
                answered = TierOutcome(
                    answered.tier, answered.phase, curated, answered.stats, signals=answered.signals,
                )
                fallback.extend(FallbackStep(tier=Tier.curation, reason=note) for note in curation_notes)
        with self._span("decide") as span:
            outcome = with_anchors(
                _outcome(answered, ctx, tuple(fallback), request_id, started, explained), self.anchors,
            )
            if resolution is not None:
                outcome = msgspec.structs.replace(outcome, conversation=resolution.trace)
            if span is not None:
                span.set_attribute("retrieval.decision", outcome.status)
        if observe:
            _log_query(query, outcome, self._trace_id())
            if self.on_query is not None:
                self.on_query(query, outcome, outcome.reason or "all_tiers_failed",
                              outcome.tier.value, outcome.stats)
        return outcome, kinds

    # -- conversation (service/conversation/stage.py) ----------------------
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
        if decision is answered.decision:
            return answered, resolution
        return TierOutcome(answered.tier, answered.phase, decision, answered.stats, answered.candidates), resolution

    def _page_evidence(self, slug: str, answered: TierOutcome, query: NormalizedQuery, flags: Flags) -> Evidence | None:
        """A page's best passage for the searched question: from the tier's ranking, else its own units."""
        ranked = answered.candidates.fused if answered.candidates is not None else list(answered.decision.results)
        best = next((e for e in ranked if e.doc_slug == slug), None)
        if best is not None or self.indexes is None:
            return best
        doc = self.indexes.documents_by_slug.get(slug)
        if doc is None:
            return None
        index = self.indexes.documents if answered.phase == 1 else self.indexes.chunks
        # The title's words reach every unit of the page; the question's words pick the passage.
        title_tokens = self.normalise(doc.title, flags)[0].tokens
        tokens = tuple(dict.fromkeys((*query.tokens, *title_tokens)))
        hits = index.search(tokens, limit=len(index.units), lexical=flags.lexical)
        return next((e for e in hits if e.doc_slug == slug), None)

    def _call(self, name: Tier, tier: TierFn, ctx: TierContext) -> Awaitable[TierOutcome]:
        hook = self.tier_hook
        if hook is None:
            return tier(ctx)

        async def hooked() -> TierOutcome:
            await hook(name, ctx)
            return await tier(ctx)

        return hooked()

    @contextlib.contextmanager
    def _span(self, name: str) -> Iterator[Span | None]:
        if self.telemetry is None:
            yield None
            return
        with self.telemetry.span(name) as span:
            yield span

    def _trace_id(self) -> str | None:
        if self.telemetry is None:
            return None
        from opentelemetry import trace

        return self.telemetry.trace_id(trace.get_current_span())

    def _record(self, tier: Tier, started: float, error: bool, observe: bool, database: bool = False) -> None:
        if self.recorder is not None and observe and tier is not Tier.cache:
            self.recorder.record(tier, (time.perf_counter() - started) * 1000, error, database)


_TEXTS = conversation.Texts(no_match=clarify.NO_MATCH, suggest=(
    lambda title: clarify.SINGLE_LOW_CONFIDENCE.format(top_a=title)))


def with_anchors(outcome: Outcome, anchors: Mapping[tuple[str, int], str]) -> Outcome:
    """Each chunk result with its heading's URL fragment (the UI opens that section)."""
    if not anchors or not outcome.results:
        return outcome
    results = tuple(
        msgspec.structs.replace(e, anchor=anchors.get((e.doc_slug, e.chunk_index), ""))
        if e.chunk_index is not None else e
        for e in outcome.results
    )
    return msgspec.structs.replace(outcome, results=results)


def _route(caller: int, flags: Flags, route: Route | None) -> tuple[int, tuple[FallbackStep, ...]]:
    """The phase to start from, and a step naming why for every phase skipped below
    the caller's: the flags (`phase`, `enabled`) or the kill switch (`route.reason`)."""
    configured = flags.phase if flags.enabled else 0
    allowed = configured if route is None else min(route.phase, configured)
    phase = min(caller, allowed)
    steps: list[FallbackStep] = []
    for skipped in range(caller, phase, -1):
        if skipped > configured:
            why = f"flags: phase {flags.phase}" if flags.enabled else "flags: retrieval disabled"
        else:
            why = (route.reason if route is not None else None) or "kill switch"
        steps.append(FallbackStep(tier=Tier.of_phase(skipped), reason=why))
    return phase, tuple(steps)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _generic(
    status: Status, request_id: str, started: float, fallback: tuple[FallbackStep, ...], reason: str
) -> Outcome:
    return Outcome(
        status=status, message=clarify.GENERIC, decision=None, results=(), tier=Tier.generic, phase=0,
        fallback_path=fallback, request_id=request_id, latency_ms=_elapsed_ms(started), reason=reason,
    )


def _outcome(
    answered: TierOutcome | None,
    ctx: TierContext,
    fallback: tuple[FallbackStep, ...],
    request_id: str,
    started: float,
    explained: Callable[[Evidence], Evidence] | None = None,
) -> Outcome:
    """`explained` completes the evidence shown (snippets are built only for those)."""
    if answered is None:
        return _generic("no_match", request_id, started, fallback, "all_tiers_failed")
    decision = answered.decision
    if explained is not None and decision.results:
        shown = tuple(explained(e) for e in decision.results[: ctx.top_k])
        decision = msgspec.structs.replace(decision, results=(*shown, *decision.results[ctx.top_k :]))
    status: Status
    match decision:
        case Answer():
            status = "answer"
        case Clarify():
            status = "clarify"
        case NoMatch():
            status = "no_match"
    return Outcome(
        status=status, message=decision.message, decision=decision, results=decision.results[: ctx.top_k],
        tier=answered.tier, phase=answered.phase, fallback_path=fallback, request_id=request_id,
        latency_ms=_elapsed_ms(started), stats=answered.stats, reason=decision.reason,
        signals=answered.signals,
    )


def _log_query(query: NormalizedQuery, outcome: Outcome, trace_id: str | None = None) -> None:
    """One structured record per call (seed plan: "Logging per query")."""
    if not log.isEnabledFor(logging.INFO):
        return
    record = {
        "event": "retrieve",
        "request_id": outcome.request_id,
        "trace_id": trace_id,
        "query": query.raw,
        "tokens": list(query.tokens),
        "query_type": query.query_type,
        "corrections": [msgspec.to_builtins(c) for c in query.corrections],
        "top": [
            {"slug": e.doc_slug, "chunk": e.chunk_index, "score": round(e.score, 4), "matched_terms": list(e.matched_terms)}
            for e in outcome.results[:3]
        ],
        "confidence": outcome.confidence,
        "action": outcome.status,
        "reason": outcome.reason,
        "latency_ms": outcome.latency_ms,
        "phase": outcome.phase,
        "tier": outcome.tier.value,
        "fallback": [f"{s.tier}: {s.reason}" for s in outcome.fallback_path],
        "stats": outcome.stats,
    }
    log.info(json.dumps(record, ensure_ascii=False))
