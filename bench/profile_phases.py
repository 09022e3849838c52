"""cProfile of phase 2 against phase 3, in-process, over questions never asked before.

Usage (after one `bench --http` run, whose database it reuses, or
`python -m service seed --data-dir .data/bench-http/pg --embed`):

    PYTHONPATH=. .venv/bin/python bench/profile_phases.py [N]

Prints wall and process-CPU ms per question for each phase and the functions
that cost the most (tottime, cumulative). The model runs with one thread, as
the service's default on 2 cores.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

from service.bench.command import build_pipeline
from service.bench.http import BENCH_DATA_DIR, distinct_questions, labelled_questions
from service.db.server import run_with_database
from service.flags import load_flags
from service.pipeline import RetrieveParams
from service.settings import load_settings

N = int(sys.argv[1]) if len(sys.argv) > 1 else 150


async def main(dsn: str) -> None:
    from service.db.pool import create_pool
    from service.embedding.backends import load_embedder, onnx_cache_dir

    settings = load_settings()
    flags = load_flags(settings.flags_file)
    pool = await create_pool(dsn, min_size=1, max_size=4)
    embedder = load_embedder("onnx", settings.embedding_model, onnx_cache_dir(settings.data_dir), 1)
    pipeline = await build_pipeline(pool, settings, flags, embedder, 0)
    questions = iter(distinct_questions(labelled_questions()))
    for _ in range(20):  # warm-up
        await pipeline.run(RetrieveParams(next(questions), phase_cap=3), flags)
    for phase in (2, 3):
        profile = cProfile.Profile()
        cpu, wall = time.process_time(), time.perf_counter()
        answered: dict[int, int] = {}
        profile.enable()
        for _ in range(N):
            outcome = await pipeline.run(RetrieveParams(next(questions), phase_cap=phase), flags)
            answered[outcome.phase] = answered.get(outcome.phase, 0) + 1
        profile.disable()
        print(f"== phase {phase}: {N} questions, wall {1000 * (time.perf_counter() - wall) / N:.2f} ms/q, "
              f"process cpu {1000 * (time.process_time() - cpu) / N:.2f} ms/q, answered {answered}")
        for order, rows in (("tottime", 25), ("cumulative", 40)):
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats(order).print_stats(rows)
            print(out.getvalue())
    await pool.close()


if __name__ == "__main__":
    run_with_database(load_settings().with_overrides(data_dir=BENCH_DATA_DIR), main)
