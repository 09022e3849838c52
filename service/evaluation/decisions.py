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

import argparse
import datetime as dt
import hashlib
import json
import sys
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
    CalibrationError,
    CalibrationModel,
    KeywordVerdict,
    corpus_fingerprint,
    load_model,
    multi_intent_pages,
    pages_fingerprint,
    probability,
)
from service.decide.decider import CALIBRATION_FILE, PORTABLE_CALIBRATION_FILE, replayed_status
from service.evaluation.decision_metrics import (
    CaseRun,
    DecisionReport,
    RankingCeiling,
    best_threshold,
    ranking_ceiling,
    report,
    right_outcome,
    risk_coverage,
    top_is_right,
)
from service.evaluation.harness import database_name, load_cached_embedder, prepare_database, say
from service.evaluation.labelled import SPLITS, LabelledQuery, QuerySetError, load_query_set
from service.flags import DecisionPoint, Flags, TimeoutFlags, load_flags
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
    return CaseRun(
        case_id=case.id, phase=phase, policy=policy, status=outcome.status, reason=outcome.reason,
        shown=_pages([e.doc_slug for e in outcome.results]), options=tuple(o.doc_slug for o in outcome.options),
        ranked=signals.ranking if signals is not None else (),
        features=dict(signals.features) if signals is not None else dict.fromkeys(FEATURES, 0.0),
        second_same_need=signals.second_same_need if signals is not None else False,
        third_score_ratio=signals.third_score_ratio if signals is not None else 0.0,
        parts=signals.parts if signals is not None else (),
        keyword_reason=signals.keyword_reason if signals is not None else "",
        answered_phase=outcome.phase,
        semantic_ranked=signals.semantic_ranking if signals is not None else (),
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
    max_wrong: float = MAX_WRONG,
) -> CalibrationModel:
    """One model per phase on the dev split, and its operating points chosen on dev (on held-out p,
    `calibration_fit.cross_fitted`).
    `portable`: without the corpus-scaled features, usable on any corpus (`collected` may
    hold the runs of several corpora, `merge`)."""
    import sklearn

    from service.decide.calibration_fit import (
        REPEATS,
        Choice,
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
        repeats = cross_fitted([r.case_id for r in rows], [r.features for r in rows], labels, excluded=excluded)
        for pooled, repeat in zip(held_out, repeats, strict=True):
            pooled.update(((case_id, phase), p) for case_id, p in repeat.items())
    stamp = dt.datetime.now(dt.UTC)
    name = f"portable-{collected.corpus}" if portable else collected.corpus
    draft = CalibrationModel(
        format=MODEL_FORMAT,
        version=f"{name}-{collected.corpus_fingerprint[:8]}-{stamp:%Y%m%d%H%M}",
        corpus=collected.corpus, corpus_fingerprint=collected.corpus_fingerprint,
        pages_fingerprint="" if portable else collected.pages_fingerprint, portable=portable, features=FEATURES,
        phases=phases, answer_p=(0.5,) * 3, no_match_p=(0.1,) * 3, ambiguity_ratio=(1.01,) * 3,  # chosen below
        library=f"scikit-learn {sklearn.__version__}", query_set=query_set,
        fitted_at=stamp.isoformat(timespec="seconds"),
    )
    by_key = {(r.case_id, r.phase): r for r in dev}
    chosen: dict[int, Choice] = {}
    for phase in PHASES:  # in order: phase 3's keyword verdict uses phase 2's point
        mine = [r for r in dev if r.phase == phase]

        def evaluate(point: DecisionPoint, mine: list[CaseRun] = mine) -> tuple[int, int, int, int, int]:
            # Every repeat's held-out p, counts pooled: the point must hold whichever cases a fold held out.
            right = answers = wrong = answerable = covered = 0
            for r in mine:
                case = by_id[r.case_id]
                # Multi-intent parts are keyword searches: phase 3 judges them with phase 2's model.
                part_phase, part_point = (2, chosen[2].point) if r.phase == 3 else (r.phase, point)
                multi = multi_intent_pages(draft.phases[str(part_phase)], part_point, r.shown, r.parts) \
                    if r.reason == "multi_intent" else ()
                if r.phase == 3 and multi:
                    multi = ()  # phase 3 keeps the fused order (`multi_intent_on`)
                for p_of in held_out:
                    verdict = _verdict(by_key, p_of, r, chosen[2].point) if r.phase == 3 else None
                    status, shown, options = replayed_status(r, p_of[(r.case_id, r.phase)], point, verdict, multi)
                    right += right_outcome(case, status, shown, options)
                    if status == "answer":
                        answers += 1
                        wrong += not top_is_right(case, shown)
                    if case.decision == "answer":
                        answerable += 1
                        covered += status == "answer"
            return right, answers, wrong, answerable, covered

        chosen[phase] = choose_point(evaluate, max_wrong)
        c = chosen[phase]
        say(f"phase {phase} on dev, held out: {msgspec.to_builtins(c.point)}; wrong answers {c.wrong_rate:.1%}, "
            f"coverage {c.coverage:.1%}, right decisions {c.right_decisions / len(held_out):.0f}/{len(mine)}")
    points = [chosen[ph].point for ph in PHASES]
    return msgspec.structs.replace(
        draft,
        answer_p=_three([pt.answer_p for pt in points]), no_match_p=_three([pt.no_match_p for pt in points]),
        ambiguity_ratio=_three([pt.ambiguity_ratio for pt in points]),
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


def _verdict(
    by_key: dict[tuple[str, int], CaseRun], p_of: dict[tuple[str, int], float], run: CaseRun, point: DecisionPoint,
) -> KeywordVerdict | None:
    """Phase 2's verdict on phase 3's keyword leg: the same case's phase-2 run."""
    if (run.case_id, 2) not in by_key:
        return None
    two = by_key[(run.case_id, 2)]
    return KeywordVerdict(p=p_of[(run.case_id, 2)], top_doc=two.ranked[0] if two.ranked else None, point=point)


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


# -- commands ------------------------------------------------------------------
def _load_cases(path: Path) -> tuple[list[LabelledQuery], str] | None:
    try:
        cases = load_query_set(path)
    except QuerySetError as err:
        print(f"error: {err}", file=sys.stderr)
        return None
    import yaml

    corpus = str(yaml.safe_load(path.read_text(encoding="utf-8")).get("corpus", path.stem))
    return cases, corpus


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "eval-decisions", help="answer / clarify / no-match quality on a labelled query set",
        description="Run every labelled case through the pipeline in-process (own database, real "
        "model) under both decision policies and report decisions and ranking per phase, kind and split.",
    )
    p.add_argument("--queries", type=Path, required=True, action="append",
                   help="labelled query set (bench/queries/*.yaml); repeat it, with one --seeds-dir each, "
                   "for --cross-corpus")
    p.add_argument("--cross-corpus", action="store_true",
                   help="leave-one-corpus-out over every --queries/--seeds-dir pair: the portable fit made "
                   "without a corpus decides that corpus's test split (service/evaluation/cross_corpus.py)")
    p.add_argument("--signals", type=Path, action="append",
                   help="--cross-corpus: a runs file per query set, read when it exists, else written")
    p.add_argument("--phase", choices=("1", "2", "3", "all"), default="all")
    p.add_argument("--max-wrong", type=float, default=MAX_WRONG,
                   help="--cross-corpus: the wrong-answer rate the fits' points keep on dev (default %(default)s)")
    p.add_argument("--json", type=Path, help="also write the reports as JSON")
    p.add_argument("--plot", type=Path, help="write the risk-coverage curves as a PNG")
    p.add_argument("--model", type=Path, default=CALIBRATION_FILE, help="fitted calibration file")
    p.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    p.add_argument("--seeds-dir", type=Path, action="append", help="corpus to serve (env SEEDS_DIR)")
    p.set_defaults(handler=run_eval)

    f = sub.add_parser(
        "fit-decisions", help="fit the calibrated decision on a labelled set's dev split",
        description="Run the labelled set through the pipeline, fit one logistic model per phase on dev, "
        "choose answer_p / no_match_p / ambiguity_ratio on dev for <= 3 %% wrong answers, write the JSON.",
    )
    f.add_argument("--queries", type=Path, action="append",
                   help="labelled query set; repeat it (with one --seeds-dir each) for a --portable fit")
    f.add_argument("--from-review", action="store_true",
                   help="fit the corpus's own decision on its reviewed traffic (the query log's reviews in "
                   "DATABASE_URL / DATA_DIR), compare it on the held-out share with the fit in force and "
                   "activate it only if it is better (service/evaluation/from_review.py)")
    f.add_argument("--actor", default="cli", help="--from-review: who fitted it, in the audit trail")
    f.add_argument("--out", type=Path, help=f"default {CALIBRATION_FILE.name}, or {PORTABLE_CALIBRATION_FILE.name} "
                   "with --portable (service/decide/data/)")
    f.add_argument("--portable", action="store_true",
                   help="fit without the corpus-scaled features: the fit the service uses on a corpus "
                   "that has none of its own")
    f.add_argument("--signals", type=Path, action="append",
                   help="runs file per query set: read when it exists (delete it after a ranking change), else written")
    f.add_argument("--data-dir", type=Path)
    f.add_argument("--seeds-dir", type=Path, action="append", help="the corpus of each --queries (env SEEDS_DIR)")
    f.add_argument("--max-wrong", type=float, default=MAX_WRONG,
                   help="the wrong-answer rate the operating points keep on dev (default %(default)s)")
    f.set_defaults(handler=run_fit)


def _serve_each(
    settings: Settings, data_dir: Path | None, query_sets: Sequence[Path], seeds_dirs: Sequence[Path | None],
    signals: Sequence[Path | None],
) -> list[tuple[list[LabelledQuery], Collected]] | None:
    """Each labelled set's cases and the service's seed-rules runs on its corpus (None: a set did not load)."""
    served = []
    for queries, seeds_dir, signals_file in zip(query_sets, seeds_dirs, signals, strict=True):
        loaded = _load_cases(queries)
        if loaded is None:
            return None
        cases, corpus = loaded
        here = settings.with_overrides(data_dir=data_dir, seeds_dir=seeds_dir)
        served.append((cases, run_service(here, cases, corpus, None, ("seed_rules",), signals_file)))
    return served


def run_fit(args: argparse.Namespace, settings: Settings) -> int:
    if args.from_review:
        if args.queries or args.portable:
            print("error: --from-review reads the reviewed traffic, not --queries / --portable", file=sys.stderr)
            return 2
        from service.evaluation.from_review import run_command

        return run_command(args, settings)
    if not args.queries:
        print("error: --queries is required (or --from-review)", file=sys.stderr)
        return 2
    query_sets: list[Path] = args.queries
    seeds_dirs: list[Path | None] = args.seeds_dir or [None]
    signals: list[Path | None] = args.signals or [None] * len(query_sets)
    if len(query_sets) > 1 and not args.portable:
        print("error: several --queries make a --portable fit (a corpus's own fit reads one set)", file=sys.stderr)
        return 2
    if len(seeds_dirs) != len(query_sets) and not (len(query_sets) == 1 and len(seeds_dirs) == 1):
        print(f"error: {len(query_sets)} --queries need as many --seeds-dir (got {len(seeds_dirs)})", file=sys.stderr)
        return 2
    if len(signals) != len(query_sets):
        print(f"error: {len(query_sets)} --queries need as many --signals (got {len(signals)})", file=sys.stderr)
        return 2
    served = _serve_each(settings, args.data_dir, query_sets, seeds_dirs, signals)
    if served is None:
        return 2
    all_cases = [case for cases, _ in served for case in cases]
    runs = [collected for _, collected in served]
    out: Path = args.out or (PORTABLE_CALIBRATION_FILE if args.portable else CALIBRATION_FILE)
    try:
        model = fit(merge(runs), all_cases, ", ".join(map(str, query_sets)), portable=args.portable,
                    max_wrong=args.max_wrong)
    except (CalibrationError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(msgspec.json.format(msgspec.json.encode(model), indent=2) + b"\n")
    points = (f"answer_p {model.answer_p}, no_match_p {model.no_match_p}, ambiguity_ratio {model.ambiguity_ratio}")
    if model.portable:
        print(f"wrote {out} (version {model.version}); it decides with its own points: {points}")
    else:
        print(f"wrote {out} (version {model.version}); it decides with its own points ({points}) unless `decision.*` flags override them")
    return 0


def run_cross_corpus(args: argparse.Namespace, settings: Settings) -> int:
    """Leave-one-corpus-out (service/evaluation/cross_corpus.py): one table, per corpus and pooled."""
    from service.evaluation.cross_corpus import (
        CorpusRuns,
        ablation,
        ablation_markdown,
        leave_one_out,
        markdown,
        write,
    )

    query_sets: list[Path] = args.queries
    seeds_dirs: list[Path] = args.seeds_dir or []
    signals: list[Path | None] = args.signals or [None] * len(query_sets)
    if len(query_sets) < 2 or len(seeds_dirs) != len(query_sets) or len(signals) != len(query_sets):
        print("error: --cross-corpus needs two or more --queries, each with its --seeds-dir (and --signals, "
              "if given)", file=sys.stderr)
        return 2
    served = _serve_each(settings, args.data_dir, query_sets, list(seeds_dirs), signals)
    if served is None:
        return 2
    collected = [runs for _, runs in served]
    corpora = [CorpusRuns(name=runs.corpus, cases=cases, runs=runs.runs) for cases, runs in served]
    fits = {}
    for held in corpora:
        others = [i for i, c in enumerate(corpora) if c is not held]
        say(f"fitting the portable decision without {held.name}")
        fits[held.name] = fit(merge([collected[i] for i in others]), [case for i in others for case in corpora[i].cases],
                              f"all but {held.name}", portable=True, max_wrong=args.max_wrong)
    phase = 3 if args.phase == "all" else int(args.phase)
    table = leave_one_out(corpora, fits, phase)
    print(f"## Leave-one-corpus-out, test splits, phase {phase}\n")
    print(markdown(table))
    ablated = ablation(corpora, fits, phase)
    print(f"\n## The calibrated policy's rules, each left out (leave-one-corpus-out fits), phase {phase}\n")
    print(ablation_markdown(ablated))
    if args.json is not None:
        write(args.json, table, {"phase": phase, "query_sets": [str(q) for q in query_sets],
                                 "max_wrong": args.max_wrong, "ablation": ablated,
                                 "fits": {name: msgspec.to_builtins(m) for name, m in fits.items()}})
        say(f"wrote {args.json}")
    return 0


def run_eval(args: argparse.Namespace, settings: Settings) -> int:
    if args.cross_corpus:
        return run_cross_corpus(args, settings)
    if len(args.queries) != 1 or len(args.seeds_dir or [None]) != 1:
        print("error: one --queries (and at most one --seeds-dir) without --cross-corpus", file=sys.stderr)
        return 2
    args.queries, args.seeds_dir = args.queries[0], (args.seeds_dir or [None])[0]
    settings = settings.with_overrides(data_dir=args.data_dir, seeds_dir=args.seeds_dir)
    loaded = _load_cases(args.queries)
    if loaded is None:
        return 2
    cases, corpus = loaded
    by_id = {c.id: c for c in cases}
    model: CalibrationModel | None = None
    try:
        model = load_model(args.model)
    except CalibrationError as err:
        say(f"no calibrated decision to compare: {err}")
    policies = POLICIES if model is not None else POLICIES[:1]
    collected = run_service(settings, cases, corpus, model, policies)
    if model is not None and not model.portable and model.corpus_fingerprint != collected.corpus_fingerprint:
        print(
            f"WARNING: {args.model} was fitted for corpus {model.corpus} version "
            f"{model.corpus_fingerprint[:12]}, this run served {collected.corpus} version "
            f"{collected.corpus_fingerprint[:12]}: its probabilities do not describe these pages. Refit: "
            f"`python -m service fit-decisions --queries {args.queries}`", file=sys.stderr,
        )
    phases = list(PHASES) if args.phase == "all" else [int(args.phase)]
    results = {
        policy: {ph: split_reports([r for r in collected.runs if r.policy == policy], by_id, ph) for ph in phases}
        for policy in policies
    }
    flags = load_flags(settings.flags_file)
    print(f"## {args.queries}: {len(cases)} cases, corpus {collected.corpus} {collected.corpus_fingerprint[:12]}\n")
    if model is not None:
        points = model.points(flags.decision)
        print(f"calibrated: {model.version} with {'its own points' if model.portable else 'flags'} (phases 1, 2, 3) "
              f"answer_p {points.answer_p}, no_match_p {points.no_match_p}, ambiguity_ratio {points.ambiguity_ratio}\n")
    print(summary_table(results) + "\n")
    print("Ranking by kind (the ranking by score; the same for both policies):\n\n"
          + kind_table(results["seed_rules"]) + "\n")
    print(confusion_table(results) + "\n")
    print("What the ranking leaves any decision rule (answering only with its first page, asking between "
          "its best pages):\n")
    ceiling = ceilings(collected.runs, by_id, phases)
    print("\n".join(ceiling_notes(ceiling)) + "\n")
    if model is not None:
        for line in threshold_notes(collected.runs, by_id, model):
            print(line)
    if args.plot:
        plot_curves(args.plot, collected.runs, by_id, model)
    if args.json:
        payload = {
            "queries": str(args.queries), "corpus": collected.corpus,
            "corpus_fingerprint": collected.corpus_fingerprint, "model": model.version if model else None,
            "policies": {name: {str(ph): {s: r.as_dict() for s, r in splits.items()} for ph, splits in by_phase.items()}
                         for name, by_phase in results.items()},
            "ranking_ceiling": {str(ph): {s: c.as_dict() for s, c in splits.items()} for ph, splits in ceiling.items()},
            "runs": msgspec.to_builtins(collected.runs),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        say(f"wrote {args.json}")
    return 0
