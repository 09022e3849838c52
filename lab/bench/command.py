"""`python -m lab bench [--quick] [--out lab/results]`.

1. In-process latency per phase over repetitions of the golden queries
   (`tests/golden/navigation.yaml`) through `Pipeline.run`, with the query
   embedding cache off and on, and phase 3's split (embed / vector search /
   fusion) from `TierOutcome.stats`.
2. HTTP on loopback: the server started as the README does
   (`python -m service serve --port P --data-dir D`) and the raw-asyncio load
   generator of http.py at concurrency 1, 16, 64, time-bounded; `/health`
   first, to show the generator's own ceiling.
3. Scale: synthetic corpora (10,000 and 100,000 chunks) generated from a
   seed. Vectors are SYNTHETIC (seeded random unit vectors, not model
   output: embedding 100k chunks on 2 cores would take about an hour); real
   embedding throughput is measured separately on the seed corpus.
Everything runs in isolated databases (`bench_*`) on its own embedded server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from lab.bench.golden_queries import golden_queries
from service.db.embedded import free_port
from service.db.server import run_with_database
from service.evaluation.harness import say
from service.flags import Flags, load_flags
from service.settings import PROJECT_ROOT, Settings
from service.stats import summary


async def build_pipeline(pool: Any, settings: Settings, flags: Flags, embedder: Any, cache_size: int) -> Any:
    from service.db.repo import load_chunks, load_documents
    from service.embedding.batcher import QueryBatcher
    from service.pipeline import SemanticLeg
    from service.scoring.semantic import QueryEmbeddingCache
    from service.wiring import make_pipeline

    async def model() -> str | None:
        return str(embedder.model_name)

    batcher = QueryBatcher(embedder, lambda: flags.embedding)
    leg = SemanticLeg(embedder=batcher, cache=QueryEmbeddingCache(cache_size), pool=lambda: pool, model=model)
    pipeline = make_pipeline(settings.seeds_dir, lambda: flags, semantic=lambda: leg)
    pipeline.load_corpus(await load_documents(pool), await load_chunks(pool), 1)
    return pipeline


def _semantic_leg(pipeline: Any) -> Any:
    """The leg `build_pipeline` gave phase 3's tier, whose query cache the runs below swap."""
    return pipeline.hybrid_tier.semantic()


