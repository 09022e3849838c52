"""`fit-decisions --from-review` and `POST /admin/decision-fits`: the corpus learns its own
decision from its reviewed traffic.

1. **The labelled set**: every logged query with a review in force (the review queue's
   verdicts; "not what I meant" feedback counts once a reviewer confirmed it with a
   review) becomes a `LabelledQuery`, through the golden export's own mapping
   (`feedback.export.expectation_of`): `should_be X` → answer with X; `right` → the logged
   decision (an answer with its first page, a clarification with its options, no match);
   `wrong` on an answer, which names no better page → no match (the answer should not have
   been given). Refused, with the reason: the text was not stored, the query was asked
   inside a conversation (its decision depends on the turns before it), `wrong` on a
   clarification or a no match (nothing says what was right), a page that left the corpus.
   One case per query text (casefold, spacing and end punctuation aside): the newest
   review wins. The case id is a hash of that text.
2. **The held-out share** is the labelled split (`labelled.split_of`, a hash of the case id):
   40 % of the queries, the same ones on every fit, so a query never judges a fit that
   learned from it. A fit needs `MIN_CASES` (60) reviewed queries with `MIN_HELD_OUT` (20)
   held out; with fewer, it says how many more at least.
3. **Signals**: every case through the running service's own `Pipeline.run` (observe=False:
   no log, no kill-switch samples) under the seed rules at phases 1-3, as `eval-decisions`
   collects them (`decisions.run_case`).
4. **Fit** on the dev share (`decisions.fit`: one logistic model per phase, operating points
   chosen on cross-fitted p).
5. **Compare** on the held-out share at the configured phase, both replayed on the same
   seed-rules runs (`cross_corpus.replay_calibrated`, the Decider's routing on numbers):
   the new fit against the fit that decides now under `decision.policy: calibrated` (the
   corpus's own fit when one fits the served pages, else the portable one; the seed rules
   when neither applies). **Activated only if right outcomes are strictly higher and
   wrong answers not higher**; stored either way, with its figures (`fit_store`).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import logging
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import msgspec

from service.decide.calibration import CalibrationModel, corpus_fingerprint, pages_fingerprint
from service.decide.decider import Decider
from service.domain.types import Document
from service.evaluation.cross_corpus import Tally, replay_calibrated, tally
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.decisions import PHASES, Collected, fit, policy_flags, run_case
from service.evaluation.labelled import DEV_PERCENT, LabelledQuery, query_key
from service.feedback.export import Refused, expectation_of
from service.feedback.records import is_question
from service.feedback.store import reviewed_candidates
from service.fit_store import FitStore, StoredFit
from service.flags import Flags
from service.settings import Settings

log = logging.getLogger(__name__)

MIN_CASES = 60
MIN_HELD_OUT = 20
HELD_OUT_SHARE = f"{100 - DEV_PERCENT} % of the reviewed queries, by a hash of their text (the labelled split)"


@dataclass(frozen=True)
class ReviewedSet:
    cases: list[LabelledQuery]
    refused: list[Refused]
    request_of: dict[str, str]
    """case id → the logged request its label came from."""

    @property
    def held_out(self) -> list[LabelledQuery]:
        return [c for c in self.cases if c.split == "test"]

    def shortfall(self) -> str | None:
        """Why there are too few reviewed queries to fit, naming how many more at least (None: enough)."""
        n, held = len(self.cases), len(self.held_out)
        more = max(MIN_CASES - n, MIN_HELD_OUT - held, 0)
        if more == 0:
            return None
        return (f"{n} reviewed queries ({held} held out); a fit needs at least {MIN_CASES} with {MIN_HELD_OUT} "
                f"held out: review at least {more} more ({len(self.refused)} reviews could not be used)")


class NotEnoughReviews(ValueError):
    """Too few reviewed queries; the message names how many more."""


def case_id(query: str) -> str:
    """A reviewed query's case id: a hash of its text, so the same query keeps its split."""
    return "review-" + hashlib.sha256(query_key(query).encode("utf-8")).hexdigest()[:16]


