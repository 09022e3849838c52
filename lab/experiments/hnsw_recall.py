"""How much of the exact top 50 the HNSW index finds on real documentation vectors, by ef_search.

A corpus above `semantic.exact_search_max_vectors` is searched through pgvector's HNSW index,
which is approximate: what it misses depends on `semantic.ef_search` and on the graph the
seeding happened to build. This embeds the chunks of the given documentation folders (read as
the seeder reads them, embedded as the indexer embeds them; the evaluation cache keeps the
vectors), stores them in one table with the service's HNSW index, and asks `--queries` of
them: each a chunk's own heading path, a label-free query with a known neighbourhood. For each
ef_search: recall@50 against the exact top 50, how often the first neighbour is the exact
first, and the median time of one query.

Usage:
    .venv/bin/python -m lab.experiments.hnsw_recall ../shared/train-corpora/questdb-docs ... [--out FILE]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TOP = 50
EF = (64, 100, 200, 400)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def corpus_vectors(folders: Sequence[Path]) -> tuple[list[str], Any, Any]:
    """(each chunk's heading path, (n, dim) body vectors, the embedder) over every folder."""
    import numpy as np

    from lab.evaluation.kinds import read_corpus
    from service.evaluation.harness import load_cached_embedder
    from service.flags import load_flags
    from service.ingest.representations import passage_context
    from service.settings import load_settings

    settings = load_settings()
    flags = load_flags(settings.flags_file)
    embedder = load_cached_embedder(settings, flags.embedding.backend)
    headings: list[str] = []
    blocks = []
    for folder in folders:
        _, chunks = read_corpus(folder, flags)
        started = time.perf_counter()
        blocks.append(embedder.embed_passages([(passage_context(c.header_path, c.title), c.content) for c in chunks]))
        headings += [c.header_path or c.title for c in chunks]
        say(f"{folder.name}: {len(chunks)} chunks embedded in {time.perf_counter() - started:.0f}s")
    return headings, np.vstack(blocks), embedder


async def measure(dsn: str, headings: list[str], vectors: Any, embedder: Any, queries: int) -> list[dict[str, float]]:
    import asyncpg

    from lab.experiments.exact_search_cost import store_with_hnsw
    from service.db.vectors import vector_literal

    dim = vectors.shape[1]
    order_by = f"e::vector({dim}) <=> (select $1::text::vector({dim}))"
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("create extension if not exists vector")
        await store_with_hnsw(conn, vectors)
        sample = random.Random(0).sample(range(len(headings)), min(queries, len(headings)))
        asked = [vector_literal(embedder.embed_query(headings[i])) for i in sample]
        exact = []
        async with conn.transaction():
            await conn.execute("select set_config('enable_indexscan', 'off', true)")
            for q in asked:
                exact.append([r["id"] for r in await conn.fetch(f"select id from t order by {order_by}, id limit {TOP}", q)])
        rows = []
        for ef in EF:
            found, first, times = [], 0, []
            async with conn.transaction():
                await conn.execute("select set_config('hnsw.ef_search', $1, true)", str(ef))
                await conn.execute("select set_config('hnsw.iterative_scan', 'strict_order', true)")
                for q, want in zip(asked, exact, strict=True):
                    started = time.perf_counter()
                    got = [r["id"] for r in await conn.fetch(f"select id from t order by {order_by} limit {TOP}", q)]
                    times.append((time.perf_counter() - started) * 1000)
                    found.append(len(set(got) & set(want)) / len(want))
                    first += bool(got) and got[0] == want[0]
            rows.append({"ef_search": ef, "recall": round(statistics.mean(found), 4),
                         "all_found": round(sum(f == 1.0 for f in found) / len(found), 4),
                         "first_same": round(first / len(asked), 4), "median_ms": round(statistics.median(times), 2)})
            say(str(rows[-1]))
        await conn.execute("drop table if exists t")
    finally:
        await conn.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from service.db.server import run_with_database
    from service.settings import load_settings

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    headings, vectors, embedder = corpus_vectors(args.folders)

    async def run(dsn: str) -> Any:
        return await measure(dsn, headings, vectors, embedder, args.queries)

    rows = run_with_database(load_settings().with_overrides(data_dir=args.data_dir), run)
    lines = [f"{len(headings)} chunk vectors of {', '.join(f.name for f in args.folders)}; {args.queries} queries "
             f"(chunk heading paths, sampled with seed 0); top {TOP}, HNSW m 16, ef_construction 64.", "",
             "| ef_search | recall@50 | queries with all 50 found | same first neighbour | median ms |",
             "|--:|--:|--:|--:|--:|"]
    lines += [f"| {r['ef_search']} | {100 * r['recall']:.1f} % | {100 * r['all_found']:.1f} % | "
              f"{100 * r['first_same']:.1f} % | {r['median_ms']} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        command = ("python -m lab.experiments.hnsw_recall " + " ".join(str(f) for f in args.folders)
                   + f" --queries {args.queries}")
        args.out.write_text(f"{command}\n\n{text}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":  # the rst reader's worker process is spawned: import-safe
    sys.exit(main())
