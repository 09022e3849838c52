"""`python -m lab eval --dataset DIR [--phase 1|2|3|all] [--k 100] [--json FILE]`.

1. Load a BEIR-layout dataset (beir.py).
2. Isolation: its own database `eval_<dataset>` on the same server as the
   service (DATABASE_URL, else the embedded PostgreSQL under DATA_DIR),
   created and migrated here. The service's database is never touched.
3. Index with the service's own parts: BEIR doc → `Document(slug="beir/<_id>",
   category="beir")` → the service's chunker → docs_knowledge(+_chunks)
   (the seeder's sync functions) → `index_embeddings` (the service's indexer
   and embedder, with an on-disk vector cache in front: cache.py).
4. Run every query through the pipeline's own stages: `Pipeline.normalise`,
   the in-memory keyword indexes with the flags' lexical scorer (phase 1
   documents, phase 2 chunks), and for phase 3 the service's own
   `HybridRetriever` (`Pipeline.hybrid()`: keyword leg + pgvector semantic leg
   + fusion + de-duplication, exactly as phase 3's tier runs it). What is
   bypassed: the API layer (top_k is capped there) and the decision rules
   (eval ranks, it does not answer/clarify); documents are ranked by their
   best chunk. Each leg hands max(k, candidate_pool) candidates to fusion.
5. Metrics with ranx; baselines (baselines.py) in the same run and table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from lab.evaluation.beir import BeirDataset, DatasetError, load_beir
from lab.evaluation.metrics import METRICS, evaluate
from service.db.server import run_with_database
from service.domain.types import Chunk, Document, Evidence, NormalizedQuery
from service.evaluation.harness import database_name, load_cached_embedder, prepare_database, say
from service.flags import Flags, LexicalFlags, apply_overrides, load_flags
from service.settings import Settings

if TYPE_CHECKING:
    from service.pipeline import Pipeline
    from service.scoring.hybrid import HybridLegs, HybridRetriever

EVAL_CATEGORY = "beir"
"""Every IR-evaluation page's category (any slug-like name: categories are the corpus's own)."""
SLUG_PREFIX = "beir/"


class Progress:
    """Periodic progress lines with rate and ETA (stderr, so --json stays clean on stdout)."""

    def __init__(self, label: str, total: int, every_s: float = 2.0) -> None:
        self.label, self.total, self.every_s = label, total, every_s
        self.started = time.perf_counter()
        self.last = 0.0

    def update(self, done: int, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < self.every_s and done < self.total:
            return
        self.last = now
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else 0.0
        say(f"{self.label}: {done}/{self.total} ({rate:.1f}/s, elapsed {elapsed:.0f}s, ETA {eta:.0f}s)")


def to_documents(dataset: BeirDataset) -> list[Document]:
    docs = []
    for d in dataset.corpus:
        digest = hashlib.sha256(json.dumps([d.title, d.text]).encode()).hexdigest()
        docs.append(Document(
            slug=SLUG_PREFIX + d.doc_id, category=EVAL_CATEGORY, title=d.title or d.doc_id,
            content=d.text, keywords=(), content_hash=digest,
        ))
    return docs


def doc_ranking(evidence: Sequence[Evidence], k: int) -> list[str]:
    """Documents by their best chunk, ids without the slug prefix."""
    out: list[str] = []
    seen: set[str] = set()
    for e in evidence:
        if e.doc_slug not in seen:
            seen.add(e.doc_slug)
            out.append(e.doc_slug.removeprefix(SLUG_PREFIX))
            if len(out) == k:
                break
    return out


async def store_corpus(pool: Any, docs: list[Document], chunks: list[Chunk]) -> None:
    from service.ingest.seeder import _sync_chunks, _sync_documents

    async with pool.acquire() as conn, conn.transaction():
        counts, orphaned = await _sync_documents(conn, docs)
        chunk_counts = await _sync_chunks(conn, chunks, already_deleted=orphaned)
    say(f"stored: documents {msgspec.to_builtins(counts)}, chunks {msgspec.to_builtins(chunk_counts)}")


def chunk_all(docs: list[Document], max_tokens: int) -> list[Chunk]:
    from service.ingest.chunker import chunk_document

    progress = Progress("chunking", len(docs))
    chunks: list[Chunk] = []
    for i, doc in enumerate(docs, start=1):
        chunks.extend(chunk_document(doc, max_tokens=max_tokens))
        progress.update(i)
    progress.update(len(docs), force=True)
    return chunks


async def run_eval(
    dataset: BeirDataset, admin_dsn: str, settings: Settings, flags: Flags, phases: list[int], k: int,
    *, baselines: bool = True, variants: bool = True, embedder: Any = None,
) -> dict[str, Any]:
    from service.db.pool import create_pool
    from service.ingest.indexer import index_embeddings
    from service.normalize.lexicon import Synonyms
    from service.pipeline import Pipeline, SemanticLeg
    from service.scoring.semantic import QueryEmbeddingCache
    from service.scoring.tier1_cache import Tier1Cache

    started = time.perf_counter()
    name = database_name(dataset.name)
    dsn = await prepare_database(admin_dsn, name, settings.migrations_dir)
    docs = to_documents(dataset)
    chunks = chunk_all(docs, flags.chunking.max_tokens)
    pool = await create_pool(dsn, min_size=1, max_size=4)
    results: dict[str, Any] = {"dataset": dataset.name, "phases": {}, "baselines": {}}
    extra: dict[str, dict[str, float]] = {}
    try:
        await store_corpus(pool, docs, chunks)
        t0 = time.perf_counter()
        leg: SemanticLeg | None = None  # phase 3's, once the corpus is embedded (below)
        # No glossary and no synonyms: a BEIR collection brings neither.
        pipeline = Pipeline(cache=Tier1Cache(()), synonyms=Synonyms(), flags=lambda: flags, semantic=lambda: leg)
        pipeline.load_corpus(docs, chunks, 1)
        say(f"keyword indexes: {len(docs)} documents, {len(chunks)} chunks in {time.perf_counter() - t0:.1f}s")
        need_model = 3 in phases or baselines
        if need_model and embedder is None:
            embedder = load_cached_embedder(settings, flags.embedding.backend)
        if 3 in phases:
            report = await index_embeddings(
                pool, embedder, batch_size=flags.embedding.batch_size,
                progress=lambda line: say(f"embedding: {line}"), kinds=flags.semantic.representations,
            )
            say(f"embeddings: {report.embedded} embedded, {report.reused} already in {name} "
                f"({embedder.store.hits} from the disk cache)")

            async def model() -> str | None:
                return str(embedder.model_name)

            leg = SemanticLeg(
                embedder=embedder, cache=QueryEmbeddingCache(flags.embedding.query_cache_size),
                pool=lambda: pool, model=model,
            )
        rankings = await rank_all(pipeline, dataset, flags, phases, k, variants)
        for label, run in rankings.items():
            metrics = evaluate(dataset.qrels, run)
            if label in {"1", "2", "3"}:
                results["phases"][label] = metrics
            else:
                extra[label] = metrics
        if baselines:
            from lab.evaluation.baselines import bm25_rankings, dense_rankings

            t0 = time.perf_counter()
            results["baselines"]["bm25"] = evaluate(dataset.qrels, bm25_rankings(dataset, k))
            say(f"baseline bm25 in {time.perf_counter() - t0:.1f}s")
            progress = Progress("baseline dense: embedding documents", len(dataset.corpus))
            results["baselines"]["dense"] = evaluate(
                dataset.qrels, dense_rankings(dataset, embedder, k, progress=lambda d, _t: progress.update(d))
            )
    finally:
        await pool.close()
    say(f"eval finished in {time.perf_counter() - started:.0f}s")
    results["_variants"] = extra
    return results


async def hybrid_legs(
    pipeline: Pipeline, query: NormalizedQuery, notes: list[str], flags: Flags, k: int
) -> tuple[HybridRetriever, HybridLegs]:
    """Both legs of phase 3 from the service's own `HybridRetriever`, k deep at least."""
    retriever = pipeline.hybrid()
    legs = await retriever.legs(query, flags, pool_size=max(k, flags.retrieval.candidate_pool), notes=notes)
    return retriever, legs


