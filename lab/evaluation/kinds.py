"""`python -m lab eval-kinds --queries FILE [--phase 1|2|3|all] [--json F] [--cases F] [--set flag=value ...]`.

Ranking quality per query kind on a labelled query set (bench/queries/*.yaml,
format: labelled.py): for every answerable case (keyword, question,
paraphrase, typo, multi-intent) and every phase, the page ranking the service
computes, scored against the case's `pages`:

- top-1: the first page is one of `pages`;
- top-3: one of the first three pages is;
- MRR@10: 1 / rank of the first such page within the first ten (0 beyond).

Reported per kind and split (dev / test, `split_of`). Out-of-domain and
ambiguous cases have no single right page: they measure the decision
(`eval-decisions`), not the ranking, and are left out here.

The corpus is the set's `corpus` (seed: SEEDS_DIR; any other: tests/corpora/<corpus>;
`--seeds-dir` overrides), indexed into its own
database `eval_kinds_<corpus>` with the seeder's parser and chunker and the
service's indexer (vectors cached on disk like `eval`). Phases run through
the same parts as `eval`: the keyword indexes (phases 1-2) and
`Pipeline.hybrid()` (phase 3), documents ranked by their best chunk.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from service.domain.types import Chunk, Document
from service.evaluation.labelled import KINDS, SPLITS, LabelledQuery, QuerySetError, load_query_set
from service.flags import FlagError, Flags, apply_overrides, load_flags
from service.settings import PROJECT_ROOT, Settings

if TYPE_CHECKING:
    from service.pipeline import Pipeline

RANKED_KINDS = ("keyword", "question", "paraphrase", "typo", "multi_intent")
DEPTH = 10
# Keyword weights tried by `--fusion-ceiling` (semantic = 1 - keyword): no choice of fusion weight
# per query, however it is predicted, ranks better than the best of these for that query.
CEILING_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
TEST_CORPORA = PROJECT_ROOT / "tests" / "corpora"
CORPORA: Mapping[str, Path] = {"logseq-docs": TEST_CORPORA / "logseq-docs"}


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class KindScore:
    """One kind on one split for one phase."""

    cases: int
    top1: float
    top3: float
    mrr10: float

    def as_dict(self) -> dict[str, float | int]:
        return {"cases": self.cases, "top1": round(self.top1, 4), "top3": round(self.top3, 4),
                "mrr@10": round(self.mrr10, 4)}


def first_relevant_rank(ranking: Sequence[str], pages: Iterable[str], depth: int = DEPTH) -> int | None:
    """1-based rank of the first page in `pages` within `depth`, else None."""
    wanted = set(pages)
    for rank, slug in enumerate(ranking[:depth], start=1):
        if slug in wanted:
            return rank
    return None


def score_kind(ranks: Sequence[int | None]) -> KindScore:
    n = len(ranks)
    if n == 0:
        return KindScore(0, 0.0, 0.0, 0.0)
    return KindScore(
        cases=n,
        top1=sum(r == 1 for r in ranks) / n,
        top3=sum(r is not None and r <= 3 for r in ranks) / n,
        mrr10=sum(1.0 / r for r in ranks if r is not None) / n,
    )


def ranked_cases(cases: Sequence[LabelledQuery]) -> list[LabelledQuery]:
    return [c for c in cases if c.kind in RANKED_KINDS and c.pages]


def summarise(
    cases: Sequence[LabelledQuery], rankings: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, KindScore]]:
    """{split: {kind: score}} plus an `all` kind, over the cases that have a ranking."""
    out: dict[str, dict[str, KindScore]] = {}
    for split in SPLITS:
        per_kind: dict[str, list[int | None]] = {}
        for case in cases:
            if case.split != split or case.id not in rankings:
                continue
            rank = first_relevant_rank(rankings[case.id], case.pages)
            per_kind.setdefault(case.kind, []).append(rank)
        table: dict[str, KindScore] = {kind: score_kind(per_kind[kind]) for kind in KINDS if kind in per_kind}
        table["all"] = score_kind([r for ranks in per_kind.values() for r in ranks])
        out[split] = table
    return out


def page_best_chunks(evidence: Iterable[Any], depth: int = DEPTH) -> list[tuple[str, int | None, float]]:
    """Distinct pages in order, each with its best chunk's index (None at phase 1) and score."""
    out: dict[str, tuple[str, int | None, float]] = {}
    for e in evidence:
        if e.doc_slug not in out:
            out[e.doc_slug] = (e.doc_slug, e.chunk_index, float(e.score))
            if len(out) == depth:
                break
    return list(out.values())