def _label(row: Mapping[str, Any]) -> tuple[str, tuple[str, ...]] | str:
    """(decision, pages) the review says is right, or why it says none."""
    made = expectation_of(row)
    if isinstance(made, str):
        return made
    expect, _note = made
    if isinstance(expect.decision, list):  # `wrong`: any decision but the logged first page
        if row["status"] != "answer":
            return f"reviewed wrong on a {row['status']} without naming the right page (review should_be)"
        return "no_match", ()
    if expect.decision == "answer":
        top = expect.top if isinstance(expect.top, str) else None
        return ("answer", (top,)) if top else "an answer without a page"
    if expect.decision == "clarify":
        options = tuple(dict.fromkeys(o["doc_slug"] for o in row.get("options") or []))
        return ("clarify", options) if len(options) >= 2 else "a clarification with fewer than two options"
    return "no_match", ()


_KIND_OF = {"clarify": "ambiguous", "no_match": "out_of_domain"}


def labelled_from(rows: Sequence[Mapping[str, Any]], pages: Collection[str]) -> ReviewedSet:
    """`reviewed_candidates` rows → one labelled case per query text; `pages`: the served slugs."""
    newest: dict[str, tuple[str, LabelledQuery, str]] = {}
    refused: list[Refused] = []
    for row in rows:
        rid, query = row["request_id"], row.get("query")
        if not query:
            refused.append(Refused(rid, "query text not stored (query_log.store_text is off)"))
            continue
        if row.get("in_conversation"):
            refused.append(Refused(rid, "asked inside a conversation: its decision depends on the turns before it"))
            continue
        label = _label(row)
        if isinstance(label, str):
            refused.append(Refused(rid, label))
            continue
        decision, slugs = label
        gone = [s for s in slugs if s not in pages]
        if gone:
            refused.append(Refused(rid, f"page {', '.join(gone)} is no longer in the corpus"))
            continue
        kind = _KIND_OF.get(decision) or ("question" if is_question(query) else "keyword")
        case = msgspec.convert({"id": case_id(query), "query": query, "kind": kind, "decision": decision,
                                "pages": list(slugs), "note": f"review of {rid}"}, LabelledQuery)
        reviewed_at = str((row.get("review") or {}).get("at", ""))
        previous = newest.get(case.id)
        if previous is not None and previous[0] > reviewed_at:
            refused.append(Refused(rid, f"the same query has a newer review ({previous[2]})"))
            continue
        if previous is not None:
            refused.append(Refused(previous[2], f"the same query has a newer review ({rid})"))
        newest[case.id] = (reviewed_at, case, rid)
    cases = [case for _, case, _ in newest.values()]
    return ReviewedSet(cases=cases, refused=refused, request_of={c.id: rid for _, c, rid in newest.values()})


async def reviewed_set(pool: asyncpg.Pool[Any], pages: Collection[str]) -> ReviewedSet:
    return labelled_from(await reviewed_candidates(pool), pages)


# -- signals --------------------------------------------------------------------------
async def collect_runs(
    pipeline: Any, flags: Flags, cases: Sequence[LabelledQuery], corpus: str, documents: Sequence[Document],
) -> Collected:
    """Every case through the running `pipeline` under the seed rules at phases 1-3."""
    at_every_phase = msgspec.structs.replace(policy_flags(flags, "seed_rules"), enabled=True, phase=max(PHASES))
    runs: list[CaseRun] = []
    for case in cases:
        for phase in PHASES:
            runs.append(await run_case(pipeline, at_every_phase, case, phase, "seed_rules"))
    fell_back = sum(1 for r in runs if r.answered_phase < r.phase and r.status != "disabled")
    if fell_back:
        raise RuntimeError(f"{fell_back} runs were answered below their phase (phase 3 not ready, or a tier "
                           "failing): their signals are not that phase's; try again once /ready says phase 3 is ready")
    return Collected(
        corpus=corpus, corpus_fingerprint=corpus_fingerprint({d.slug: d.content_hash for d in documents}),
        pages_fingerprint=pages_fingerprint(d.slug for d in documents), runs=runs,
    )


# -- comparing on the held-out share ------------------------------------------------------
@dataclass(frozen=True)
class Decided:
    status: str
    top: str | None
    right: bool
    """The right outcome (`decision_metrics.right_outcome`)."""


