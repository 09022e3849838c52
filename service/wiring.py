"""Builds the retrieval pipeline for the app and hooks it to corpus reloads.

Start-up: the glossary and synonyms are read (a malformed file stops
start-up), the embedding model directory is checked (a missing model stops
start-up with its path named), and the weights load in the background. Where
`relevance.enabled`, the relevance model loads now (its hash checked first).
After every corpus reload: the keyword indexes are rebuilt in memory, then
chunks without a current vector are embedded (incremental indexing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from service.corpus_check import self_check
from service.db.pool import describe_error
from service.decide.decider import Decider
from service.embedding.backends import load_embedder as load_backend
from service.embedding.backends import onnx_cache_dir
from service.embedding.batcher import QueryBatcher
from service.embedding.documents import document_embedder
from service.embedding.vector_cache import Recomputing, kept_for
from service.flags import Flags
from service.ingest.indexer import IndexReport, KnownVectors, active_model, index_embeddings
from service.ingest.model_thread import on_model_thread
from service.ingest.tokens import default_model_dir, validate_model_dir
from service.normalize.lexicon import Synonyms, load_synonyms
from service.operations import Operations
from service.pipeline import Curate, Pipeline, QueryObserver, SemanticLeg, TierFaults
from service.relevance.model import MODEL_DIR, RelevanceModel
from service.scoring.semantic import QueryEmbeddingCache, SemanticSearch
from service.scoring.tier1_cache import Tier1Cache, load_glossary
from service.state import AppState, CorpusSnapshot, DecisionStatus, Say, SemanticStatus

log = logging.getLogger(__name__)

GLOSSARY_FILE = "core_concepts.yaml"
SYNONYMS_FILE = "synonyms.yaml"


def resolve_model_dir(configured: str | None) -> Path:
    """The model directory, checked now: a missing model fails start-up clearly."""
    return validate_model_dir(Path(configured).expanduser()) if configured else default_model_dir()


def read_corpus_files(seeds_dir: Path) -> tuple[Tier1Cache, Synonyms]:
    """The Tier-1 cache's glossary and the synonyms, beside the pages (a malformed file raises)."""
    glossary_file = seeds_dir / GLOSSARY_FILE
    cache = Tier1Cache(tuple(load_glossary(glossary_file)) if glossary_file.exists() else ())
    return cache, load_synonyms(seeds_dir / SYNONYMS_FILE)


def make_pipeline(
    seeds_dir: Path,
    flags: Callable[[], Flags],
    *,
    decider: Decider | None = None,
    semantic: Callable[[], SemanticSearch | None] = lambda: None,
    ops: Operations | None = None,
    curate: Curate | None = None,
    on_query: QueryObserver | None = None,
    faults: TierFaults | None = None,
) -> Pipeline:
    """The one factory of a `Pipeline`, whole: the service's (`build_pipeline`), eval-decisions'
    and the lab's. With `ops`: the kill switch records and routes, telemetry gets spans."""
    cache, synonyms = read_corpus_files(seeds_dir)
    return Pipeline(
        cache=cache, synonyms=synonyms, flags=flags, decider=decider or Decider.from_files(), semantic=semantic,
        recorder=ops.kill_switch if ops else None, router=ops.kill_switch.route if ops else None,
        telemetry=ops.telemetry if ops else None, curate=curate, on_query=on_query, faults=faults,
    )