def page_ranking(slugs: Iterable[str], depth: int = DEPTH) -> list[str]:
    """Distinct pages in order of their best chunk."""
    out: list[str] = []
    for slug in slugs:
        if slug not in out:
            out.append(slug)
            if len(out) == depth:
                break
    return out


class KindSession:
    """One corpus indexed and loaded: rank any case at any phase under any flags."""

    def __init__(self, pipeline: Any, pool: Any, embedder: Any) -> None:
        self.pipeline = pipeline
        self.pool = pool
        self.embedder = embedder

    async def evidence(self, text: str, flags: Flags, phase: int) -> Sequence[Any]:
        """The phase's ranked evidence (documents at phase 1, chunks after), best first."""
        pipeline = self.pipeline
        query, notes = pipeline.normalise(text, flags)
        indexes = pipeline.require_indexes()
        found: Sequence[Any]
        if phase == 1:
            found = indexes.documents.search(
                query.tokens, limit=DEPTH, lexical=flags.lexical, identifiers=query.identifiers)
        elif phase == 2:
            found = indexes.chunks.search(
                query.tokens, limit=len(indexes.chunks.units), lexical=flags.lexical, identifiers=query.identifiers)
        else:
            found = (await pipeline.hybrid().retrieve(query, flags, notes=notes)).fused
        return found

    async def rank(self, text: str, flags: Flags, phase: int) -> list[str]:
        return page_ranking(e.doc_slug for e in await self.evidence(text, flags, phase))

    async def rankings(
        self, cases: Sequence[LabelledQuery], flags: Flags, phase: int
    ) -> dict[str, list[str]]:
        return {case.id: await self.rank(case.query, flags, phase) for case in cases}

    async def best_chunks(
        self, cases: Sequence[LabelledQuery], flags: Flags, phase: int
    ) -> dict[str, list[tuple[str, int | None, float]]]:
        """Per case, each page of the ranking with the chunk that ranked it (its best) and its score."""
        return {case.id: page_best_chunks(await self.evidence(case.query, flags, phase)) for case in cases}

    async def fusion_ceiling(self, cases: Sequence[LabelledQuery], flags: Flags) -> dict[str, dict[str, list[str]]]:
        """Phase 3 rankings under the flags, the keyword leg alone, the semantic leg alone, and
        with hindsight the best fusion weight for each case (`CEILING_WEIGHTS`)."""
        by_weight: dict[float, dict[str, list[str]]] = {}
        for weight in CEILING_WEIGHTS:
            fixed = apply_overrides(flags, {"fusion.method": "weighted", "fusion.query_type_weights": False,
                                            "fusion.weights.default": [weight, round(1.0 - weight, 2)]})
            by_weight[weight] = await self.rankings(cases, fixed, 3)
        return {
            "flags": await self.rankings(cases, flags, 3),
            "keyword leg alone": by_weight[1.0],
            "semantic leg alone": by_weight[0.0],
            "best weight per case (hindsight)": {
                case.id: min((by_weight[w][case.id] for w in CEILING_WEIGHTS),
                             key=lambda ranking: first_relevant_rank(ranking, case.pages) or DEPTH + 1)
                for case in cases
            },
        }


async def open_session(
    admin_dsn: str, settings: Settings, flags: Flags, seeds_dir: Path, corpus: str, embedder: Any = None,
) -> tuple[KindSession, Any]:
    """Index `seeds_dir` into `eval_kinds_<corpus>`; returns the session and its pool (close it)."""
    from lab.evaluation.command import store_corpus
    from service.db.pool import create_pool
    from service.evaluation.harness import database_name, load_cached_embedder, prepare_database
    from service.ingest.indexer import index_embeddings
    from service.pipeline import SemanticLeg
    from service.scoring.semantic import QueryEmbeddingCache
    from service.wiring import make_pipeline

    name = database_name(f"kinds_{corpus}")
    dsn = await prepare_database(admin_dsn, name, settings.migrations_dir)
    docs, chunks = read_corpus(seeds_dir, flags)
    pool = await create_pool(dsn, min_size=1, max_size=4)
    try:
        await store_corpus(pool, docs, chunks)
        leg: SemanticLeg | None = None  # set once the corpus is embedded (below)
        pipeline = make_pipeline(seeds_dir, lambda: flags, semantic=lambda: leg)
        pipeline.load_corpus(docs, chunks, 1)
        if embedder is None:
            embedder = load_cached_embedder(settings, flags.embedding.backend)
        report = await index_embeddings(pool, embedder, batch_size=flags.embedding.batch_size,
                                        progress=lambda line: say(f"embedding: {line}"),
                                        kinds=flags.semantic.representations)
        say(f"{corpus}: {len(docs)} pages, {len(chunks)} chunks; {report.embedded} embedded, {report.reused} kept")

        async def model() -> str | None:
            return str(embedder.model_name)

        leg = SemanticLeg(
            embedder=embedder, cache=QueryEmbeddingCache(flags.embedding.query_cache_size),
            pool=lambda: pool, model=model,
        )
    except BaseException:
        await pool.close()
        raise
    return KindSession(pipeline, pool, embedder), pool


