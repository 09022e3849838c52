"""cProfile of phase 2 against phase 3, in-process, over questions never asked before.

Usage (after one `bench --http` run, whose database it reuses, or
`python -m service seed --data-dir .data/bench-http/pg --embed`):

    .venv/bin/python -m lab.experiments.profile_phases [N]

Prints wall, process-CPU and event-loop-thread CPU ms per question for each
phase and the functions that cost the most (tottime, cumulative). The model
runs with one thread, as the service's default on 2 cores. With `--cpu` it
skips the profiler and prints, over 5 alternating rounds, the median CPU of
the event-loop thread per question (`time.thread_time`: the share that bounds
a server's requests per second), phase 3 against phase 2.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import statistics
import sys
import time

from lab.bench.command import build_pipeline
from lab.bench.http import BENCH_DATA_DIR, distinct_questions, labelled_questions
from service.db.server import run_with_database
from service.flags import load_flags
from service.pipeline import RetrieveParams
from service.settings import load_settings

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
N = int(ARGS[0]) if ARGS else 150
CPU_ONLY = "--cpu" in sys.argv


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
    if CPU_ONLY:
        loop_ms: dict[int, list[float]] = {2: [], 3: []}
        for _ in range(5):
            for phase in (2, 3):
                started = time.thread_time()
                for _ in range(N):
                    await pipeline.run(RetrieveParams(next(questions), phase_cap=phase), flags)
                loop_ms[phase].append(1000 * (time.thread_time() - started) / N)
        two, three = (statistics.median(loop_ms[ph]) for ph in (2, 3))
        print(f"event-loop thread CPU ms/question, median of 5 rounds of {N}: phase 2 {two:.3f}, "
              f"phase 3 {three:.3f}, ratio 3/2 {three / two:.2f}")
        await pool.close()
        return
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
