"""`python -m service eval-decisions` and `python -m service fit-decisions`.

eval-decisions --queries FILE [--phase N|all] [--json FILE] [--plot FILE] [--model FILE]
    Every labelled case (service/evaluation/labelled.py) through the service's own
    `Pipeline.run`, in-process, at phases 1-3, once per decision policy (`seed_rules`, and
    `calibrated` when the fitted file loads): its own database `eval_decisions_<corpus>` on the
    same server as `eval` (DATABASE_URL, else the embedded PostgreSQL under DATA_DIR), seeded
    from SEEDS_DIR with the service's seeder, the real model.  Per phase, policy and split:
    the confusion matrix, coverage, wrong answers, out-of-domain answered, ambiguous clarified
    (with the right pages), decisions as labelled and right outcomes (`decision_metrics`),
    top-1 / top-3 / MRR@10 per kind, the ranking's ceiling; `--plot` draws the
    risk-coverage curves.  Warns when the fitted file was made for another corpus version.

fit-decisions --from-review
    The corpus's own fit from its reviewed traffic, compared on a held-out share and activated
    only if better (from_review.py).

fit-decisions --queries FILE [--out FILE]
    Collects the same signals (`Outcome.signals`), fits one logistic model per phase on the
    dev split (decide/calibration_fit.py), chooses answer_p / no_match_p / ambiguity_ratio on
    dev by replaying the calibrated rule (`calibration.choose`), and writes the versioned JSON
    the service loads (decide/data/calibration.json by default).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from service.decide.calibration import (
    CORPUS_SCALED,
    FEATURES,
    MODEL_FORMAT,
    RULE_P_THRESHOLDS,
    CalibrationModel,
    corpus_fingerprint,
    pages_fingerprint,
    probability,
)
from service.decide.calibration_fit import Choice
from service.evaluation.decision_metrics import (
    CaseRun,
    DecisionReport,
    RankingCeiling,
    best_threshold,
    ranking_ceiling,
    report,
    risk_coverage,
    top_is_right,
)
from service.evaluation.grid_replay import GridReplay, Group, groups_of
from service.evaluation.harness import database_name, load_cached_embedder, prepare_database, say
from service.evaluation.labelled import SPLITS, LabelledQuery
from service.flags import DecisionFlags, Flags, TimeoutFlags, load_flags
from service.settings import Settings

PHASES = (1, 2, 3)
POLICIES = ("seed_rules", "calibrated")
MAX_WRONG = 0.03


# -- running the service ------------------------------------------------------------
def _pages(slugs: Sequence[str], limit: int = 10) -> tuple[str, ...]:
    return tuple(dict.fromkeys(slugs))[:limit]


async def run_case(pipeline: Any, flags: Flags, case: LabelledQuery, phase: int, policy: str) -> CaseRun:
    """One case through `Pipeline.run` (the service's path) at one phase under one policy."""
    from service.pipeline import RetrieveParams

    outcome = await pipeline.run(RetrieveParams(query=case.query, phase_cap=phase, top_k=10), flags, observe=False)
    signals = outcome.signals
    ranked = signals.ranking if signals is not None else ()
    is_stub = pipeline.require_indexes().is_stub
    return CaseRun(
        case_id=case.id, phase=phase, policy=policy, status=outcome.status, reason=outcome.reason,
        shown=_pages([e.doc_slug for e in outcome.results]), options=tuple(o.doc_slug for o in outcome.options),
        ranked=ranked,
        features=dict(signals.features) if signals is not None else dict.fromkeys(FEATURES, 0.0),
        answered_phase=outcome.phase,
        semantic_ranked=signals.semantic_ranking if signals is not None else (),
        pinned=signals.pinned if signals is not None else (),
        stubs=tuple(slug for slug in ranked if is_stub(slug)),
    )


class Collected(msgspec.Struct, kw_only=True):
    corpus: str
    corpus_fingerprint: str
    pages_fingerprint: str
    runs: list[CaseRun]


def policy_flags(flags: Flags, policy: str) -> Flags:
    # Decisions, not latency, are measured: a loaded machine must not turn phase 3 into a fallback.
    return msgspec.structs.replace(
        flags, timeouts=TimeoutFlags(db_ms=60_000, phase_ms=60_000),
        decision=msgspec.structs.replace(flags.decision, policy=policy),
    )


async def collect(
    cases: Sequence[LabelledQuery], dsn: str, settings: Settings, flags: Flags, corpus: str,
    model: CalibrationModel | None, policies: Sequence[str],
) -> Collected:
    from service.db.pool import create_pool
    from service.db.repo import load_chunks, load_documents
    from service.decide.decider import Decider
    from service.ingest.indexer import index_embeddings
    from service.ingest.seeder import SeedOptions, default_chunker, seed
    from service.pipeline import SemanticLeg
    from service.scoring.semantic import QueryEmbeddingCache
    from service.wiring import make_pipeline

    name = database_name(f"decisions_{corpus}")
    dsn = await prepare_database(dsn, name, settings.migrations_dir)
    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        seeded = await seed(
            pool, settings.seeds_dir, default_chunker(flags.chunking.max_tokens), SeedOptions.from_flags(flags),
        )
        say(f"seeded {name} from {settings.seeds_dir}: documents {msgspec.to_builtins(seeded.documents)}")
        documents, chunks = await load_documents(pool), await load_chunks(pool)
        fingerprint = corpus_fingerprint({d.slug: d.content_hash for d in documents})
        embedder = load_cached_embedder(settings, flags.embedding.backend)
        indexed = await index_embeddings(pool, embedder, batch_size=flags.embedding.batch_size)
        say(f"embeddings: {indexed.embedded} embedded, {indexed.reused} reused")

        async def serving_model() -> str | None:
            return str(embedder.model_name)

        leg = SemanticLeg(
            embedder=embedder, cache=QueryEmbeddingCache(flags.embedding.query_cache_size),
            pool=lambda: pool, model=serving_model,
        )
        # `model` decides as the corpus's own fit would (None: the seed rules alone).
        pipeline = make_pipeline(settings.seeds_dir, lambda: flags, decider=Decider(own=model), semantic=lambda: leg)
        pipeline.load_corpus(documents, chunks, 1)
        runs: list[CaseRun] = []
        started = time.perf_counter()
        for policy in policies:
            run_flags = policy_flags(flags, policy)
            for i, case in enumerate(cases, start=1):
                for phase in PHASES:
                    runs.append(await run_case(pipeline, run_flags, case, phase, policy))
                if i % 100 == 0:
                    say(f"{policy}: {i}/{len(cases)} cases ({time.perf_counter() - started:.0f}s)")
    finally:
        await pool.close()
    return Collected(
        corpus=corpus, corpus_fingerprint=fingerprint, pages_fingerprint=pages_fingerprint(d.slug for d in documents),
        runs=runs,
    )


def run_service(
    settings: Settings, cases: list[LabelledQuery], corpus: str, model: CalibrationModel | None,
    policies: Sequence[str], signals_file: Path | None = None,
) -> Collected:
    """Every case through the pipeline; `signals_file`: reuse the runs it holds (fit-decisions only)."""
    from service.db.server import run_with_database

    if signals_file is not None and signals_file.exists():
        saved = msgspec.json.decode(signals_file.read_bytes(), type=Collected)
        if {r.case_id for r in saved.runs} >= {c.id for c in cases}:
            say(f"signals from {signals_file} (corpus {saved.corpus_fingerprint[:12]}); delete it to run the service")
            return saved
    flags = load_flags(settings.flags_file)
    collected = run_with_database(
        settings, lambda dsn: collect(cases, dsn, settings, flags, corpus, model, policies),
    )
    if signals_file is not None:
        signals_file.parent.mkdir(parents=True, exist_ok=True)
        signals_file.write_bytes(msgspec.json.encode(collected))
        say(f"wrote {signals_file}")
    return collected


# -- the calibrated rule replayed on recorded signals (the threshold grid) -------------
def calibrated_p(model: CalibrationModel, run: CaseRun) -> float:
    return probability(model.phases[str(run.phase)], run.features)


def fit(
    collected: Collected, cases: Sequence[LabelledQuery], query_set: str, *, portable: bool = False,
    max_wrong: float = MAX_WRONG, fold_salt: str = "",
) -> CalibrationModel:
    """One model per phase on the dev split, and its operating points chosen on dev (on held-out p,
    `calibration_fit.cross_fitted`).
    `portable`: without the corpus-scaled features, usable on any corpus (`collected` may
    hold the runs of several corpora, `merge`). `fold_salt`: another fold assignment for the held-out
    p (`calibration_fit.fold_of`; "" is the one every shipped fit uses)."""
    import sklearn

    from service.decide.calibration_fit import (
        ANSWER_GRID,
        NO_MATCH_GRID,
        REPEATS,
        choose_point,
        cross_fitted,
        fit_phase,
    )

    by_id = {c.id: c for c in cases}
    dev = [r for r in collected.runs if by_id[r.case_id].split == "dev" and r.policy == "seed_rules"]
    excluded = CORPUS_SCALED if portable else frozenset()
    phases = {}
    held_out: list[dict[tuple[str, int], float]] = [{} for _ in range(REPEATS)]
    for phase in PHASES:
        rows = [r for r in dev if r.phase == phase]
        labels = [int(top_is_right(by_id[r.case_id], r.ranked)) for r in rows]
        phases[str(phase)] = fit_phase([r.features for r in rows], labels, excluded=excluded)
        say(f"phase {phase}: fitted on {len(rows)} dev cases, Brier {phases[str(phase)].dev_brier}")
        repeats = cross_fitted([r.case_id for r in rows], [r.features for r in rows], labels, excluded=excluded,
                               salt=fold_salt)
        for pooled, repeat in zip(held_out, repeats, strict=True):
            pooled.update(((case_id, phase), p) for case_id, p in repeat.items())
    grid = (*ANSWER_GRID, *NO_MATCH_GRID, *RULE_P_THRESHOLDS)
    chosen: dict[int, Choice] = {}
    for phase in PHASES:
        mine = [r for r in dev if r.phase == phase]
        # Every repeat's held-out p, counts pooled: the point must hold whichever cases a fold held out.
        groups: list[Group] = []
        # Under `decision.nothing_similar_below` the service declines whatever p says: as p = 0 would.
        floor = DecisionFlags().nothing_similar_below if phase == 3 else 0.0
        for r in mine:
            declined = r.features["top_similarity"] < floor
            groups += groups_of(r, by_id[r.case_id], [0.0 if declined else p_of[(r.case_id, phase)]
                                                      for p_of in held_out], grid)
        chosen[phase] = choose_point(GridReplay(groups), max_wrong)
        c = chosen[phase]
        say(f"phase {phase} on dev, held out: {msgspec.to_builtins(c.point)}; wrong answers {c.wrong_rate:.1%}, "
            f"coverage {c.coverage:.1%}, right decisions {c.right_decisions / len(held_out):.0f}/{len(mine)}")
    points = [chosen[ph].point for ph in PHASES]
    stamp = dt.datetime.now(dt.UTC)
    name = f"portable-{collected.corpus}" if portable else collected.corpus
    return CalibrationModel(
        format=MODEL_FORMAT,
        version=f"{name}-{collected.corpus_fingerprint[:8]}-{stamp:%Y%m%d%H%M}",
        corpus=collected.corpus, corpus_fingerprint=collected.corpus_fingerprint,
        pages_fingerprint="" if portable else collected.pages_fingerprint, portable=portable, features=FEATURES,
        phases=phases, answer_p=_three([pt.answer_p for pt in points]),
        no_match_p=_three([pt.no_match_p for pt in points]),
        ambiguity_ratio=_three([pt.ambiguity_ratio for pt in points]),
        library=f"scikit-learn {sklearn.__version__}", query_set=query_set,
        fitted_at=stamp.isoformat(timespec="seconds"),
        dev_summary={str(ph): {"coverage": round(chosen[ph].coverage, 4), "wrong_rate": round(chosen[ph].wrong_rate, 4)}
                     for ph in PHASES},
    )


def merge(collected: Sequence[Collected]) -> Collected:
    """The runs of several corpora as one set (a portable fit); case ids must not repeat."""
    if len(collected) == 1:
        return collected[0]
    ids = Counter(r.case_id for c in collected for r in c.runs if r.policy == "seed_rules" and r.phase == 1)
    repeated = sorted(i for i, n in ids.items() if n > 1)
    if repeated:
        raise ValueError(f"case ids repeat across the query sets: {', '.join(repeated[:5])}")
    digest = hashlib.sha256("".join(c.corpus_fingerprint for c in collected).encode()).hexdigest()
    return Collected(
        corpus="+".join(c.corpus for c in collected), corpus_fingerprint=digest, pages_fingerprint="",
        runs=[r for c in collected for r in c.runs],
    )


def _three(values: Sequence[float]) -> tuple[float, float, float]:
    return (values[0], values[1], values[2])


# -- reporting -----------------------------------------------------------------
def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def split_pairs(
    runs: Sequence[CaseRun], by_id: dict[str, LabelledQuery], phase: int, split: str
) -> list[tuple[LabelledQuery, CaseRun]]:
    """(case, run) of one phase and split."""
    return [(by_id[r.case_id], r) for r in runs if r.phase == phase and by_id[r.case_id].split == split]


def split_reports(runs: Sequence[CaseRun], by_id: dict[str, LabelledQuery], phase: int) -> dict[str, DecisionReport]:
    return {split: report(split_pairs(runs, by_id, phase, split)) for split in SPLITS}


def summary_table(results: dict[str, dict[int, dict[str, DecisionReport]]]) -> str:
    lines = [
        "| phase | policy | split | coverage | wrong answers | OOD answered | ambiguous: clarified (right pages) "
        "| decision as labelled | right outcome |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    phases = sorted({ph for by_phase in results.values() for ph in by_phase})
    for phase in phases:
        for policy, by_phase in results.items():
            for split, r in by_phase[phase].items():
                lines.append(
                    f"| {phase} | {policy} | {split} | {_pct(r.coverage)} | {_pct(r.wrong_rate)} "
                    f"({r.wrong_answers}/{r.answers}) | {_pct(r.ood_answered)} | {_pct(r.ambiguous_clarified)} "
                    f"({_pct(r.ambiguous_right_options)}) | {_pct(r.decision_accuracy)} | {_pct(r.right_outcomes)} |"
                )
    return "\n".join(lines)


def confusion_table(results: dict[str, dict[int, dict[str, DecisionReport]]]) -> str:
    lines = ["Confusion (labelled → decided: answer / clarify / no_match):", ""]
    for policy, by_phase in results.items():
        for phase, splits in by_phase.items():
            for split, r in splits.items():
                cells = "; ".join(
                    f"{want} → {c['answer']}/{c['clarify']}/{c['no_match']}" for want, c in r.confusion.items()
                )
                lines.append(f"- phase {phase} {policy} {split}: {cells}")
    return "\n".join(lines)


def kind_table(by_phase: dict[int, dict[str, DecisionReport]]) -> str:
    lines = [
        "| phase | kind | dev top-1 | dev top-3 | dev MRR@10 | test top-1 | test top-3 | test MRR@10 |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for phase, splits in by_phase.items():
        kinds = list(dict.fromkeys([*splits["dev"].per_kind, *splits["test"].per_kind]))
        for kind in kinds:
            cells = []
            for split in SPLITS:
                m = splits[split].per_kind.get(kind)
                cells += ["-", "-", "-"] if m is None else [
                    _pct(float(m["top1"] or 0)), _pct(float(m["top3"] or 0)), f"{float(m['mrr@10'] or 0):.3f}"]
            lines.append(f"| {phase} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_curves(path: Path, runs: Sequence[CaseRun], by_id: dict[str, LabelledQuery], model: CalibrationModel | None) -> None:
    """Risk-coverage per phase: answer iff p ≥ t (calibrated) or top score ≥ t (without a model)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PHASES), figsize=(5 * len(PHASES), 4), sharey=True)
    for ax, phase in zip(axes, PHASES, strict=True):
        for split in SPLITS:
            mine = [r for r in runs if r.phase == phase and r.policy == "seed_rules" and by_id[r.case_id].split == split]
            points = [
                (calibrated_p(model, r) if model else r.features["top_score"], by_id[r.case_id].decision == "answer",
                 top_is_right(by_id[r.case_id], r.ranked))
                for r in mine
            ]
            curve = risk_coverage(points)
            ax.plot([p.coverage for p in curve], [p.risk for p in curve], label=split)
        ax.axhline(MAX_WRONG, color="grey", linestyle=":", linewidth=1)
        ax.set_title(f"phase {phase}: answer iff {'p' if model else 'top score'} ≥ t")
        ax.set_xlabel("coverage (answerable answered)")
        ax.legend()
    axes[0].set_ylabel("risk (wrong answers / answers)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    say(f"wrote {path}")


def ceilings(runs: Sequence[CaseRun], by_id: dict[str, LabelledQuery], phases: Sequence[int]
             ) -> dict[int, dict[str, RankingCeiling]]:
    """Per phase and split, what the ranking leaves any decision rule (`ranking_ceiling`; the
    ranking is the same under both policies, so the seed rules' runs are read)."""
    seed_runs = [r for r in runs if r.policy == "seed_rules"]
    return {
        phase: {split: ranking_ceiling(split_pairs(seed_runs, by_id, phase, split), MAX_WRONG) for split in SPLITS}
        for phase in phases
    }


def ceiling_notes(by_phase: dict[int, dict[str, RankingCeiling]]) -> list[str]:
    return [
        f"phase {phase} {split}: at most {_pct(c.coverage)} coverage with <= {MAX_WRONG:.0%} wrong answers; "
        f"ambiguous cases whose pages are the ranking's two / three best: "
        f"{_pct(c.ambiguous_in_top2)} / {_pct(c.ambiguous_in_top3)}"
        for phase, splits in by_phase.items() for split, c in splits.items()
    ]


def threshold_notes(runs: Sequence[CaseRun], by_id: dict[str, LabelledQuery], model: CalibrationModel) -> list[str]:
    """Where the curve (answer iff p ≥ t, nothing else) crosses 3 % risk, per phase and split."""
    out = []
    for phase in PHASES:
        for split in SPLITS:
            points = [(calibrated_p(model, r), by_id[r.case_id].decision == "answer",
                       top_is_right(by_id[r.case_id], r.ranked))
                      for r in runs if r.phase == phase and r.policy == "seed_rules" and by_id[r.case_id].split == split]
            best = best_threshold(risk_coverage(points), MAX_WRONG)
            if best is not None:
                out.append(f"phase {phase} {split}: p ≥ {best.threshold:.3f} keeps risk {best.risk:.1%} "
                           f"at coverage {best.coverage:.1%}")
    return out