def corpus_dir(corpus: str, settings: Settings, override: Path | None) -> Path:
    """`--seeds-dir`, else the labelled set's corpus under tests/corpora, else SEEDS_DIR (`seed`)."""
    if override is not None:
        return override
    vendored = TEST_CORPORA / corpus
    return CORPORA.get(corpus, vendored if corpus != "seed" and vendored.is_dir() else settings.seeds_dir)


def read_corpus(folder: Path, flags: Flags) -> tuple[list[Document], list[Chunk]]:
    """The corpus's pages and chunks as seeding reads them (the seeder's reader and rules, chunks
    cut at `chunking.max_tokens`); raises SeedError where seeding would refuse it."""
    from service.ingest.seeder import SeedOptions, default_chunker, prepare

    chunker = default_chunker(flags.chunking.max_tokens)
    documents, chunks, _ = prepare(folder, chunker, SeedOptions.from_flags(flags))
    return documents, chunks


def memory_pipeline(
    folder: Path, flags: Flags, documents: Sequence[Document], chunks: Sequence[Chunk]
) -> Pipeline:
    """The service's pipeline over pages held in memory: phases 1-2 (no database, no semantic
    leg); the folder's own glossary and synonyms are read, as the service reads them."""
    from service.wiring import make_pipeline

    pipeline = make_pipeline(folder, lambda: flags)
    pipeline.load_corpus(documents, chunks, 1)
    return pipeline


async def run_kinds(
    admin_dsn: str, settings: Settings, flags: Flags, cases: Sequence[LabelledQuery], corpus: str,
    seeds_dir: Path, phases: Sequence[int], *, embedder: Any = None, fusion_ceiling: bool = False,
) -> dict[str, Any]:
    started = time.perf_counter()
    session, pool = await open_session(admin_dsn, settings, flags, seeds_dir, corpus, embedder)
    try:
        wanted = ranked_cases(cases)
        results: dict[str, Any] = {"corpus": corpus, "phases": {}}
        for phase in phases:
            t0 = time.perf_counter()
            best = await session.best_chunks(wanted, flags, phase)
            rankings = {case_id: [slug for slug, _, _ in pages] for case_id, pages in best.items()}
            say(f"phase {phase}: {len(wanted)} queries in {time.perf_counter() - t0:.1f}s")
            results["phases"][str(phase)] = summarise(wanted, rankings)
            results.setdefault("cases", {})[str(phase)] = case_rows(wanted, rankings, best)
        if fusion_ceiling:
            rows = await session.fusion_ceiling(wanted, flags)
            results["ceiling"] = {name: summarise(wanted, ranked) for name, ranked in rows.items()}
    finally:
        await pool.close()
    say(f"eval-kinds finished in {time.perf_counter() - started:.0f}s")
    return results


def case_rows(
    cases: Sequence[LabelledQuery], rankings: Mapping[str, Sequence[str]],
    best: Mapping[str, Sequence[tuple[str, int | None, float]]] | None = None,
) -> list[dict[str, Any]]:
    """Per case: its ranking and the rank of its first right page (None: not in the first ten);
    with `best`, the index of the chunk that ranked each of those five pages (what a reranker
    reads of the page: lab/relevance/evaluate.py) and its score."""
    rows: list[dict[str, Any]] = []
    for case in cases:
        row: dict[str, Any] = {"id": case.id, "split": case.split, "kind": case.kind, "query": case.query,
               "pages": list(case.pages), "rank": first_relevant_rank(rankings[case.id], case.pages),
               "ranking": list(rankings[case.id][:5])}
        if best is not None:
            row["chunks"] = [index for _, index, _ in best[case.id][:5]]
            row["scores"] = [round(score, 6) for _, _, score in best[case.id][:5]]
        rows.append(row)
    return rows