async def latency(pipeline: Any, flags: Flags, queries: list[str], reps: int) -> dict[str, Any]:
    from service.pipeline import RetrieveParams, TierContext
    from service.scoring.semantic import QueryEmbeddingCache

    leg = _semantic_leg(pipeline)
    out: dict[str, Any] = {}
    for phase in (1, 2, 3):
        for cache in (("off", "on") if phase == 3 else ("on",)):
            leg.cache = QueryEmbeddingCache(0 if cache == "off" else 1024)
            if cache == "on":
                for q in queries:  # warm
                    await pipeline.run(RetrieveParams(q, phase_cap=phase), flags)
            times: list[float] = []
            for _ in range(reps):
                for q in queries:
                    t = time.perf_counter()
                    response = await pipeline.run(RetrieveParams(q, phase_cap=phase), flags)
                    times.append((time.perf_counter() - t) * 1000)
                    if response.phase != phase and phase > 1 and response.phase != 0:
                        pass  # a phase may answer from the Tier-1 cache (phase 0); counted as is
            out[f"phase {phase}" + (f" (query cache {cache})" if phase == 3 else "")] = summary(times)
    split: dict[str, list[float]] = {"embed_ms": [], "vector_search_ms": [], "fusion_ms": []}
    leg.cache = QueryEmbeddingCache(0)
    for _ in range(max(1, reps // 2)):
        for q in queries:
            query, notes = pipeline.normalise(q, flags)
            ctx = TierContext(query=query, notes=notes, category=None, flags=flags, top_k=3)
            candidates = await pipeline.hybrid_tier.run(ctx)
            for key in split:
                split[key].append(float(candidates.stats[key]))
    out["phase 3 split (cache off)"] = {k: summary(v) for k, v in split.items()}
    return out


HISTORY_TURNS = (
    ("user", "how do I rename a workspace"), ("assistant", "Workspace Actions > Renaming a workspace"),
    ("user", "and how do I delete it?"), ("assistant", "Workspace Actions > Deleting a workspace"),
    ("user", "home"), ("assistant", "Do you mean Home (concepts) or Dashboard (concepts)?"),
    ("user", "the dashboard one"), ("assistant", "Dashboard"),
    ("user", "how do I remove a widget from my dashboard"), ("assistant", "Widget Manager > Removing a widget"),
)
"""Ten turns of a plausible chat (the contract's maximum) sent with every query of the conversation row."""


async def conversation_latency(pipeline: Any, flags: Flags, queries: list[str], reps: int) -> dict[str, Any]:
    """Phase 3 (query cache on) per golden query, without and with 10 turns of history and a screen."""
    from service.conversation.stage import Conversation
    from service.conversation.topic import Screen, Turn
    from service.pipeline import RetrieveParams

    slugs = {0: ("actions/workspaces",), 1: ("actions/workspaces",), 3: ("concepts/dashboard",),
             4: ("widgets/widget-manager",)}
    turns = tuple(Turn(role=role, content=text, doc_slugs=slugs.get(i // 2, ()) if role == "assistant" else ())  # type: ignore[arg-type]
                  for i, (role, text) in enumerate(HISTORY_TURNS))
    conversation = Conversation(history=turns, screen=Screen(screen="dashboard", focused="widget:quick_links"))
    out: dict[str, Any] = {}
    for name, conv in (("without history", None), ("with 10 history turns", conversation)):
        for q in queries:  # warm the query cache for both rows alike
            await pipeline.run(RetrieveParams(q, phase_cap=3, conversation=conv), flags, observe=False)
        times: list[float] = []
        for _ in range(reps):
            for q in queries:
                t = time.perf_counter()
                await pipeline.run(RetrieveParams(q, phase_cap=3, conversation=conv), flags, observe=False)
                times.append((time.perf_counter() - t) * 1000)
        out[name] = summary(times)
    out["ratio_p95"] = round(out["with 10 history turns"]["p95"] / out["without history"]["p95"], 2)
    return out


async def http_bench(seconds: float, levels: list[int]) -> dict[str, Any]:
    from lab.loadgen import run_load
    from service.readiness import wait_url_ready

    port = free_port()
    data_dir = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port), "--data-dir", str(data_dir / "pg")],
        cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    out: dict[str, Any] = {"pid": proc.pid}
    try:
        await wait_url_ready(f"http://127.0.0.1:{port}", timeout_s=300)
        queries = golden_queries()
        import psutil

        server = psutil.Process(proc.pid)

        from lab.bench.http import QuestionSource, labelled_questions

        source = QuestionSource(labelled_questions())

        def unique(phase: int) -> Any:
            # A realistic question never sent before in the run: the query cache cannot answer.
            return source.body(phase)

        def repeated(phase: int) -> Any:
            return lambda i: {"query": queries[i % len(queries)], "phase": phase}

        plan: list[tuple[str, int | None, Any]] = [("/health", None, None)] + [
            (f"/retrieve cap {p} (unique queries)", p, unique(p)) for p in (1, 2, 3)
        ] + [("/retrieve cap 3 (golden repeated: query cache on)", 3, repeated(3))]
        url = f"http://127.0.0.1:{port}"
        for target, phase, make_body in plan:
            path = "/health" if make_body is None else "/retrieve"
            for c in levels:
                r = await run_load(url, make_body, c, seconds, path)
                out[f"{target} c={c}"] = {"rps": r.rps, "p50": r.p50_ms, "p95": r.p95_ms,
                                          "p99": r.p99_ms, "errors": r.errors, "answered": r.answered(),
                                          "warnings": r.warnings(phase)}
                say(f"http {target} c={c}: {r.rps:.0f} req/s p95 {r.p95_ms:.2f} ms errors {r.errors}"
                    + (f" answered: {r.answered()}" if r.answered_by else ""))
                for warning in r.warnings(phase):
                    say(f"  warning: {warning}")
        out["server_rss_mb"] = round(server.memory_info().rss / 2**20, 1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    return out


def synthetic_corpus(n_chunks: int, seed: int, vocabulary: list[str]) -> tuple[list[Any], list[Any]]:
    """Documents of 10 chunks; words drawn Zipf-like from the seed corpus's vocabulary."""
    import hashlib

    from service.domain.types import Chunk, Document

    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    weights /= weights.sum()
    order = rng.permutation(len(vocabulary))
    vocab = [vocabulary[i] for i in order]
    docs, chunks = [], []
    per_doc = 10
    for d in range(n_chunks // per_doc):
        title = " ".join(rng.choice(vocab, size=3, p=weights))
        slug = f"synthetic/{seed}-{d}"
        texts = [" ".join(rng.choice(vocab, size=int(rng.integers(40, 120)), p=weights)) for _ in range(per_doc)]
        content = "\n\n".join(texts)
        h = hashlib.md5(content.encode()).hexdigest()
        docs.append(Document(slug=slug, category="concepts", title=title, content=content, keywords=(), content_hash=h))
        for i, text in enumerate(texts):
            chunks.append(Chunk(doc_slug=slug, category="concepts", title=title, header_path=title,
                                chunk_index=i, content=text, keywords=(),
                                chunk_hash=hashlib.md5(text.encode()).hexdigest(), token_count=len(text.split())))
    return docs, chunks


async def scale_bench(admin_dsn: str, settings: Settings, flags: Flags, embedder: Any, sizes: list[int],
                      reps: int, vocabulary: list[str]) -> dict[str, Any]:
    import psutil

    from service.db.pool import create_pool
    from service.pipeline import RetrieveParams

    out: dict[str, Any] = {}
    queries = golden_queries()
    for size in sizes:
        dsn = await _fresh(admin_dsn, f"bench_scale_{size}", settings)
        t0 = time.perf_counter()
        docs, chunks = synthetic_corpus(size, seed=size, vocabulary=vocabulary)
        gen_s = time.perf_counter() - t0
        rng = np.random.default_rng(size)
        vectors = rng.standard_normal((len(chunks), embedder.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        pool = await create_pool(dsn, min_size=1, max_size=4)
        try:
            t0 = time.perf_counter()
            async with pool.acquire() as c:
                await c.copy_records_to_table("docs_knowledge", columns=["slug", "category", "title", "content", "keywords", "content_hash"],
                                              records=[(d.slug, d.category, d.title, d.content, [], d.content_hash) for d in docs])
                await c.copy_records_to_table("docs_knowledge_chunks", columns=["doc_slug", "category", "title", "header_path", "chunk_index", "content", "keywords", "chunk_hash", "token_count"],
                                              records=[(x.doc_slug, x.category, x.title, x.header_path, x.chunk_index, x.content, [], x.chunk_hash, x.token_count) for x in chunks])
                rows_s = time.perf_counter() - t0
                t1 = time.perf_counter()
                await c.execute("drop index if exists chunk_embeddings_hnsw_384")
                by_key = {(x.doc_slug, x.chunk_index): i for i, x in enumerate(chunks)}
                order = await c.fetch("select id, doc_slug, chunk_index, chunk_hash from docs_knowledge_chunks")
                await c.copy_records_to_table(
                    "chunk_embeddings", columns=["chunk_id", "model", "dim", "chunk_hash", "input_hash", "embedding"],
                    records=[(r["id"], embedder.model_name, embedder.dim, r["chunk_hash"], "", vectors[by_key[(r["doc_slug"], r["chunk_index"])]]) for r in order])
                # The vectors now live in PostgreSQL only, as in the service: drop the
                # benchmark's copy so the RSS below is what a service would hold.
                del vectors, by_key, order
                await c.execute("set maintenance_work_mem = '1GB'")
                await c.execute("set max_parallel_maintenance_workers = 1")
                # Building HNSW over 100k vectors takes minutes on 2 cores: no command timeout.
                await c.execute("""create index chunk_embeddings_hnsw_384 on chunk_embeddings
                    using hnsw ((embedding::vector(384)) vector_cosine_ops) with (m = 16, ef_construction = 64) where dim = 384""",
                    timeout=3600)
                await c.execute("analyze", timeout=600)
                vec_s = time.perf_counter() - t1
                size_mb = await c.fetchval("select (pg_total_relation_size('docs_knowledge') + pg_total_relation_size('docs_knowledge_chunks') + pg_total_relation_size('chunk_embeddings')) / 1048576.0")
            rss0 = psutil.Process().memory_info().rss
            t2 = time.perf_counter()
            pipeline = await build_pipeline(pool, settings, flags, embedder, 0)
            mem_s = time.perf_counter() - t2
            rss = psutil.Process().memory_info().rss
            lat: dict[str, list[float]] = {"2": [], "3": []}
            for phase in (2, 3):
                for _ in range(reps):
                    for q in queries:
                        t = time.perf_counter()
                        await pipeline.run(RetrieveParams(q, phase_cap=phase), flags)
                        lat[str(phase)].append((time.perf_counter() - t) * 1000)
            out[str(size)] = {
                "chunks": len(chunks), "generate_s": round(gen_s, 1), "rows_s": round(rows_s, 1),
                "vectors_and_hnsw_s": round(vec_s, 1), "keyword_index_s": round(mem_s, 1),
                "rate_chunks_per_s": round(len(chunks) / (rows_s + vec_s + mem_s), 0),
                "phase2": summary(lat["2"]), "phase3": summary(lat["3"]),
                "rss_mb": round(rss / 2**20, 1), "keyword_index_rss_mb": round((rss - rss0) / 2**20, 1),
                "pg_size_mb": round(float(size_mb), 1),
            }
            say(f"scale {size}: {json.dumps(out[str(size)])}")
            del pipeline
        finally:
            await pool.close()
    return out


async def _fresh(admin_dsn: str, name: str, settings: Settings) -> str:
    import asyncpg

    from service.db.migrate import migrate_up
    from service.evaluation.harness import with_database

    conn = await asyncpg.connect(admin_dsn)
    try:
        await conn.execute(f'drop database if exists "{name}" with (force)')
        await conn.execute(f'create database "{name}"')
    finally:
        await conn.close()
    dsn = with_database(admin_dsn, name)
    conn = await asyncpg.connect(dsn)
    try:
        await migrate_up(conn, settings.migrations_dir)
    finally:
        await conn.close()
    return dsn


async def in_process(
    admin_dsn: str, settings: Settings, flags: Flags, quick: bool, conversation_only: bool = False
) -> dict[str, Any]:
    from service.db.pool import create_pool
    from service.embedding.backends import load_embedder, onnx_cache_dir
    from service.ingest.indexer import index_embeddings
    from service.ingest.seeder import default_chunker, seed

    dsn = await _fresh(admin_dsn, "bench_seed", settings)
    pool = await create_pool(dsn, min_size=1, max_size=4)
    results: dict[str, Any] = {}
    try:
        await seed(pool, settings.seeds_dir, default_chunker(flags.chunking.max_tokens))
        embedder = load_embedder(flags.embedding.backend, settings.embedding_model, onnx_cache_dir(settings.data_dir))
        report = await index_embeddings(pool, embedder, batch_size=flags.embedding.batch_size, progress=lambda _l: None)
        results["embedding"] = {"chunks": report.embedded, "seconds": report.seconds,
                                "chunks_per_s": round(report.chunks_per_second, 1)}
        say(f"real embedding: {results['embedding']}")
        pipeline = await build_pipeline(pool, settings, flags, embedder, 1024)
        if conversation_only:
            results["conversation"] = await conversation_latency(pipeline, flags, golden_queries(), 5 if quick else 30)
            return results
        results["latency"] = await latency(pipeline, flags, golden_queries(), 5 if quick else 30)
        say(f"in-process: {json.dumps(results['latency'])}")
        results["conversation"] = await conversation_latency(pipeline, flags, golden_queries(), 5 if quick else 30)
        say(f"conversation: {json.dumps(results['conversation'])}")
        from service.normalize.lexicon import build_lexicon
        assert pipeline.indexes is not None
        vocabulary = sorted(pipeline.indexes.lexicon.vocabulary)
        del build_lexicon
        results["scale"] = await scale_bench(admin_dsn, settings, flags, embedder,
                                             [10_000] if quick else [10_000, 100_000], 2 if quick else 5, vocabulary)
    finally:
        await pool.close()
    return results


def conversation_table(conv: dict[str, Any]) -> list[str]:
    lines = ["| phase 3, golden queries (query cache on) | n | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|"]
    for name in ("without history", "with 10 history turns"):
        s = conv[name]
        lines.append(f"| {name} | {s['n']} | {s['p50']} | {s['p95']} | {s['p99']} |")
    return [*lines, "", f"p95 with 10 turns / without: {conv['ratio_p95']}× (target ≤ 1.5×).", ""]


def write_outputs(out_dir: Path, results: dict[str, Any], quick: bool) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [f"Machine: {os.cpu_count()} CPU cores, no GPU; {'quick' if quick else 'full'} run.", "",
             "| in-process (golden queries) | n | p50 ms | p95 ms | p99 ms |", "|---|---|---|---|---|"]
    lat = results["latency"]
    for name, s in lat.items():
        if "split" in name:
            continue
        lines.append(f"| {name} | {s['n']} | {s['p50']} | {s['p95']} | {s['p99']} |")
    for key, s in lat["phase 3 split (cache off)"].items():
        lines.append(f"| phase 3 split: {key} | {s['n']} | {s['p50']} | {s['p95']} | {s['p99']} |")
    emb = results["embedding"]
    if "conversation" in results:
        lines += ["", *conversation_table(results["conversation"])]
    lines += ["", f"Real embedding throughput (seed corpus, {emb['chunks']} chunks): {emb['chunks_per_s']} chunks/s.", ""]
    if "http" in results:
        lines += ["| HTTP loopback | req/s | p50 ms | p95 ms | p99 ms | errors | answered by |",
                  "|---|---|---|---|---|---|---|"]
        for name, s in results["http"].items():
            if isinstance(s, dict):
                warn = " ⚠ " + "; ".join(s["warnings"]) if s.get("warnings") else ""
                lines.append(f"| {name} | {s['rps']} | {s['p50']} | {s['p95']} | {s['p99']} | {s['errors']} "
                             f"| {s.get('answered', '')}{warn} |")
        lines += ["", f"Server RSS after the HTTP runs: {results['http'].get('server_rss_mb')} MB.", ""]
    lines += ["| scale (synthetic, vectors synthetic) | rows s | vectors+HNSW s | keyword index s | chunks/s | phase 2 p95 ms | phase 3 p95 ms | RSS MB | PostgreSQL MB |",
              "|---|---|---|---|---|---|---|---|---|"]
    for size, s in results["scale"].items():
        lines.append(f"| {size} chunks | {s['rows_s']} | {s['vectors_and_hnsw_s']} | {s['keyword_index_s']} | {s['rate_chunks_per_s']} | {s['phase2']['p95']} | {s['phase3']['p95']} | {s['rss_mb']} | {s['pg_size_mb']} |")
    table = "\n".join(lines) + "\n"
    (out_dir / "bench.md").write_text(table)
    names = [n for n in lat if "split" not in n]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.bar([n.replace(" (query cache ", "\n(cache ") for n in names], [lat[n]["p95"] for n in names], label="p95")
    ax.bar([n.replace(" (query cache ", "\n(cache ") for n in names], [lat[n]["p50"] for n in names], label="p50")
    ax.set_ylabel("ms")
    ax.set_title("In-process latency by phase")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "latency_by_phase.png")
    plt.close(fig)
    sizes = sorted(results["scale"], key=int)
    fig, ax = plt.subplots(figsize=(6, 4))
    for phase in ("phase2", "phase3"):
        ax.plot([int(s) for s in sizes], [results["scale"][s][phase]["p95"] for s in sizes], marker="o", label=f"{phase} p95")
    ax.set_xscale("log")
    ax.set_xlabel("chunks")
    ax.set_ylabel("ms")
    ax.set_title("Latency vs corpus size")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "latency_vs_size.png")
    plt.close(fig)
    return table


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="latency, throughput and scale benchmarks",
                       description="In-process latency per phase, HTTP load at concurrency 1/16/64, "
                       "synthetic 10k/100k-chunk scale; writes bench.md, bench.json and PNGs.")
    p.add_argument("--quick", action="store_true", help="fewer repetitions, 10k only, 2 s per HTTP level")
    p.add_argument("--out", type=Path, default=Path("lab/results"))
    p.add_argument("--no-http", action="store_true")
    p.add_argument("--telemetry", action="store_true",
                   help="only the cost of the HTTP and database instrumentation (on vs off, alternating)")
    p.add_argument("--conversation", action="store_true",
                   help="only phase 3 p95 with 10 history turns next to p95 without (seed corpus, in-process)")
    p.add_argument("--embedding", action="store_true",
                   help="only the embedding backends: cosine to torch, query batches, chunks/s, RSS")
    p.add_argument("--http", action="store_true",
                   help="only phase 2 vs phase 3 over HTTP with a new question on every request "
                   "(lab/bench/http.py): ratio, p99/p50, errors; writes http.md / http.json")
    p.add_argument("--seconds", type=float, default=8.0, help="--http: seconds per row (default 8)")
    p.add_argument("--levels", default="1,16,64", help="--http: client counts (default 1,16,64)")
    p.add_argument("--wrk", action="store_true",
                   help="cross-check lab/loadgen.py against wrk: phase 2 and 3 at --wrk-clients, "
                   "new questions, back to back on one server; writes wrk.json")
    p.add_argument("--wrk-clients", type=int, default=16)
    p.add_argument("--variant", action="append", default=[],
                   help="--http: label[:flag=value,...], one server each, in this order (repeatable)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    flags = load_flags(settings.flags_file)
    if args.embedding:
        return run_embedding(args, settings, flags)
    if args.telemetry:
        return run_telemetry(args, settings)
    if args.wrk:
        from lab.bench.http import crosscheck_wrk

        result = asyncio.run(crosscheck_wrk(args.seconds, args.wrk_clients))
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "wrk.json").write_text(json.dumps(result, indent=2) + "\n")
        for phase, row in result.items():
            print(f"{phase} c={args.wrk_clients}: wrk {row['wrk']} | loadgen {row['loadgen']} | load {row['load_avg']}")
        return 0
    if args.http:
        from lab.bench.http import run_http

        levels = [int(x) for x in args.levels.split(",") if x.strip()]
        print(run_http(args.variant, levels, args.seconds, args.out))
        return 0
    data_dir = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    local = settings.with_overrides(data_dir=data_dir / "pg")
    if args.conversation:
        only = run_with_database(local, lambda dsn: in_process(dsn, settings, flags, args.quick, conversation_only=True))
        print("\n".join(conversation_table(only["conversation"])))
        return 0
    results: dict[str, Any] = run_with_database(local, lambda dsn: in_process(dsn, settings, flags, args.quick))
    if not args.no_http:
        results["http"] = asyncio.run(http_bench(2.0 if args.quick else 10.0, [1, 16, 64]))
    print(write_outputs(args.out, results, args.quick))
    return 0


def run_telemetry(args: argparse.Namespace, settings: Settings) -> int:
    from lab.bench.telemetry import overhead, write

    data_dir = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    local = settings.with_overrides(data_dir=data_dir / "pg")
    queries = golden_queries()
    result = run_with_database(local, lambda dsn: overhead(dsn, settings, queries, 3 if args.quick else 10))
    print(write(args.out, result))
    return 0


def run_embedding(args: argparse.Namespace, settings: Settings, flags: Flags) -> int:
    from lab.bench.embedding import compare, table
    from service.embedding.backends import onnx_cache_dir

    results = compare(settings.seeds_dir, flags.chunking.max_tokens, onnx_cache_dir(settings.data_dir), args.quick)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "embedding.json").write_text(json.dumps(results, indent=2) + "\n")
    text = table(results)
    (args.out / "embedding.md").write_text(text)
    print(text)
    return 0 if all("error" not in r for r in results.values()) else 1
