"""The relevance model's score as a decision signal (issue 41: "the fit learns its weight; the
table shows with and without").

Usage:
    .venv/bin/python -m lab.experiments.relevance_decision \
        --set bench/queries/seed.yaml=/tmp/loco/seed.json --set bench/queries/logseq.yaml=/tmp/loco/logseq.json ... \
        [--scores FILE] [--data-dir DIR] [--out lab/results/decisions/relevance-feature-DATE.txt]

Each `--set` is a labelled set and the signals file `eval-decisions --cross-corpus --signals`
wrote for its corpus (the service's recorded runs, decided under the seed rules). For every
case's phase-3 run, the shipped relevance model (service/relevance/model/) scores the page that
run ranked first (`ranked[0]`) and the page it ranked second, each alone (one pair per pass, so
that one page's score does not depend on the other's padding). A page is read as `eval-relevance`
reads a candidate: the passage (service/relevance/passage.py) of the chunk that ranked it, here
the page's best chunk in phase 3's fused evidence for the query, ranked anew by this checkout
(`lab.evaluation.kinds`, every case, whatever its kind), else the page's first chunk. A run with
no page gets 0 for both (the calibrated rule answers no match there whatever p is).

Two features are added to a copy of the runs at phase 3 (0 at phases 1-2, where the fit sees a
constant and gives it no weight): `relevance_top`, the first page's score, and
`relevance_margin`, that minus the second page's (0 without a second page). Then for each corpus
in turn the portable fit is made on the other corpora's dev splits (`decisions.fit`, as
`eval-decisions --cross-corpus` does) and replayed on the held-out corpus at phase 3
(`cross_corpus.leave_one_out`, `split_totals`), without the feature, with `relevance_top`, and
with both. The service's `FEATURES` is not changed: for the fits and replays of a variant, this
process alone sees a longer tuple in the modules that read it (`extra_features`).

`--scores FILE`: the per-case scores and the chunk each page was read through, read when it
covers the runs, else computed (an embedded PostgreSQL under `--data-dir`) and written.
`--scorer late-interaction`: the pages are scored by late interaction from the packaged MiniLM's
token vectors, each read as its whole section (lab/relevance/late_interaction.py), instead of
by the relevance model (issue 41, item 6: a label-free lever beside the model).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from lab.experiments.gate_tradeoff import load_signals_set
from service.evaluation.cross_corpus import CorpusRuns, leave_one_out, split_totals
from service.evaluation.decision_metrics import CaseRun, top_is_right
from service.evaluation.decisions import Collected, calibrated_p, fit, merge
from service.evaluation.labelled import LabelledQuery
from service.settings import Settings

if TYPE_CHECKING:
    from lab.evaluation.kinds import KindSession
    from service.flags import Flags

PHASE = 3
MAX_WRONG = 0.05
"""As the twelve-corpus table is made (`eval-decisions --cross-corpus --max-wrong 0.05`)."""
EXTRA = ("relevance_top", "relevance_margin")
VARIANTS: dict[str, tuple[str, ...]] = {
    "without (the service's own features)": (),
    "+ relevance_top": EXTRA[:1],
    "+ relevance_top, relevance_margin": EXTRA,
}
CALIBRATED = "calibrated (leave-one-corpus-out)"


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Loaded:
    queries: Path
    corpus: str
    cases: list[LabelledQuery]
    collected: Collected


def load_set(spec: str) -> Loaded:
    cases, collected = load_signals_set(spec)
    queries, corpus = spec.partition("=")[0], collected.corpus
    missing = {c.id for c in cases} - {r.case_id for r in collected.runs if r.phase == PHASE}
    if missing:
        raise SystemExit(f"--set {spec}: no phase-{PHASE} run for {len(missing)} cases (e.g. {sorted(missing)[0]})")
    return Loaded(Path(queries), corpus, cases, collected)


def phase3_runs(loaded: Loaded) -> list[CaseRun]:
    return [r for r in loaded.collected.runs if r.phase == PHASE and r.policy == "seed_rules"]


# -- which chunk each page is read through --------------------------------------------
async def corpus_sessions(
    admin_dsn: str, settings: Settings, sets: Sequence[Loaded],
) -> AsyncIterator[tuple[Loaded, KindSession, Flags]]:
    """Each set's corpus indexed and served in-process by this checkout (`lab.evaluation.kinds`,
    one embedder for all), in turn; its pool is closed when the caller moves on."""
    from lab.evaluation.kinds import corpus_dir, open_session
    from service.evaluation.harness import load_cached_embedder
    from service.flags import load_flags

    flags = load_flags(settings.flags_file)
    embedder = load_cached_embedder(settings, flags.embedding.backend)
    for loaded in sets:
        session, pool = await open_session(admin_dsn, settings, flags, corpus_dir(loaded.corpus, settings, None),
                                           loaded.corpus, embedder)
        try:
            yield loaded, session, flags
        finally:
            await pool.close()


async def best_chunks(admin_dsn: str, settings: Settings, sets: Sequence[Loaded]) -> dict[str, dict[str, int]]:
    """Per case id, for the first two pages of its phase-3 run: the page's best chunk in phase 3's
    fused evidence for the query, ranked by this checkout (pages absent from it are left out)."""
    out: dict[str, dict[str, int]] = {}
    async for loaded, session, flags in corpus_sessions(admin_dsn, settings, sets):
        queries = {c.id: c.query for c in loaded.cases}
        for run in phase3_runs(loaded):
            wanted = set(run.ranked[:2])
            found: dict[str, int] = {}
            evidence = await session.evidence(queries[run.case_id], flags, PHASE) if wanted else ()
            for e in evidence:  # best first: a page's first chunk here is its best
                if e.doc_slug in wanted and e.doc_slug not in found and e.chunk_index is not None:
                    found[e.doc_slug] = int(e.chunk_index)
            out[run.case_id] = found
        say(f"{loaded.corpus}: best chunks of {len(phase3_runs(loaded))} runs")
    return out


def compute_scores(sets: Sequence[Loaded], settings: Settings, scorer: str = "relevance-model") -> dict[str, dict[str, Any]]:
    """Per case id: each of the run's first two pages with the chunk read (`chunk`, and `first`
    when the page's first chunk stood in) and `scorer`'s score of it: the relevance model's of
    the chunk's passage, or late interaction's of the whole section (lab/relevance/late_interaction.py)."""
    from lab.evaluation.kinds import corpus_dir, read_corpus
    from lab.relevance.late_interaction import LateInteraction, whole_section
    from service.db.server import run_with_database
    from service.domain.types import Chunk
    from service.flags import load_flags
    from service.relevance.model import RelevanceModel
    from service.relevance.passage import passage

    chunks_of = run_with_database(settings, lambda dsn: best_chunks(dsn, settings, sets))
    model: Any = LateInteraction() if scorer == "late-interaction" else RelevanceModel(threads=1)

    def read(chunk: Chunk) -> str:
        return whole_section(chunk) if scorer == "late-interaction" else passage(chunk.header_path, chunk.content)

    flags = load_flags(settings.flags_file)
    out: dict[str, dict[str, Any]] = {}
    for loaded in sets:
        _, chunks = read_corpus(corpus_dir(loaded.corpus, settings, None), flags)
        by_key = {(c.doc_slug, c.chunk_index): c for c in chunks}
        first: dict[str, int] = {}
        for c in chunks:
            first[c.doc_slug] = min(first.get(c.doc_slug, c.chunk_index), c.chunk_index)
        queries = {c.id: c.query for c in loaded.cases}
        t0 = time.perf_counter()
        for run in phase3_runs(loaded):
            pages = []
            for slug in run.ranked[:2]:
                index = chunks_of[run.case_id].get(slug)
                stood_in = index is None
                index = first.get(slug) if index is None else index
                chunk = by_key.get((slug, index)) if index is not None else None
                text = read(chunk) if chunk is not None else slug
                pages.append({"page": slug, "chunk": index, "first": stood_in,
                              "score": round(model.score(queries[run.case_id], [text])[0], 4)})
            out[run.case_id] = {"corpus": loaded.corpus, "pages": pages}
        say(f"{loaded.corpus}: scored in {time.perf_counter() - t0:.0f}s")
    return out


def features_of(scored: Mapping[str, Any] | None) -> dict[str, float]:
    pages = scored["pages"] if scored else []
    top = pages[0]["score"] if pages else 0.0
    margin = top - pages[1]["score"] if len(pages) > 1 else 0.0
    return {"relevance_top": float(top), "relevance_margin": float(margin)}


def with_relevance(collected: Collected, scores: Mapping[str, Any]) -> Collected:
    """A copy of the runs with `EXTRA` in every run's features (0 but at phase 3's seed-rules runs)."""
    runs = []
    for run in collected.runs:
        extra = (features_of(scores.get(run.case_id)) if run.phase == PHASE and run.policy == "seed_rules"
                 else dict.fromkeys(EXTRA, 0.0))
        runs.append(msgspec.structs.replace(run, features={**run.features, **extra}))
    return msgspec.structs.replace(collected, runs=runs)


@contextlib.contextmanager
def extra_features(names: Sequence[str]) -> Iterator[None]:
    """The fit and the replay read `FEATURES` from these modules' globals: for the block, they see
    it with `names` appended (nothing is written to the service's files)."""
    from unittest import mock

    from service.decide import calibration, calibration_fit
    from service.evaluation import decisions

    features = (*calibration.FEATURES, *names)
    with contextlib.ExitStack() as stack:
        for module in (calibration, calibration_fit, decisions):
            stack.enter_context(mock.patch.object(module, "FEATURES", features))
        yield


# -- the leave-one-corpus-out table per variant ----------------------------------------
def auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores)) if len(set(labels)) == 2 else float("nan")