def format_kinds(results: Mapping[str, Any]) -> str:
    """One markdown table: phase × kind rows, dev and test columns."""
    lines = [
        "| phase | kind | dev n | dev top-1 | dev top-3 | dev MRR@10 | test n | test top-1 | test top-3 | test MRR@10 |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for phase, table in results["phases"].items():
        kinds = [k for k in (*RANKED_KINDS, "all") if any(k in table[s] for s in SPLITS)]
        for kind in kinds:
            cells = []
            for split in SPLITS:
                score = table[split].get(kind)
                if score is None:
                    cells.append("0 | - | - | -")
                else:
                    cells.append(f"{score.cases} | {score.top1:.1%} | {score.top3:.1%} | {score.mrr10:.3f}")
            lines.append(f"| {phase} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_ceiling(ceiling: Mapping[str, Mapping[str, Mapping[str, KindScore]]]) -> str:
    """Phase 3 top-1 / top-3 per kind for each ranking of `fusion_ceiling`."""
    kinds = [k for k in (*RANKED_KINDS, "all") if any(k in t[s] for t in ceiling.values() for s in SPLITS)]
    head = " | ".join(f"{split} {kind}" for split in SPLITS for kind in kinds)
    lines = [f"| phase 3 ranking (top-1 / top-3 %) | {head} |", "|---|" + "--:|" * (len(kinds) * len(SPLITS))]
    for name, table in ceiling.items():
        cells = []
        for split in SPLITS:
            for kind in kinds:
                score = table[split].get(kind)
                cells.append("-" if score is None else f"{100 * score.top1:.1f} / {100 * score.top3:.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _tables_json(table: Mapping[str, Mapping[str, KindScore]]) -> dict[str, Any]:
    return {split: {kind: s.as_dict() for kind, s in kinds.items()} for split, kinds in table.items()}


def to_json(results: Mapping[str, Any]) -> dict[str, Any]:
    out = {
        "corpus": results["corpus"],
        "phases": {phase: _tables_json(table) for phase, table in results["phases"].items()},
    }
    if "ceiling" in results:
        out["fusion_ceiling"] = {name: _tables_json(table) for name, table in results["ceiling"].items()}
    return out


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """`key=value` pairs; values are YAML (numbers, lists, booleans)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FlagError(f"--set {item!r}: expected flag=value")
        out[key.strip()] = yaml.safe_load(value)
    return out


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "eval-kinds", help="ranking quality per query kind on a labelled query set",
        description="Index the query set's corpus into its own database (eval_kinds_<corpus>), rank every "
        "answerable case per phase and print top-1, top-3 and MRR@10 per kind on the dev and test splits.",
    )
    p.add_argument("--queries", type=Path, required=True, help="labelled query set (bench/queries/*.yaml)")
    p.add_argument("--phase", choices=("1", "2", "3", "all"), default="all")
    p.add_argument("--seeds-dir", type=Path, help="corpus directory (default: from the set's `corpus`)")
    p.add_argument("--set", action="append", default=[], metavar="FLAG=VALUE",
                   help="flag override for this run (repeatable), e.g. --set fusion.method=rrf")
    p.add_argument("--json", type=Path, help="also write the table as JSON to this file")
    p.add_argument("--cases", type=Path,
                   help="write every case's rank and first five pages per phase as JSON (to read the misses)")
    p.add_argument("--fusion-ceiling", action="store_true",
                   help="also rank phase 3 with each leg alone and with the best fusion weight per case chosen "
                   "with hindsight: the most any per-query fusion of the two legs can reach")
    p.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from service.db.server import run_with_database

    settings = settings.with_overrides(data_dir=args.data_dir)
    try:
        cases = load_query_set(args.queries)
        corpus = corpus_of(args.queries)
        flags = apply_overrides(load_flags(settings.flags_file), parse_overrides(args.set), "--set")
    except (QuerySetError, FlagError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    seeds_dir = corpus_dir(corpus, settings, args.seeds_dir)
    if not seeds_dir.is_dir():
        print(f"error: corpus directory not found: {seeds_dir} (pass --seeds-dir)", file=sys.stderr)
        return 2
    phases = [1, 2, 3] if args.phase == "all" else [int(args.phase)]
    results = run_with_database(settings, lambda dsn: run_kinds(
        dsn, settings, flags, cases, corpus, seeds_dir, phases, fusion_ceiling=args.fusion_ceiling))
    print(f"{args.queries} (corpus {corpus}, {seeds_dir})")
    print(format_kinds(results))
    if "ceiling" in results:
        print()
        print(format_ceiling(results["ceiling"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(to_json(results), indent=2) + "\n", encoding="utf-8")
        say(f"wrote {args.json}")
    if args.cases:
        args.cases.parent.mkdir(parents=True, exist_ok=True)
        args.cases.write_text(json.dumps(results.get("cases", {}), indent=1) + "\n", encoding="utf-8")
        say(f"wrote {args.cases}")
    return 0


def corpus_of(path: Path) -> str:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return str(data.get("corpus", "seed")) if isinstance(data, dict) else "seed"
