"""`python -m lab bench --embedding`: the embedding backends side by side.

One run, one backend at a time, each in its own process (so its resident
memory is its own and PyTorch is not loaded for the ONNX ones):
- cosine of every seed-corpus chunk vector to PyTorch's (>= 0.999 everywhere:
  the backend's vectors are interchangeable, see base.INTERCHANGEABLE);
- query embedding p50/p95 at batch sizes 1, 4, 16 and 64 (distinct texts, no cache);
- indexing throughput: the seed corpus's chunks through `embed_passages`;
- RSS after loading and after the work.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from service.embedding.base import BACKENDS
from service.stats import summary

BATCH_SIZES = (1, 4, 16, 64)
QUERY_STEMS = (
    "how do I find my notes", "explain workspace", "where are my shortcuts", "what is quick capture",
    "recover deleted note", "open notes and quick links", "which notes link here", "widget manager",
)


def corpus_items(seeds_dir: Path, max_tokens: int) -> list[tuple[str, str]]:
    from service.ingest.indexer import passage_context
    from service.ingest.markdown import parse_seeds
    from service.ingest.seeder import default_chunker

    chunker = default_chunker(max_tokens)
    return [(passage_context(c.header_path, c.title), c.content) for d in parse_seeds(seeds_dir) for c in chunker(d)]


def worker(backend: str, seeds_dir: Path, max_tokens: int, cache_dir: Path, vectors_out: Path, reps: int) -> dict[str, Any]:
    """Runs in the child process: load, index the corpus, time query batches."""
    import psutil

    from service.embedding.backends import load_embedder
    from service.ingest.indexer import padding_order

    process = psutil.Process()
    base_rss = process.memory_info().rss
    t0 = time.perf_counter()
    model = load_embedder(backend, None, cache_dir)
    load_s = time.perf_counter() - t0
    loaded_rss = process.memory_info().rss
    items = corpus_items(seeds_dir, max_tokens)
    model.embed_passages(items[:8])  # warm-up

    def index(order: list[tuple[str, str]]) -> tuple[float, Any]:
        t0 = time.perf_counter()
        vectors = np.vstack([model.embed_passages(order[s : s + 64]) for s in range(0, len(order), 64)])
        return time.perf_counter() - t0, vectors

    index_s, vectors = index(items)
    # The indexer's order (longest first: less padding per batch), timed in the same process.
    ordered_s, _ = index(sorted(items, key=lambda item: padding_order(*item)))
    np.save(vectors_out, vectors)
    latency: dict[str, Any] = {}
    n = 0
    for size in BATCH_SIZES:
        times: list[float] = []
        for _ in range(max(2, reps * 8 // size)):
            texts = [f"{QUERY_STEMS[(n + i) % len(QUERY_STEMS)]} {n + i}" for i in range(size)]
            n += size
            t = time.perf_counter()
            model.embed_queries(texts)
            times.append((time.perf_counter() - t) * 1000)
        stats = summary(times)
        stats["per_query_p50"] = round(stats["p50"] / size, 3)
        latency[str(size)] = stats
    return {
        "backend": backend, "model_name": model.model_name, "load_s": round(load_s, 1),
        "chunks": len(items), "index_s": round(index_s, 2), "chunks_per_s": round(len(items) / index_s, 1),
        "chunks_per_s_longest_first": round(len(items) / ordered_s, 1),
        "query_ms_by_batch": latency, "rss_mib_loaded": round(loaded_rss / 2**20, 1),
        "rss_mib_after": round(process.memory_info().rss / 2**20, 1),
        "rss_mib_model": round((loaded_rss - base_rss) / 2**20, 1),
        "torch_loaded": "torch" in sys.modules,
    }


def compare(seeds_dir: Path, max_tokens: int, cache_dir: Path, quick: bool) -> dict[str, Any]:
    """Each backend in a child process, then cosines to PyTorch's vectors."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-embedding-") as tmp:
        for backend in BACKENDS:
            vectors = Path(tmp) / f"{backend}.npy"
            args = [sys.executable, "-m", "lab.bench.embedding", backend, str(seeds_dir), str(max_tokens),
                    str(cache_dir), str(vectors), "2" if quick else "10"]
            done = subprocess.run(args, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                out[backend] = {"error": done.stderr.strip().splitlines()[-1:]}
                continue
            out[backend] = json.loads(done.stdout.strip().splitlines()[-1])
        reference = np.load(Path(tmp) / "torch.npy") if "error" not in out.get("torch", {"error": 1}) else None
        for backend in BACKENDS:
            path = Path(tmp) / f"{backend}.npy"
            if reference is not None and path.exists():
                cosine = np.sum(np.load(path) * reference, axis=1)
                out[backend]["cosine_to_torch"] = {
                    "min": round(float(cosine.min()), 6), "mean": round(float(cosine.mean()), 6),
                    "below_0.999": int((cosine < 0.999).sum()),
                }
    return out


def table(results: dict[str, Any]) -> str:
    lines = [
        "| backend | identity | cosine to torch (min) | chunks/s (corpus order / longest first) | q p50/p95 ms b=1 | b=4 | b=16 | b=64 | ms/query b=64 | RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for backend, r in results.items():
        if "error" in r:
            lines.append(f"| {backend} | failed: {r['error']} |")
            continue
        q = r["query_ms_by_batch"]
        cells = [f"{q[str(b)]['p50']}/{q[str(b)]['p95']}" for b in BATCH_SIZES]
        lines.append(
            f"| {backend} | {r['model_name']} | {r.get('cosine_to_torch', {}).get('min', '-')} | {r['chunks_per_s']} / {r['chunks_per_s_longest_first']} | "
            + " | ".join(cells) + f" | {q['64']['per_query_p50']} | {r['rss_mib_after']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    backend_arg, seeds, tokens, cache, out_file, reps_arg = sys.argv[1:7]
    print(json.dumps(worker(backend_arg, Path(seeds), int(tokens), Path(cache), Path(out_file), int(reps_arg))))