def build_pipeline(
    st: AppState, ops: Operations, *, curate: Curate | None = None, on_query: QueryObserver | None = None,
    faults: TierFaults | None = None,
) -> Pipeline:
    """The service's pipeline; registers the corpus hook, `semantic`, `reindex` and `decision` on `st`."""
    status = SemanticStatus(
        model_dir=resolve_model_dir(st.settings.embedding_model), backend=st.flags.embedding.backend,
        cache_dir=onnx_cache_dir(st.settings.data_dir), threads=st.flags.embedding.threads,
    )
    decider = Decider.from_files()
    pipeline = make_pipeline(
        st.settings.seeds_dir, ops.store.flags, decider=decider, semantic=lambda: status.leg, ops=ops,
        curate=curate, on_query=on_query, faults=faults,
    )

    async def on_corpus_loaded(snapshot: CorpusSnapshot) -> None:
        await asyncio.to_thread(
            pipeline.load_corpus, snapshot.documents, snapshot.chunks, snapshot.version
        )
        await ensure_embeddings(st, pipeline, status)
        decider.use_self_check(None)  # figures of other pages say nothing about these
        if pipeline.flags().decision.corpus_probes:
            try:
                decider.use_self_check(await self_check(pipeline, snapshot, st.pool))
            except Exception as err:  # a check that fails leaves the corpus served, unshifted
                log.warning("corpus self-check failed: %s", describe_error(err))

    async def reindex(full: bool, say: Say | None = None) -> IndexReport | None:
        if full and st.pool is not None:
            if say is not None:
                say("loading the embedding model")
            embedder = await load_embedder(status)
            # Marking the inputs stale makes every row pending without deleting it,
            # so phase 3 keeps answering from the current vectors meanwhile.
            await st.pool.execute(
                "update chunk_embeddings set input_hash = 'stale' where model = $1", embedder.model_name
            )
        return await ensure_embeddings(st, pipeline, status, recompute=full, say=say)

    def calibration() -> str | None:
        # Named only where the policy in force reads a fit.
        model = decider.active_calibration() or decider.own
        return model.version if model else None

    if st.flags.relevance.enabled:
        st.relevance = load_relevance_model(st.settings.relevance_model or MODEL_DIR)
    st.on_corpus_loaded.append(on_corpus_loaded)
    st.semantic = status
    st.reindex = reindex
    st.decision = DecisionStatus(
        policy=lambda: decider.policy_in_force(pipeline.flags()).value, calibration=calibration,
        error=decider.calibration_problem, failure=lambda: decider.own_error,
        self_check=lambda: decider.self_check,
        corpus_shift=lambda: _corpus_shift(decider, pipeline.flags()),
    )
    return pipeline


def _both(say: Say | None) -> Say:
    if say is None:
        return log.info

    def both(line: str) -> None:
        log.info(line)
        say(line)

    return both


def load_relevance_model(model_dir: Path) -> RelevanceModel:
    """The relevance model, its files checked against its manifest (a mismatch stops start-up
    naming the file: RelevanceModelError). One thread: it would share the cores."""
    model = RelevanceModel(model_dir, threads=1)
    log.info("relevance model %s loaded", model.info.describe())
    return model


async def load_embedder(status: SemanticStatus) -> Any:
    """Load the model once (in a thread: torch import and weights take seconds)."""
    async with status.lock:
        if status.embedder is None:
            status.embedder = await on_model_thread(
                load_backend, status.backend, status.model_dir, status.cache_dir, status.threads
            )
            status.model_name = status.embedder.model_name
            status.loaded = True
    return status.embedder


async def ensure_embeddings(
    st: AppState, pipeline: Pipeline, status: SemanticStatus, recompute: bool = False, say: Say | None = None,
) -> IndexReport | None:
    """Embed chunks lacking a vector for the model; attach the semantic leg. `recompute`: the
    model embeds every pending input, kept vectors are not read (a full re-index). `say`: each
    step is also told there (a job's progress), besides the log."""
    if st.pool is None:
        return None
    try:
        embedder = await load_embedder(status)
        status.indexing = True
        # Documents may go to an embedding server (EMBEDDING_REMOTE_URL); queries stay local.
        async with document_embedder(embedder, st.flags.embedding) as (documents, batch_size):
            kept = kept_for(status.cache_dir, embedder, documents, st.flags.embedding.keep_vectors)
            known: KnownVectors | None = Recomputing(kept) if recompute and kept is not None else kept
            report = await index_embeddings(
                st.pool, documents, batch_size=batch_size, progress=_both(say),
                kinds=st.flags.semantic.representations, known=known,
            )
        status.last_index = report
        status.serving_model = await active_model(st.pool, embedder.model_name)
        status.error = None
        log.info("embeddings: %d embedded, %d reused (%s)", report.embedded, report.reused, report.model)
    except Exception as err:  # phase 3 stays off; phases 1-2 keep serving
        status.error = f"{type(err).__name__}: {err}"
        log.exception("embedding index failed; phase 3 falls back to phase 2")
        return None
    finally:
        status.indexing = False
    if status.leg is None:

        async def serving_model() -> str | None:
            return status.serving_model

        status.leg = SemanticLeg(
            embedder=QueryBatcher(embedder, lambda: pipeline.flags().embedding),
            cache=QueryEmbeddingCache(st.flags.embedding.query_cache_size),
            pool=lambda: st.pool,
            model=serving_model,
        )
    return report


def _corpus_shift(decider: Decider, flags: Flags) -> float:
    """The shift the corpus's self-check gives phase 3's p now (0 with no fit, no check, strength 0,
    or under the seed rules, where no p decides)."""
    model = decider.model_in_force(flags)
    return 0.0 if model is None else decider.corpus_shift(flags.decision, model)
