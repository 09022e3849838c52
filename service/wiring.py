"""Builds the retrieval pipeline for the app and hooks it to corpus reloads.

Start-up: the glossary and synonyms are read (a malformed file stops
start-up), the embedding model directory is checked (a missing model stops
start-up with its path named), and the weights load in the background.
After every corpus reload: the keyword indexes are rebuilt in memory, then
chunks without a current vector are embedded (incremental indexing).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from service.decide.calibrated_policy import PORTABLE_CALIBRATION_FILE, load_calibration
from service.embedding.backends import load_embedder as load_backend
from service.embedding.backends import onnx_cache_dir
from service.embedding.batcher import QueryBatcher
from service.embedding.documents import document_embedder
from service.ingest.indexer import IndexReport, active_model, index_embeddings
from service.ingest.model_thread import on_model_thread
from service.ingest.tokens import default_model_dir, validate_model_dir
from service.normalize.lexicon import load_synonyms
from service.operations import Operations
from service.pipeline import Pipeline, SemanticLeg
from service.scoring.glossary import Glossary, load_glossary
from service.scoring.semantic import QueryEmbeddingCache
from service.state import AppState, CorpusSnapshot, DecisionStatus, SemanticStatus

log = logging.getLogger(__name__)

GLOSSARY_FILE = "core_concepts.yaml"
SYNONYMS_FILE = "synonyms.yaml"


def resolve_model_dir(configured: str | None) -> Path:
    """The model directory, checked now: a missing model fails start-up clearly."""
    return validate_model_dir(Path(configured).expanduser()) if configured else default_model_dir()


def build_pipeline(st: AppState, ops: Operations | None = None) -> tuple[Pipeline, SemanticStatus]:
    """Pipeline + semantic status; registers the corpus hook, `semantic` and `reindex` on `st`.

    With `ops`: flags come from the runtime flag store, the kill switch is the
    recorder and decides the effective phase, telemetry gets spans and metrics.
    """
    seeds = st.settings.seeds_dir
    glossary_file = seeds / GLOSSARY_FILE
    glossary = Glossary(tuple(load_glossary(glossary_file)) if glossary_file.exists() else ())
    synonyms = load_synonyms(seeds / SYNONYMS_FILE)
    status = SemanticStatus(
        model_dir=resolve_model_dir(st.settings.embedding_model), backend=st.flags.embedding.backend,
        cache_dir=onnx_cache_dir(st.settings.data_dir), threads=st.flags.embedding.threads,
    )
    if ops is None:
        pipeline = Pipeline(glossary=glossary, synonyms=synonyms, flags=lambda: st.flags)
    else:
        pipeline = Pipeline(
            glossary=glossary, synonyms=synonyms, flags=ops.store.flags,
            recorder=ops.kill_switch, router=ops.kill_switch.route,
            telemetry=ops.telemetry,
        )

    async def on_corpus_loaded(snapshot: CorpusSnapshot) -> None:
        await asyncio.to_thread(
            pipeline.load_corpus, snapshot.documents, snapshot.chunks, snapshot.version
        )
        await ensure_embeddings(st, pipeline, status)

    async def reindex(full: bool) -> IndexReport | None:
        if full and st.pool is not None:
            embedder = await load_embedder(status)
            # Marking the inputs stale makes every row pending without deleting it,
            # so phase 3 keeps answering from the current vectors meanwhile.
            await st.pool.execute(
                "update chunk_embeddings set input_hash = 'stale' where model = $1", embedder.model_name
            )
        return await ensure_embeddings(st, pipeline, status)

    st.on_corpus_loaded.append(on_corpus_loaded)
    st.semantic = status
    st.reindex = reindex
    pipeline.calibration, error = load_calibration()
    pipeline.portable_calibration, _ = load_calibration(PORTABLE_CALIBRATION_FILE)

    def policy() -> str:
        return pipeline.flags().decision.policy if pipeline.active_calibration() is not None else "seed_rules"

    def calibration() -> str | None:
        model = pipeline.active_calibration() or pipeline.calibration
        return model.version if model else None

    st.decision = DecisionStatus(
        policy=policy, calibration=calibration, error=lambda: error or pipeline.calibration_problem(),
    )
    return pipeline, status


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


async def ensure_embeddings(st: AppState, pipeline: Pipeline, status: SemanticStatus) -> IndexReport | None:
    """Embed chunks lacking a vector for the model; attach the semantic leg."""
    if st.pool is None:
        return None
    try:
        embedder = await load_embedder(status)
        status.indexing = True
        # Documents may go to an embedding server (EMBEDDING_REMOTE_URL); queries stay local.
        async with document_embedder(embedder, st.flags.embedding) as (documents, batch_size):
            report = await index_embeddings(
                st.pool, documents, batch_size=batch_size, progress=log.info,
                kinds=st.flags.semantic.representations,
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
    if pipeline.semantic is None:

        async def serving_model() -> str | None:
            return status.serving_model

        pipeline.semantic = SemanticLeg(
            embedder=QueryBatcher(embedder, lambda: pipeline.flags().embedding),
            cache=QueryEmbeddingCache(st.flags.embedding.query_cache_size),
            pool=lambda: st.pool,
            model=serving_model,
        )
    return report