def held_out_tally(
    model: CalibrationModel | None, runs: Sequence[CaseRun], cases: Sequence[LabelledQuery], phase: int,
) -> tuple[Tally, dict[str, Decided]]:
    """What `model` (None: the seed rules as recorded) decides on the held-out cases at `phase`:
    the counts, and each case's decision."""
    by_key = {(r.case_id, r.phase): r for r in runs if r.policy == "seed_rules"}
    total = Tally()
    decided: dict[str, Decided] = {}
    for case in cases:
        run = by_key[(case.id, phase)]
        if model is None:
            status, shown, options = run.status, run.shown, run.options
        else:
            status, shown, options = replay_calibrated(model, run)
        counted = tally(case, run, status, shown, options)
        total.add(counted)
        decided[case.id] = Decided(status=status, top=shown[0] if shown and status != "no_match" else None,
                                   right=bool(counted.right))
    return total, decided


def _figures(t: Tally) -> dict[str, Any]:
    return {"cases": t.cases, "right": t.right, "wrong": t.wrong, "answers": t.answers,
            "right_rate": round(t.right / t.cases, 4) if t.cases else None,
            "wrong_rate": round(t.wrong / t.cases, 4) if t.cases else None}


def baseline_of(decider: Decider) -> tuple[CalibrationModel | None, str]:
    """The fit that decides now under `calibrated` and what it is: own (a stored fit or the
    fit file), portable, or the seed rules when no fit applies."""
    model = decider.active_calibration()
    if model is None:
        return None, "seed_rules"
    return model, "portable" if model is decider.portable else "own"


@dataclass(frozen=True)
class FitOutcome:
    fit: StoredFit
    activated: bool
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"fit_id": self.fit.id, "version": self.fit.version, "activated": self.activated,
                "reason": self.reason, "figures": self.fit.figures}


@dataclass
class Progress:
    """What a running fit is doing (the job status shows it)."""

    step: str = "reading the reviews"
    cases: int = 0
    notes: list[str] = field(default_factory=list)


async def fit_from_review(
    pool: asyncpg.Pool[Any], pipeline: Any, flags: Flags, documents: Sequence[Document], store: FitStore, *,
    corpus: str, actor: str, progress: Progress | None = None,
) -> FitOutcome:
    """The whole loop (module docstring); raises NotEnoughReviews, or ValueError when the
    reviewed cases cannot be fitted (e.g. no wrong first page among the dev share)."""
    progress = progress or Progress()
    reviewed = await reviewed_set(pool, {d.slug for d in documents})
    short = reviewed.shortfall()
    if short is not None:
        raise NotEnoughReviews(short)
    cases = reviewed.cases
    progress.step, progress.cases = "running the reviewed queries through the pipeline", len(cases)
    collected = await collect_runs(pipeline, flags, cases, corpus, documents)
    progress.step = "fitting"
    stamp = dt.datetime.now(dt.UTC)
    model = await asyncio.to_thread(
        fit, collected, cases, f"{len(cases)} reviewed queries of the query log ({stamp:%Y-%m-%d %H:%M} UTC)",
    )
    model = msgspec.structs.replace(
        model, version=f"{corpus}-review-{collected.corpus_fingerprint[:8]}-{stamp:%Y%m%d%H%M%S}",
    )
    progress.step = "comparing on the held-out share"
    phase = min(max(flags.phase, 1), max(PHASES))
    held = reviewed.held_out
    baseline, source = baseline_of(pipeline.decider)
    mine, after = held_out_tally(model, collected.runs, held, phase)
    theirs, before = held_out_tally(baseline, collected.runs, held, phase)
    better = mine.right > theirs.right and mine.wrong <= theirs.wrong
    name = baseline.version if baseline is not None else "the seed rules"
    reason = (
        f"held out ({len(held)} queries, phase {phase}): right outcomes {mine.right} vs {theirs.right}, "
        f"wrong answers {mine.wrong} vs {theirs.wrong} for {name} ({source}): "
        + ("activated (more right, no more wrong)" if better else
           "not activated (it needs strictly more right outcomes and no more wrong answers)")
    )
    by_id = {c.id: c for c in held}
    figures: dict[str, Any] = {
        "reviewed": len(cases), "fitted_on": len(cases) - len(held), "held_out": len(held),
        "refused": len(reviewed.refused), "phase": phase, "split": HELD_OUT_SHARE,
        "fit": _figures(mine), "baseline": {"version": baseline.version if baseline else None, "source": source,
                                            **_figures(theirs)},
        "dev_summary": model.dev_summary,
        "held_out_requests": sorted(reviewed.request_of[c.id] for c in held),
        "changed": [
            {"request_id": reviewed.request_of[cid], "reviewed": by_id[cid].decision,
             "reviewed_pages": list(by_id[cid].pages), "before": before[cid].status, "after": after[cid].status,
             "top_before": before[cid].top, "top_after": after[cid].top,
             "right_before": before[cid].right, "right_after": after[cid].right}
            for cid in sorted(after) if after[cid] != before[cid]
        ],
    }
    progress.step = "storing"
    stored = await store.add(pool, model, figures, actor=actor, reason=reason, activate=better)
    log.info("decision fit #%d %s from %d reviewed queries: %s", stored.id, stored.version, len(cases), reason)
    return FitOutcome(fit=stored, activated=better, reason=reason)


