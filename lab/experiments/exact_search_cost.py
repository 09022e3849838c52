"""What exact vector search costs against HNSW, by table size (`semantic.exact_search_max_vectors`).

HNSW's graph differs from one build to the next (pgvector draws each vector's level at random),
so two databases seeded with the same pages can return different neighbours for one query;
exact search (a sequential scan) cannot. This times both on synthetic unit vectors of the
model's dimension in an embedded PostgreSQL (or DATABASE_URL): the median of `--repeats`
queries of the top 50, for each size.

Usage:
    .venv/bin/python -m lab.experiments.exact_search_cost [--sizes 1000 5000 20000] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DIM = 384
TOP = 50
HNSW_SQL = f"select id from t order by e::vector({DIM}) <=> (select $1::text::vector({DIM})) limit {TOP}"
EXACT_SQL = HNSW_SQL.replace(f"limit {TOP}", f", id limit {TOP}")


async def store_with_hnsw(conn: Any, vectors: Any) -> None:
    """`vectors` as table `t` (id, e) with the service's HNSW index (migration 003: m 16,
    ef_construction 64, pgvector's defaults) and fresh statistics."""
    from service.db.vectors import vector_literal

    dim = vectors.shape[1]
    await conn.execute("drop table if exists t")
    await conn.execute("create table t (id int, e vector)")
    await conn.executemany("insert into t values ($1, $2::text::vector)",
                           [(i, vector_literal(v)) for i, v in enumerate(vectors)])
    await conn.execute(f"create index on t using hnsw ((e::vector({dim})) vector_cosine_ops) "
                       "with (m = 16, ef_construction = 64)")
    await conn.execute("analyze t")


async def measure(dsn: str, sizes: Sequence[int], repeats: int) -> list[dict[str, float]]:
    import asyncpg
    import numpy as np

    from service.db.vectors import vector_literal

    conn = await asyncpg.connect(dsn)
    rows: list[dict[str, float]] = []
    try:
        await conn.execute("create extension if not exists vector")
        rng = np.random.default_rng(0)
        for size in sizes:
            vectors = rng.standard_normal((size, DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            await store_with_hnsw(conn, vectors)
            query = vector_literal(vectors[7])
            row: dict[str, float] = {"vectors": size}
            for name, sql, index_scans in (("hnsw_ms", HNSW_SQL, "on"), ("exact_ms", EXACT_SQL, "off")):
                times = []
                async with conn.transaction():
                    await conn.execute("select set_config('enable_indexscan', $1, true)", index_scans)
                    for _ in range(repeats):
                        started = time.perf_counter()
                        await conn.fetch(sql, query)
                        times.append((time.perf_counter() - started) * 1000)
                row[name] = round(statistics.median(times), 2)
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
        await conn.execute("drop table if exists t")
    finally:
        await conn.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    from service.db.server import run_with_database
    from service.settings import load_settings

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000, 50000])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    settings = load_settings().with_overrides(data_dir=args.data_dir)

    async def run(dsn: str) -> Any:
        return await measure(dsn, args.sizes, args.repeats)

    rows = run_with_database(settings, run)
    lines = [f"Top {TOP} of synthetic {DIM}-d unit vectors, median of {args.repeats} queries, one connection.", "",
             "| vectors | HNSW ms | exact ms |", "|--:|--:|--:|"]
    lines += [f"| {int(r['vectors'])} | {r['hnsw_ms']} | {r['exact_ms']} |" for r in rows]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        sizes = " ".join(str(s) for s in args.sizes)
        args.out.write_text(f"python -m lab.experiments.exact_search_cost --sizes {sizes} --repeats {args.repeats}\n\n"
                            f"{text}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
