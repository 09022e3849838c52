"""Document vectors kept on disk by model and exact model input, so a corpus is embedded once
per machine: a new database (a replica, a reseed into a fresh one, a test's own app) reuses
every vector whose input it has seen, and only new or changed text meets the model.

One SQLite file (Python's own sqlite3: one file, safe between processes, nothing to run) per
model and dimension in EMBEDDING_VECTORS_DIR, else under the model cache (`onnx_cache_dir(...) / "vectors"`). A key is the
representation's `input_hash` (its kind, heading context, text and the input format's
version), so a renamed heading or a new input format is a miss, never a stale hit. Only the
local model's vectors are kept: an embedding server's are checked against it by its probe, not
vector by vector.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from service.embedding.base import WindowedEmbedder

BUSY_TIMEOUT_S = 30.0
"""Another process writing the same file waits at most this long (SQLite's lock)."""
LOOKUP_CHUNK = 500
"""Keys per `select ... in (...)`: under SQLite's variable limit."""


def cache_file(directory: Path, model: str, dim: int) -> Path:
    """`<directory>/<readable model name>-<dim>-<hash of the model's identity>.sqlite`."""
    readable = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)[-60:]
    digest = hashlib.sha256(f"{model}\n{dim}".encode()).hexdigest()[:12]
    return directory / f"{readable}-{dim}-{digest}.sqlite"


class VectorCache:
    """`get(keys)` → the vectors known for them; `put(keys, vectors)` keeps new ones."""

    def __init__(self, directory: Path, model: str, dim: int) -> None:
        self.path = cache_file(directory, model, dim)
        self.dim = dim

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        conn.execute("pragma journal_mode=wal")  # readers never wait for a writer
        conn.execute("create table if not exists vectors (input_hash text primary key, vector blob not null)")
        return conn

    def get(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        found: dict[str, npt.NDArray[np.float32]] = {}
        if not keys:
            return found
        conn = self._connect()
        try:
            for start in range(0, len(keys), LOOKUP_CHUNK):
                part = list(keys[start : start + LOOKUP_CHUNK])
                marks = ",".join("?" * len(part))
                for key, blob in conn.execute(f"select input_hash, vector from vectors where input_hash in ({marks})", part):
                    if isinstance(blob, bytes) and len(blob) == 4 * self.dim:  # a damaged row is a miss
                        found[key] = np.frombuffer(blob, dtype=np.float32)
        finally:
            conn.close()
        return found

    def put(self, keys: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        rows = [(key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in zip(keys, vectors, strict=True)]
        if not rows:
            return
        conn = self._connect()
        try:
            with conn:
                conn.executemany("insert or replace into vectors (input_hash, vector) values (?, ?)", rows)
        finally:
            conn.close()


class Recomputing:
    """A cache that is written, never read: a full re-index (`POST /admin/reindex {"full": true}`)
    runs the model on every input and keeps what it makes."""

    def __init__(self, cache: VectorCache) -> None:
        self.cache = cache

    def get(self, keys: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        return {}

    def put(self, keys: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        self.cache.put(keys, vectors)


def known_vectors(
    model_cache_dir: Path, model: str, dim: int, enabled: bool, env: Mapping[str, str] | None = None,
) -> VectorCache | None:
    """The cache for a model's vectors (`embedding.keep_vectors`): in EMBEDDING_VECTORS_DIR, else
    beside the model's exported graph."""
    if not enabled:
        return None
    configured = (os.environ if env is None else env).get("EMBEDDING_VECTORS_DIR", "").strip()
    return VectorCache(Path(configured).expanduser() if configured else model_cache_dir / "vectors", model, dim)


def kept_for(cache_dir: Path, local: WindowedEmbedder, documents: object, keep: bool) -> VectorCache | None:
    """The cache an index run reads and fills, or None: only vectors the local model computes are
    kept (`documents` is `local` unless EMBEDDING_REMOTE_URL sends documents to a server, whose
    vectors are checked against the local model's but not its own)."""
    return known_vectors(cache_dir, local.model_name, local.dim, keep and documents is local)