# -- the command line ------------------------------------------------------------------
def run_command(args: argparse.Namespace, settings: Settings) -> int:
    """`fit-decisions --from-review`: the same loop against DATABASE_URL / DATA_DIR, on the
    corpus and vectors the service stored there; a fit it activates reaches every running
    replica (NOTIFY)."""
    from service.db.server import run_with_database

    settings = settings.with_overrides(data_dir=args.data_dir)
    try:
        return run_with_database(settings, lambda dsn: _from_review(dsn, settings, args.actor))
    except (NotEnoughReviews, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


async def _from_review(dsn: str, settings: Settings, actor: str) -> int:
    import os

    from service.db.migrate import migrate_up
    from service.db.pool import connect_with_retry, create_pool
    from service.db.repo import load_chunks, load_documents
    from service.embedding.backends import load_embedder, onnx_cache_dir
    from service.flag_store import FlagStore
    from service.flags import env_overrides, load_flags_file
    from service.ingest.indexer import active_model
    from service.pipeline import SemanticLeg
    from service.scoring.semantic import QueryEmbeddingCache
    from service.wiring import make_pipeline, resolve_model_dir

    conn = await connect_with_retry(dsn, timeout_total=30.0)
    try:
        await migrate_up(conn, settings.migrations_dir)
        flag_store = FlagStore(load_flags_file(settings.flags_file), env_overrides(os.environ))
        await flag_store.load(conn)  # the runtime overrides in force, as the service has them
    finally:
        await conn.close()
    flags = flag_store.flags()
    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        documents, chunks = await load_documents(pool), await load_chunks(pool)
        if not documents:
            print("error: the database holds no corpus; start the service (or `seed`) first", file=sys.stderr)
            return 1
        embedder = load_embedder(flags.embedding.backend, resolve_model_dir(settings.embedding_model),
                                 onnx_cache_dir(settings.data_dir), flags.embedding.threads)
        serving = await active_model(pool, embedder.model_name)
        if serving is None:
            print("error: phase 3's vectors are not in the database; start the service once", file=sys.stderr)
            return 1

        async def serving_model() -> str | None:
            return serving

        leg = SemanticLeg(embedder=embedder, cache=QueryEmbeddingCache(flags.embedding.query_cache_size),
                          pool=lambda: pool, model=serving_model)
        decider = Decider.from_files()
        file_model, file_error = decider.own, decider.own_error
        store = FitStore(on_change=lambda model, error: decider.use_own(model or file_model, error or file_error))
        async with pool.acquire() as c:
            await store.load(c)  # the stored fit in force: the one to beat
        pipeline = make_pipeline(settings.seeds_dir, lambda: flags, decider=decider, semantic=lambda: leg)
        pipeline.load_corpus(documents, chunks, 1)
        outcome = await fit_from_review(pool, pipeline, flags, documents, store, corpus=settings.seeds_dir.name,
                                        actor=actor)
    finally:
        await pool.close()
    f = outcome.fit.figures
    print(f"stored decision fit #{outcome.fit.id} {outcome.fit.version}: fitted on {f['fitted_on']} reviewed "
          f"queries, {f['held_out']} held out")
    print(outcome.reason)
    return 0
