"""What every evaluation command shares: its own database, the cached embedder, progress lines.

`eval-decisions` / `fit-decisions` (decisions.py) and the lab's commands
(`python -m lab eval`, `eval-kinds`, `bench`, `adapt-model`) each index a corpus
into a database of their own (`eval_<name>`) on the same server as the service
(DATABASE_URL, else the embedded PostgreSQL under DATA_DIR); the service's
database is never touched. Vectors come through an on-disk cache (cache.py),
so a second run does not re-embed.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from service.settings import PROJECT_ROOT, Settings

CACHE_DIR = PROJECT_ROOT / ".cache" / "embeddings"


def say(line: str) -> None:
    """Progress on stderr, so a table or `--json -` on stdout stays clean."""
    print(line, file=sys.stderr, flush=True)


def database_name(dataset: str) -> str:
    return "eval_" + (re.sub(r"[^a-z0-9_]+", "_", dataset.lower()).strip("_") or "dataset")[:40]


def with_database(dsn: str, database: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{database}"))


async def prepare_database(admin_dsn: str, name: str, migrations_dir: Path) -> str:
    """Create (once) and migrate `name` beside the service's database; returns its DSN."""
    import asyncpg

    from service.db.migrate import migrate_up
    from service.db.pool import ensure_vector_available

    if urlsplit(admin_dsn).path.strip("/") == name or not name.startswith("eval_"):
        raise ValueError(f"refusing to evaluate in database {name!r}")
    conn = await asyncpg.connect(admin_dsn)
    try:
        if not await conn.fetchval("select 1 from pg_database where datname = $1", name):
            await conn.execute(f'create database "{name}"')
            say(f"created database {name}")
    finally:
        await conn.close()
    dsn = with_database(admin_dsn, name)
    conn = await asyncpg.connect(dsn)
    try:
        await ensure_vector_available(conn)
        await migrate_up(conn, migrations_dir)
    finally:
        await conn.close()
    return dsn


def load_cached_embedder(settings: Settings, backend: str = "torch") -> Any:
    from service.embedding.backends import load_embedder, onnx_cache_dir
    from service.evaluation.cache import CachedEmbedder

    t0 = time.perf_counter()
    inner = load_embedder(backend, settings.embedding_model, onnx_cache_dir(settings.data_dir))
    say(f"model {inner.model_name} ({backend}) loaded in {time.perf_counter() - t0:.1f}s")
    # Per backend: interchangeable backends share a model name, and a measurement
    # of one backend must not be served the other's cached vectors.
    return CachedEmbedder(inner, CACHE_DIR if backend == "torch" else CACHE_DIR / backend)