def run_variant(sets: Sequence[Loaded], collected: Sequence[Collected], names: Sequence[str]) -> dict[str, Any]:
    """The fits made without each corpus, the table at phase 3, the pooled dev and test totals,
    the AUC of p and the weight each fit gave the added features at phase 3."""
    corpora = [CorpusRuns(name=s.corpus, cases=s.cases, runs=c.runs) for s, c in zip(sets, collected, strict=True)]
    with extra_features(names):
        from service.decide.calibration import FEATURES

        fits = {}
        for i, held in enumerate(corpora):
            others = [j for j in range(len(sets)) if j != i]
            say(f"{', '.join(names) or 'without'}: fitting without {held.name}")
            fits[held.name] = fit(merge([collected[j] for j in others]), [c for j in others for c in sets[j].cases],
                                  f"all but {held.name}", portable=True, max_wrong=MAX_WRONG)
        table = leave_one_out(corpora, fits, PHASE)
        totals = {split: split_totals(corpora, fits, split, PHASE) for split in ("dev", "test")}
        aucs = {}
        for split in ("dev", "test"):
            scored = [(calibrated_p(fits[c.name], run), top_is_right(case, run.ranked))
                      for c in corpora for case, run, _ in c.on_split(split, PHASE)]
            aucs[split] = auc([p for p, _ in scored], [right for _, right in scored])
        weights = {name: [fits[c.name].phases[str(PHASE)].coef[FEATURES.index(name)] for c in corpora]
                   for name in names}
    return {"table": table[CALIBRATED], "totals": totals, "auc": aucs, "weights": weights,
            "points": {name: {"answer_p": m.answer_p[PHASE - 1], "no_match_p": m.no_match_p[PHASE - 1],
                              "ambiguity_ratio": m.ambiguity_ratio[PHASE - 1]} for name, m in fits.items()}}


