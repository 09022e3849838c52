"""`python -m service eval-decisions` and `python -m service fit-decisions`: the command lines.

What they run lives beside: serving the labelled sets and fitting (decisions.py), the
leave-one-corpus-out table (cross_corpus.py), the fit from reviewed traffic
(from_review.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from service.decide.calibration import CalibrationError, CalibrationModel, load_model
from service.decide.decider import CALIBRATION_FILE, PORTABLE_CALIBRATION_FILE
from service.evaluation.decisions import (
    MAX_WRONG,
    PHASES,
    POLICIES,
    Collected,
    ceiling_notes,
    ceilings,
    confusion_table,
    fit,
    kind_table,
    merge,
    plot_curves,
    run_service,
    split_reports,
    summary_table,
    threshold_notes,
)
from service.evaluation.harness import say
from service.evaluation.labelled import LabelledQuery, QuerySetError, load_labelled_set
from service.flags import load_flags
from service.settings import Settings


# -- commands ------------------------------------------------------------------
def _load_cases(path: Path) -> tuple[list[LabelledQuery], str] | None:
    try:
        corpus, cases = load_labelled_set(path)
    except QuerySetError as err:
        print(f"error: {err}", file=sys.stderr)
        return None
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
    p.add_argument("--fold-assignments", type=int, default=1, metavar="N",
                   help="--cross-corpus: also refit every leave-one-out fit under N - 1 other assignments of "
                   "the cross-fitting folds and show how far the pooled figures move (default %(default)s: none)")
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
        assignment_row,
        assignments_markdown,
        identifier_cases,
        identifiers_markdown,
        kinds_markdown,
        leave_one_out,
        markdown,
        per_kind,
        split_totals,
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
    def fits_without_each(salt: str) -> dict[str, CalibrationModel]:
        fits = {}
        for held in corpora:
            others = [i for i, c in enumerate(corpora) if c is not held]
            say(f"fitting the portable decision without {held.name}" + (f" (folds {salt})" if salt else ""))
            fits[held.name] = fit(merge([collected[i] for i in others]),
                                  [case for i in others for case in corpora[i].cases], f"all but {held.name}",
                                  portable=True, max_wrong=args.max_wrong, fold_salt=salt)
        return fits

    fits = fits_without_each("")
    phase = 3 if args.phase == "all" else int(args.phase)
    table = leave_one_out(corpora, fits, phase)
    print(f"## Leave-one-corpus-out, test splits, phase {phase}\n")
    print(markdown(table))
    kinds = per_kind(corpora, phase)
    print(f"\n## The ranking per kind of case, pooled test splits, phase {phase}\n")
    print(kinds_markdown(kinds))
    identifiers = identifier_cases(corpora, phase)
    print(f"\n## Identifier cases (note: identifier), dev and test, phase {phase}\n")
    print(identifiers_markdown(identifiers))
    def pooled_of(fits: dict[str, CalibrationModel]) -> dict[str, dict[str, int]]:
        return {split: split_totals(corpora, fits, split, phase) for split in ("dev", "test")}

    pooled = pooled_of(fits)
    print("\ncalibrated, pooled: " + "; ".join(
        f"{split} right {t['right']}/{t['cases']}, wrong {t['wrong']}/{t['answers']} answers" for split, t in pooled.items()))
    assignments = {"": assignment_row(table, pooled)}
    for n in range(1, max(args.fold_assignments, 1)):
        salted = fits_without_each(f"s{n}:")
        assignments[f"s{n}:"] = assignment_row(leave_one_out(corpora, salted, phase), pooled_of(salted))
    if len(assignments) > 1:
        print(f"\n## The same runs under {len(assignments)} assignments of the cross-fitting folds, phase {phase}\n")
        print(assignments_markdown(assignments))
    if args.json is not None:
        write(args.json, table, {"phase": phase, "query_sets": [str(q) for q in query_sets],
                                 "max_wrong": args.max_wrong, "pooled": pooled, "per_kind": kinds,
                                 "identifier_cases": identifiers,
                                 "fold_assignments": {salt: dataclasses.asdict(a) for salt, a in assignments.items()},
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
