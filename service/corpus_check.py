"""The corpus's self-check at a corpus load (issue 40 item 2; flag `decision.corpus_probes`).

Questions made from the corpus's own sections (`decide.corpus_probes`) go through the served
pipeline at phase 3 without a trace (no query log, no kill-switch sample); what comes back is how
often the first page was the question's page and the mean p the fit in force gave them. Each run
is measured afresh (the ranking depends on the pages, the flags and the embedding model alike)
and kept in PostgreSQL (migration 019), so an operator can read a drop against the runs before
it; `/ready` and the console show the latest, and `decision.corpus_shift_strength` (0 by default,
as chosen leave-one-corpus-out) lets it move phase 3's p (`Decider.corpus_shift`).
"""

from __future__ import annotations

import logging
from typing import Any

import asyncpg

from service.decide.calibration import corpus_fingerprint, probability
from service.decide.corpus_probes import CorpusProbes, sentence_probes
from service.pipeline import Pipeline, RetrieveParams
from service.state import CorpusSnapshot

log = logging.getLogger(__name__)

PHASE = 3
"""The phase whose p the check measures and the shift moves."""


async def self_check(pipeline: Pipeline, snapshot: CorpusSnapshot, pool: asyncpg.Pool[Any] | None) -> CorpusProbes | None:
    """The served corpus's figures under the fit in force, measured now and stored (with a
    pool). None when no fit decides phase 3 (the seed rules read no p) or no probe reached it."""
    flags = pipeline.flags()
    model = pipeline.decider.model_in_force(flags)
    if model is None or str(PHASE) not in model.phases:
        return None
    corpus = corpus_fingerprint({d.slug: d.content_hash for d in snapshot.documents})
    phase_model = model.phases[str(PHASE)]
    hits, ps = 0, []
    for probe in sentence_probes(snapshot.chunks):
        outcome = await pipeline.run(RetrieveParams(query=probe.query, phase_cap=PHASE, top_k=3), flags,
                                     observe=False)
        if outcome.phase != PHASE or outcome.signals is None:
            continue  # phase 3 did not answer it (no vectors yet, the phase flag lower): not measured
        ps.append(probability(phase_model, outcome.signals.features))  # unshifted: the fit's own p
        hits += outcome.signals.ranking[:1] == (probe.page,)
    if not ps:
        return None
    figures = CorpusProbes(corpus=corpus, fit=model.version, probes=len(ps), hits=hits,
                           mean_p=round(sum(ps) / len(ps), 4))
    if pool is not None:
        await store_figures(pool, figures)
    log.info("corpus self-check: first page right for %d of %d probes, mean p %.3f (fit %s)",
             figures.hits, figures.probes, figures.mean_p, figures.fit)
    return figures


async def store_figures(pool: asyncpg.Pool[Any], figures: CorpusProbes) -> None:
    await pool.execute(
        "insert into corpus_probes (corpus, fit, kind, probes, hits, mean_p) values ($1, $2, $3, $4, $5, $6)",
        figures.corpus, figures.fit, figures.kind, figures.probes, figures.hits, figures.mean_p,
    )