def signal_auc(sets: Sequence[Loaded], scores: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """ROC AUC of each added feature alone for "the phase-3 run's first page is right", per split."""
    out: dict[str, dict[str, float]] = {}
    for split in ("dev", "test"):
        rows = []
        for s in sets:
            runs = {run.case_id: run for run in phase3_runs(s)}
            rows += [(features_of(scores.get(case.id)), top_is_right(case, runs[case.id].ranked))
                     for case in s.cases if case.split == split]
        out[split] = {name: auc([f[name] for f, _ in rows], [right for _, right in rows]) for name in EXTRA}
    return out


def _pct(x: float | int | None) -> str:
    return "–" if x is None else f"{100 * float(x):.1f} %"


def report(results: Mapping[str, Mapping[str, Any]], signal: Mapping[str, Mapping[str, float]],
           read: Mapping[str, int]) -> str:
    lines = [
        f"Leave-one-corpus-out over {len(next(iter(results.values()))['points'])} corpora, phase {PHASE}, "
        f"portable fits at max wrong {MAX_WRONG:g} on the other corpora's dev splits.",
        "",
        "## Pooled test splits",
        "",
        "| features | right outcome | needless clarify | wrong / answers | worst corpus: wrong / answers | "
        "OOD no match | AUC of p (test) |",
        "|---|--:|--:|--:|---|--:|--:|",
    ]
    for label, r in results.items():
        pooled = r["table"]["pooled"]
        per = {name: row for name, row in r["table"].items() if name != "pooled"}
        worst_name, worst = max(per.items(), key=lambda kv: (kv[1]["wrong_of_answers"] or 0.0, kv[1]["wrong_answers"]))
        lines.append(
            f"| {label} | {_pct(pooled['right_outcome'])} | {_pct(pooled['needless_clarifications'])} | "
            f"{_pct(pooled['wrong_of_answers'])} ({pooled['wrong_answers']}/{pooled['answers']}) | {worst_name} "
            f"{_pct(worst['wrong_of_answers'])} ({worst['wrong_answers']}/{worst['answers']}) | "
            f"{_pct(pooled['ood_no_match'])} | {r['auc']['test']:.3f} |")
    lines += ["", "## Pooled dev and test splits (each corpus decided by the fit made without it)", "",
              "| features | dev right | dev wrong / answers | AUC of p (dev) | test right | test wrong / answers |",
              "|---|--:|--:|--:|--:|--:|"]
    for label, r in results.items():
        dev, test = r["totals"]["dev"], r["totals"]["test"]
        lines.append(
            f"| {label} | {dev['right']}/{dev['cases']} ({_pct(dev['right'] / dev['cases'])}) | "
            f"{dev['wrong']}/{dev['answers']} ({_pct(dev['wrong'] / dev['answers'])}) | {r['auc']['dev']:.3f} | "
            f"{test['right']}/{test['cases']} ({_pct(test['right'] / test['cases'])}) | "
            f"{test['wrong']}/{test['answers']} ({_pct(test['wrong'] / test['answers'])}) |")
    lines += ["", "## Per corpus, test split: right outcome / wrong of answers", ""]
    corpora = [name for name in next(iter(results.values()))["table"] if name != "pooled"]
    lines += ["| corpus | " + " | ".join(results) + " |", "|---|" + "--:|" * len(results)]
    for name in corpora:
        cells = [f"{_pct(r['table'][name]['right_outcome'])} / {r['table'][name]['wrong_answers']}/"
                 f"{r['table'][name]['answers']}" for r in results.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## The weight the fits gave the added features at phase 3 (standardised; median, min, max "
              "over the twelve fits)", ""]
    for label, r in results.items():
        for name, ws in r["weights"].items():
            lines.append(f"- {label}: {name} {statistics.median(ws):+.3f} ({min(ws):+.3f} … {max(ws):+.3f})")
    lines += ["", "## Each added feature alone: ROC AUC for \"the phase-3 run's first page is right\"", ""]
    for split, aucs in signal.items():
        lines.append(f"- {split}: " + ", ".join(f"{name} {v:.3f}" for name, v in aucs.items()))
    lines += ["", f"Pages read: {read['best']} through the chunk that ranked them in phase 3's fused evidence, "
              f"{read['first']} through their first chunk (not in the evidence); {read['none']} runs without a page "
              "(features 0)."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from service.settings import load_settings

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", required=True, help="QUERIES.yaml=SIGNALS.json, one per corpus")
    parser.add_argument("--scores", type=Path, help="per-case scores: read when it covers the runs, else written")
    parser.add_argument("--scorer", choices=("relevance-model", "late-interaction"), default="relevance-model",
                        help="what scores a page when the scores are computed (default %(default)s)")
    parser.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data, to rank the chunks (env DATA_DIR)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    sets = [load_set(spec) for spec in args.set]
    wanted = {r.case_id for s in sets for r in phase3_runs(s)}
    scores: dict[str, Any] = {}
    if args.scores is not None and args.scores.exists():
        scores = json.loads(args.scores.read_text(encoding="utf-8"))
    if not wanted <= set(scores):
        scores = compute_scores(sets, load_settings().with_overrides(data_dir=args.data_dir), args.scorer)
        if args.scores is not None:
            args.scores.parent.mkdir(parents=True, exist_ok=True)
            args.scores.write_text(json.dumps(scores, sort_keys=True) + "\n", encoding="utf-8")
            say(f"wrote {args.scores}")
    pages = [p for case_id in wanted for p in scores[case_id]["pages"][:1]]
    read = {"best": sum(not p["first"] for p in pages), "first": sum(p["first"] for p in pages),
            "none": sum(not scores[case_id]["pages"] for case_id in wanted)}
    results = {}
    for label, names in VARIANTS.items():
        collected = [with_relevance(s.collected, scores) if names else s.collected for s in sets]
        results[label] = run_variant(sets, collected, names)
    text = report(results, signal_auc(sets, scores), read)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        command = "python -m lab.experiments.relevance_decision " + " ".join(f"--set {s}" for s in args.set)
        command += f" --scores {args.scores}" if args.scores is not None else ""
        command += f" --scorer {args.scorer}"
        args.out.write_text(f"{command}\n\n{text}\n", encoding="utf-8")
        say(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
