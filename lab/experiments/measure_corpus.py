"""Measure a documentation set end to end: pages, chunks, seed time, embedding
rate, time to /ready and memory, on a fresh data directory.

Usage: .venv/bin/python -m lab.experiments.measure_corpus tests/corpora/logseq-docs [--json FILE]
           [--replay tests/golden/logseq.yaml]   # also replay a golden file against it

Starts `python -m service serve` (embedded PostgreSQL in a temporary
directory, a free port) with SEEDS_DIR pointing at the folder, polls /ready
(which waits until phase 3 can answer), reads seed and embedding figures from
the server's log, the RSS of the server process (and of its PostgreSQL
processes) once ready, then stops it with SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from service.db.embedded import free_port
from service.settings import PROJECT_ROOT as ROOT

_SEED = re.compile(r"seed finished in ([\d.]+) s \(parse\+chunk ([\d.]+) s\)")
# The indexer's progress line: "embedded 64/715 chunk vectors (18.0 chunks/s, ETA 36s)".
_EMBED = re.compile(r"embedded (\d+)/(\d+) chunk vectors \(([\d.]+) chunks/s")


def measure(seeds: Path, replay: Path | None = None, timeout_s: float = 3600) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        log_path, port = Path(tmp) / "serve.log", free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ADMIN_TOKEN")}
        env.update(SEEDS_DIR=str(seeds.resolve()), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        started = time.monotonic()
        with log_path.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "service", "serve", "--port", str(port), "--data-dir", f"{tmp}/pg"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            )
        try:
            ready = _wait_ready(proc, port, log_path, started + timeout_s)
            to_ready = time.monotonic() - started
            server = psutil.Process(proc.pid)
            postgres = [p for p in psutil.process_iter(["name", "cmdline"])
                        if "postgres" in (p.info["name"] or "") and f"{tmp}/pg" in " ".join(p.info["cmdline"] or [])]
            rss_server = server.memory_info().rss
            rss_postgres = sum(p.memory_info().rss for p in postgres)
            if replay is not None:
                for phase in (1, 2, 3):
                    run = subprocess.run(
                        [sys.executable, "-m", "service", "replay", str(replay), "--phase", str(phase),
                         "--url", f"http://127.0.0.1:{port}"],
                        cwd=ROOT, capture_output=True, text=True, check=False,
                    )
                    print(run.stdout, run.stderr, file=sys.stderr)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
        log = log_path.read_text(errors="replace")
    seed = _SEED.findall(log)
    embed = _EMBED.findall(log)
    return {
        "corpus": str(seeds),
        "pages": ready["documents"],
        "chunks": ready["chunks"],
        "seed_seconds": float(seed[-1][0]) if seed else None,
        "parse_chunk_seconds": float(seed[-1][1]) if seed else None,
        "embedded_chunks": int(embed[-1][0]) if embed else 0,
        "embedding_chunks_per_second": float(embed[-1][2]) if embed else None,
        "seconds_to_ready": round(to_ready, 1),
        "rss_server_mb": round(rss_server / 2**20),
        "rss_postgres_mb": round(rss_postgres / 2**20),
        "cpus": os.cpu_count(),
    }


def _wait_ready(proc: subprocess.Popen[bytes], port: int, log: Path, deadline: float) -> dict[str, int]:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early:\n{log.read_text()[-3000:]}")
        try:
            response = httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2)
            if response.status_code == 200:
                body: dict[str, int] = response.json()
                return body
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"not ready in time:\n{log.read_text()[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seeds", type=Path)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--replay", type=Path, help="golden file to replay at phases 1-3 once ready")
    args = parser.parse_args()
    result = measure(args.seeds, args.replay)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
