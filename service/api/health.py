"""`GET /health` (the process is alive) and `GET /ready` (it can serve)."""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

from litestar import Response, get
from litestar.datastructures import State
from litestar.openapi import ResponseSpec

from service.db import repo
from service.db.pool import describe_error
from service.db.supervisor import DatabaseStatus
from service.domain.types import Base
from service.operations import OPS_KEY, Operations
from service.scoring.semantic import searched_exactly
from service.state import DecisionStatus, get_state

READY_QUERY_TIMEOUT_S = 2.0


class Health(Base, frozen=True):
    status: str


class RelevanceModelInfo(Base, frozen=True):
    """The relevance model in use (`relevance.enabled`): its file, sha256 prefix, layers."""

    file: str
    sha256: str
    layers: int
    max_length: int
    precision: str


class Ready(Base, frozen=True):
    ready: bool
    documents: int
    chunks: int
    migrations: int
    corpus_version: int
    last_seed_error: str | None = None
    semantic_ready: bool = False
    """Phase 3 can answer: the model is loaded and its vectors are complete."""
    embedding_model: str | None = None
    semantic_error: str | None = None
    database: DatabaseStatus | None = None
    """Supervision: mode, state, restarts of the embedded server and the last one."""
    decision_policy: str = "seed_rules"
    """The answer / clarify / no-match rule in force (`decision.policy`, once its file loaded)."""
    calibration: str | None = None
    """The fitted calibration file's version (service/decide/data/calibration.json); only while
    `decision.policy` is `calibrated` (the seed rules use no fit)."""
    calibration_fit: str | None = None
    """Which fit decides, in words: `reviewed-traffic fit`, `this corpus's own fit`, `portable fit`,
    or `none: the seed rules decide`; only while `calibrated` is the policy."""
    calibration_note: str | None = None
    """Why that fit and not the corpus's own, where nothing failed (the own fit was made on other
    pages: on a new corpus the portable fit deciding is the expected state)."""
    calibration_error: str | None = None
    """Only when something failed: the corpus's own fit could not be loaded or read."""
    calibration_source: str | None = None
    """Where that fit comes from: `review` (learned from reviewed traffic), `file` or `portable`."""
    calibration_held_out: dict[str, Any] | None = None
    """A fit from review: reviewed queries, how many it was fitted on and held out, and its
    held-out right outcomes and wrong answers beside the fit it replaced (docs/operations/feedback-loop.md)."""
    phase: int | None = None
    """The configured phase (the `phase` flag: file, environment or runtime override)."""
    phase_in_force: int | None = None
    """The highest phase a request may use now: `phase` under the kill switch's ceiling; 0 while
    retrieval is disabled (flag `enabled` or the kill switch)."""
    relevance_model: RelevanceModelInfo | None = None
    """The relevance model loaded at start-up (`relevance.enabled`); null while it is off."""
    corpus_self_check: CorpusSelfCheck | None = None
    """The served corpus's self-check; null while `decision.corpus_probes` is off or no fit decides."""
    vector_search: str | None = None
    """How phase 3 finds neighbours: `exact` (every vector compared: a corpus within
    `semantic.exact_search_max_vectors`, the same neighbours on every replica) or `hnsw`."""


class CorpusSelfCheck(Base, frozen=True):
    """The served corpus's self-check (`decision.corpus_probes`, issue 40 item 2): questions made
    from its own sections, each answered by its section's page, run through phase 3."""

    kind: str
    """Which questions: `sentence` (a section's first sentence, its headings' words removed)."""
    probes: int
    hits: int
    """How many had their own page first."""
    hit_rate: float
    mean_p: float
    """The mean p the fit in force gave them (unshifted)."""
    fit: str
    """The fit measured with."""
    shift: float
    """What it moves phase 3's p by now, in logits (0 while `decision.corpus_shift_strength` is 0, and
    under `seed_rules`, where no p decides)."""


class NotReady(Base, frozen=True):
    ready: bool
    reason: str
    database: DatabaseStatus | None = None


@get("/health", summary="Liveness: the process answers", sync_to_thread=False)
def health() -> Health:
    return Health(status="ok")