async def hybrid_ranking(
    pipeline: Pipeline, query: NormalizedQuery, notes: list[str], flags: Flags, k: int
) -> list[Evidence]:
    """Phase 3's fused ranking: what the `3` row of the table is computed from."""
    retriever, legs = await hybrid_legs(pipeline, query, notes, flags, k)
    return retriever.fuse(query, legs, flags).fused


async def rank_all(
    pipeline: Pipeline, dataset: BeirDataset, flags: Flags, phases: list[int], k: int, variants: bool
) -> dict[str, dict[str, list[str]]]:
    indexes = pipeline.require_indexes()
    lexical = flags.lexical
    other = LexicalFlags(**{**msgspec.to_builtins(lexical), "scorer": "seed" if lexical.scorer == "bm25" else "bm25"})
    pool_size = max(k, flags.retrieval.candidate_pool)
    # Fusion variants: the same retriever with other fusion flags.
    weighted = apply_overrides(flags, {"fusion.method": "weighted"})
    flat = apply_overrides(flags, {"fusion.method": "weighted", "fusion.query_type_weights": False})
    rrf = apply_overrides(flags, {"fusion.method": "rrf"})
    runs: dict[str, dict[str, list[str]]] = {}

    def put(label: str, qid: str, ranking: list[str]) -> None:
        runs.setdefault(label, {})[qid] = ranking

    progress = Progress(f"querying phases {phases}", len(dataset.queries))
    for done, (qid, text) in enumerate(dataset.queries.items(), start=1):
        query, notes = pipeline.normalise(text, flags)
        tokens, names = query.tokens, query.identifiers
        if 1 in phases:
            put("1", qid, doc_ranking(indexes.documents.search(tokens, limit=k, lexical=lexical, identifiers=names), k))
            if variants:
                put(f"1 lexical={other.scorer}", qid, doc_ranking(indexes.documents.search(tokens, limit=k, lexical=other), k))
        if 2 in phases:
            every = len(indexes.chunks.units)
            put("2", qid, doc_ranking(indexes.chunks.search(tokens, limit=every, lexical=lexical, identifiers=names), k))
            if variants:
                put(f"2 lexical={other.scorer}", qid, doc_ranking(indexes.chunks.search(tokens, limit=every, lexical=other), k))
        if 3 in phases:
            retriever, legs = await hybrid_legs(pipeline, query, notes, flags, k)
            put("3", qid, doc_ranking(retriever.fuse(query, legs, flags).fused, k))
            if variants:
                default = flags.fusion.weights.default
                put("3 weighted (query-type weights)", qid, doc_ranking(retriever.fuse(query, legs, weighted).fused, k))
                put(f"3 weighted {default[0]:g}/{default[1]:g} (default)", qid,
                    doc_ranking(retriever.fuse(query, legs, flat).fused, k))
                put(f"3 rrf k={flags.fusion.rrf_k}", qid, doc_ranking(retriever.fuse(query, legs, rrf).fused, k))
                other_kw = indexes.chunks.search(tokens, limit=pool_size, lexical=other)
                put(f"3 rrf, lexical={other.scorer}", qid,
                    doc_ranking(retriever.fuse(query, legs.with_keyword(other_kw), rrf).fused, k))
                put("3 semantic leg only", qid, doc_ranking([_hit_evidence(h) for h in legs.hits], k))
        progress.update(done)
    return runs