@get(
    "/ready",
    summary="Readiness: database reachable, migrations current, corpus loaded",
    responses={
        503: ResponseSpec(data_container=NotReady, description="Not ready, with the reason")
    },
)
async def ready(state: State) -> Response[Ready | NotReady]:
    st = get_state(state)
    db = st.database.status() if st.database is not None else None
    reason = (st.database.not_ready_reason() if st.database is not None else None) or st.not_ready_reason
    if reason is not None or st.pool is None:
        return _not_ready(reason or "database pool is not open", db)
    try:
        counts = await asyncio.wait_for(repo.corpus_counts(st.pool), READY_QUERY_TIMEOUT_S)
    except Exception as err:  # any failure here means "cannot serve", not a crash
        return _not_ready(f"database unreachable: {describe_error(err)}", db)
    semantic = st.semantic
    if counts.migration_version < st.expected_migration:
        return _not_ready(
            f"migrations behind: database at {counts.migration_version},"
            f" code expects {st.expected_migration}", db
        )
    fit = _calibration(state)
    return Response(
        Ready(
            ready=True, documents=counts.documents, chunks=counts.chunks,
            migrations=counts.migration_version, corpus_version=st.corpus.version,
            last_seed_error=st.last_seed_error,
            semantic_ready=semantic is not None and semantic.serving_model is not None and not semantic.indexing,
            embedding_model=semantic.serving_model if semantic else None,
            semantic_error=semantic.error if semantic else None,
            database=db, decision_policy=st.decision.policy(), calibration=fit.version,
            calibration_fit=fit.fit, calibration_note=fit.note, calibration_error=fit.error,
            calibration_source=fit.source, calibration_held_out=fit.held_out,
            relevance_model=RelevanceModelInfo(**st.relevance.info.describe()) if st.relevance else None,
            corpus_self_check=_self_check(st.decision), vector_search=_vector_search(state, counts.chunks),
            **_phases(state),
        ),
        status_code=200,
    )


FIT_NAMES = {"review": "reviewed-traffic fit", "file": "this corpus's own fit", "portable": "portable fit"}
NO_FIT = "none: the seed rules decide"


class _Fit(NamedTuple):
    version: str | None = None
    fit: str | None = None
    source: str | None = None
    held_out: dict[str, Any] | None = None
    note: str | None = None
    error: str | None = None


def _calibration(state: State) -> _Fit:
    """Which fit decides (in words and by source), its version, held-out figures, a note and a
    failure, where the configured `decision.policy` uses a fit, else nothing: under
    `seed_rules` a missing or foreign fit changes no answer and asks nothing of the operator."""
    ops = state.get(OPS_KEY)
    if not isinstance(ops, Operations) or ops.flags().decision.policy != "calibrated":
        return _Fit()
    decision = get_state(state).decision
    source, problem, failure = decision.source(), decision.error(), decision.failure()
    return _Fit(decision.calibration(), FIT_NAMES.get(source or "", NO_FIT), source, decision.held_out(),
                note=problem if problem != failure else None, error=failure)


def _self_check(decision: DecisionStatus) -> CorpusSelfCheck | None:
    check = decision.self_check()
    if check is None:
        return None
    return CorpusSelfCheck(kind=check.kind, probes=check.probes, hits=check.hits,
                           hit_rate=round(check.hit_rate, 4), mean_p=check.mean_p, fit=check.fit,
                           shift=round(decision.corpus_shift(), 4))


def _phases(state: State) -> dict[str, int | None]:
    """The configured phase and the one in force, so a client (the console) need no admin token."""
    ops = state.get(OPS_KEY)
    if not isinstance(ops, Operations):
        return {}
    flags = ops.flags()
    ceiling = ops.kill_switch.ceiling
    in_force = 0 if not flags.enabled else flags.phase if ceiling is None else min(ceiling, flags.phase)
    return {"phase": flags.phase, "phase_in_force": in_force}


def _vector_search(state: State, chunks: int) -> str | None:
    """How phase 3 searches the `chunks` stored under the flags in force (`searched_exactly`)."""
    ops = state.get(OPS_KEY)
    if not isinstance(ops, Operations):
        return None
    return "exact" if searched_exactly(chunks, ops.flags()) else "hnsw"


def _not_ready(reason: str, db: DatabaseStatus | None = None) -> Response[Ready | NotReady]:
    return Response(NotReady(ready=False, reason=reason, database=db), status_code=503)