def _hit_evidence(hit: Any) -> Evidence:
    return Evidence(doc_slug=hit.doc_slug, title=hit.title, category=hit.category, snippet="",
                    score=hit.similarity, content_hash="", matched_terms=(), source="embedding")


def format_table(results: dict[str, Any], flags: Flags) -> str:
    head = "| system | " + " | ".join(METRICS) + " |"
    lines = [head, "|---|" + "---|" * len(METRICS)]
    names = {
        "1": f"phase 1 (documents, lexical={flags.lexical.scorer})",
        "2": f"phase 2 (chunks, lexical={flags.lexical.scorer})",
        "3": f"phase 3 (hybrid, fusion={flags.fusion.method})",
    }

    def row(label: str, m: dict[str, float]) -> None:
        lines.append(f"| {label} | " + " | ".join(f"{m[x]:.4f}" for x in METRICS) + " |")

    for phase, metrics in results["phases"].items():
        row(names[phase], metrics)
    for label, metrics in results.get("_variants", {}).items():
        row(f"variant: phase {label}", metrics)
    if "bm25" in results["baselines"]:
        row("baseline BM25 (bm25s lucene k1=1.5 b=0.75, Snowball)", results["baselines"]["bm25"])
    if "dense" in results["baselines"]:
        row("baseline dense (all-MiniLM-L6-v2, exact cosine)", results["baselines"]["dense"])
    return "\n".join(lines)


def targets(results: dict[str, Any]) -> list[str]:
    out: list[str] = []
    phases, base = results["phases"], results["baselines"]
    if not base:
        return out
    bm25 = base["bm25"]["ndcg@10"]
    best = max(b["ndcg@10"] for b in base.values())
    for p in ("1", "2"):
        if p in phases:
            d = phases[p]["ndcg@10"] - bm25
            out.append(f"phase {p} nDCG@10 - BM25 = {d:+.4f} ({'met' if d >= 0 else 'MISSED'}: >= 0)")
    if "3" in phases:
        d = phases["3"]["ndcg@10"] - best
        out.append(f"phase 3 nDCG@10 - best baseline = {d:+.4f} ({'met' if d >= 0.03 else 'MISSED'}: >= +0.03)")
    return out


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "eval", help="retrieval quality on a BEIR-layout dataset",
        description="Index a BEIR-layout dataset into its own database (eval_<name>) with the "
        "service's chunker, embedder and scorers, run every query per phase, print nDCG@10, "
        "Recall@10, Recall@100 and MRR@10 next to BM25 and dense baselines.",
    )
    p.add_argument("--dataset", type=Path, required=True, help="directory with corpus.jsonl, queries.jsonl, qrels/test.tsv")
    p.add_argument("--phase", choices=("1", "2", "3", "all"), default="all")
    p.add_argument("--k", type=int, default=100, help="ranking depth per query (default 100)")
    p.add_argument("--json", type=Path, help="also write the metrics as JSON to this file")
    p.add_argument("--no-baselines", action="store_true", help="skip the BM25 and dense baselines")
    p.add_argument("--no-variants", action="store_true", help="skip the alternative scorer/fusion rows")
    p.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    settings = settings.with_overrides(data_dir=args.data_dir)
    try:
        dataset = load_beir(args.dataset)
    except DatasetError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.k < 10:
        print("error: --k must be >= 10", file=sys.stderr)
        return 2
    flags = load_flags(settings.flags_file)
    phases = [1, 2, 3] if args.phase == "all" else [int(args.phase)]
    say(f"dataset {dataset.name}: {len(dataset.corpus)} documents, {len(dataset.queries)} judged queries")
    results = run_with_database(settings, lambda dsn: run_eval(
        dataset, dsn, settings, flags, phases, args.k,
        baselines=not args.no_baselines, variants=not args.no_variants,
    ))
    print(format_table(results, flags))
    for line in targets(results):
        print(line)
    if args.json:
        public = {key: results[key] for key in ("dataset", "phases", "baselines")}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(public, indent=2) + "\n", encoding="utf-8")
        say(f"wrote {args.json}")
    return 0
