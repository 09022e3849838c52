"""`python -m lab bench --http`: phase 2 against phase 3 over HTTP, one run.

A server started as the README does (`python -m service serve`), loaded on
loopback by `lab/loadgen.py` at each concurrency level, phase 2 then
phase 3 back to back (same machine state, so the ratio means something on a
shared box), every request with a question text never sent before in the run
(the query-embedding cache cannot answer it). The questions are the labelled
set's (`bench/queries/seed.yaml`) combined with words a user would add
("... on my laptop", "quick question: ..."), so each one is embedded, ranked
and fused like a real new question. A separate row repeats the golden
queries (query cache on). `--variant` starts one server per flag set, on the
same data directory, so before/after figures come from one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import yaml

from service.evaluation.harness import say
from service.flags import apply_overrides, load_flags
from service.settings import PROJECT_ROOT

QUERY_SETS = PROJECT_ROOT / "bench" / "queries"
BENCH_DATA_DIR = PROJECT_ROOT / ".data" / "bench-http" / "pg"
PREFIXES = ("", "quick question: ", "at work, ", "hi, ", "as a new user, ", "sorry, ", "again: ",
            "one more thing: ", "for my team, ", "today ", "on the web app, ", "help: ")
SUFFIXES = ("", " on my laptop", " on mobile", " for a project", " after the update", " in the sidebar",
            " with my account", " for beginners", " step by step", " this week", " in dark mode",
            " for the new layout")


def labelled_questions(directory: Path = QUERY_SETS, corpus: str = "seed") -> list[str]:
    """The distinct query texts of the labelled sets written for `corpus`."""
    seen: dict[str, None] = {}
    for path in sorted(directory.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if not isinstance(doc, dict) or doc.get("corpus") != corpus:
            continue
        for case in doc.get("cases") or ():
            text = " ".join(str(case.get("query", "")).split())
            if text:
                seen.setdefault(text, None)
    return list(seen)


def distinct_questions(bases: list[str]) -> Iterator[str]:
    """Every base question, then every base with each prefix/suffix: no text twice."""
    if not bases:
        raise ValueError("no labelled questions to vary")
    seen: set[str] = set()
    for suffix, prefix in itertools.product(SUFFIXES, PREFIXES):
        for base in bases:
            text = f"{prefix}{base}{suffix}"
            if text not in seen:  # a base may already carry a prefix's words
                seen.add(text)
                yield text


class QuestionSource:
    """Hands out questions never sent before in this run (shared by all rows)."""

    def __init__(self, bases: list[str]) -> None:
        self._texts = distinct_questions(bases)
        self.used = 0

    def body(self, phase: int) -> Callable[[int], dict[str, Any]]:
        def make(_i: int) -> dict[str, Any]:
            try:
                text = next(self._texts)
            except StopIteration:
                raise RuntimeError(f"ran out of distinct questions after {self.used}") from None
            self.used += 1
            return {"query": text, "phase": phase}

        return make


def cpu_seconds(pid: int) -> dict[str, float]:
    """CPU time (user + system) of the server by where it ran: the main thread
    (event loop: HTTP, JSON, keyword leg, fusion), its other threads (the model
    thread and the runtime's worker threads: embedding) and its child processes
    (the embedded PostgreSQL: vector search). CPU time, unlike latency, does not
    grow when other jobs share the cores, so it says where a request's work goes."""
    import psutil

    server = psutil.Process(pid)
    main = other = 0.0
    for thread in server.threads():
        if thread.id == pid:
            main += thread.user_time + thread.system_time
        else:
            other += thread.user_time + thread.system_time
    # The embedded postmaster is daemonised (not our child): found by its data directory.
    postgres = [p for p in psutil.process_iter(["cmdline"])
                if p.info["cmdline"] and "postgres" in p.info["cmdline"][0] and str(BENCH_DATA_DIR) in p.info["cmdline"]]
    children = 0.0
    for process in [*postgres, *(c for p in postgres for c in p.children(recursive=True))]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:  # a backend that ended meanwhile (its time is lost)
            continue
        children += times.user + times.system + times.children_user + times.children_system
    return {"event_loop": main, "model_threads": other, "postgres": children}


def _cpu_per_request(before: dict[str, float], after: dict[str, float], requests: int) -> dict[str, float]:
    n = max(requests, 1)
    out = {k: round(1000 * (after[k] - before[k]) / n, 3) for k in before}
    out["total"] = round(sum(out.values()), 3)
    return out


def _row(report: Any, phase: int) -> dict[str, Any]:
    p50 = report.p50_ms or 0.0
    return {"rps": report.rps, "requests": report.requests, "p50": report.p50_ms, "p95": report.p95_ms,
            "p99": report.p99_ms, "p99_over_p50": round(report.p99_ms / p50, 2) if p50 else None,
            "errors": report.errors, "answered": report.answered(),
            "answered_by": {str(k): v for k, v in report.answered_by.items()},
            "fell_back": report.fell_back, "fallback_reasons": report.fallback_reasons,
            "warnings": report.warnings(phase), "load_avg": [round(x, 2) for x in os.getloadavg()]}


async def compare_phases(url: str, levels: list[int], seconds: float, source: QuestionSource,
                         golden: list[str], pid: int) -> dict[str, Any]:
    """Phase 2 then phase 3 at each level with new questions, then the cache-on row."""
    from lab.loadgen import run_load

    out: dict[str, Any] = {}
    for c in levels:
        rows = {}
        for phase in (2, 3):
            before = cpu_seconds(pid)
            report = await run_load(url, source.body(phase), c, seconds)
            rows[phase] = _row(report, phase)
            rows[phase]["cpu_ms_per_request"] = cpu = _cpu_per_request(before, cpu_seconds(pid), report.requests)
            say(f"  phase {phase} c={c}: {report.rps:.1f} req/s p50 {report.p50_ms:.1f} p99 {report.p99_ms:.1f} ms "
                f"errors {report.errors} answered: {report.answered()} load {os.getloadavg()[0]:.1f} cpu ms/req {cpu}")
        p2, p3 = rows[2]["rps"], rows[3]["rps"]
        out[f"c={c}"] = {"phase2": rows[2], "phase3": rows[3],
                         "ratio_rps": round(p3 / p2, 3) if p2 else None}
    cached = await run_load(url, lambda i: {"query": golden[i % len(golden)], "phase": 3}, 16, seconds)
    out["cache on: phase 3 c=16 (golden repeated)"] = _row(cached, 3)
    return out


def _flags_file(overrides: dict[str, Any], directory: Path, label: str) -> Path:
    """flags.yaml with `overrides` applied (validated by the schema) as a new file."""
    from service.settings import load_settings

    flags = apply_overrides(load_flags(load_settings().flags_file, {}), overrides, f"variant {label}")
    path = directory / f"flags-{label}.yaml"
    path.write_text(yaml.safe_dump(msgspec.to_builtins(flags), sort_keys=False))
    return path


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """`label` or `label:key=value,key=value` (values parsed as YAML scalars)."""
    label, _, rest = text.partition(":")
    overrides: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"variant {label!r}: expected key=value, got {item!r}")
        overrides[key.strip()] = yaml.safe_load(value)
    return label.strip() or "default", overrides


@contextlib.asynccontextmanager
async def serving(overrides: dict[str, Any], label: str, work: Path) -> AsyncIterator[tuple[str, int]]:
    """`python -m service serve` with `overrides` on a free port: (URL, pid).
    One database for every run and variant, so after the first start they are warm."""
    from service.db.embedded import free_port
    from service.embedding.backends import onnx_cache_dir
    from service.readiness import wait_url_ready
    from service.settings import load_settings

    data_dir = BENCH_DATA_DIR
    port = free_port()
    # The exported ONNX graphs of the usual data directory: no export per run.
    env = {"EMBEDDING_CACHE_DIR": str(onnx_cache_dir(load_settings().data_dir)), **os.environ,
           "LOG_LEVEL": "WARNING", "FLAGS_FILE": str(_flags_file(overrides, work, label))}
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        await wait_url_ready(url, timeout_s=600)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


async def run_variants(variants: list[tuple[str, dict[str, Any]]], levels: list[int], seconds: float,
                       golden: list[str]) -> dict[str, Any]:
    import psutil

    work = Path(tempfile.mkdtemp(prefix="bench-http-"))
    source = QuestionSource(labelled_questions())
    results: dict[str, Any] = {"variants": {}}
    for label, overrides in variants:
        async with serving(overrides, label, work) as (url, pid):
            say(f"variant {label} {overrides or ''} (server pid {pid})")
            rows = await compare_phases(url, levels, seconds, source, golden, pid)
            rows["server_rss_mb"] = round(psutil.Process(pid).memory_info().rss / 2**20, 1)
            results["variants"][label] = {"overrides": overrides, "rows": rows}
    results["distinct_questions_sent"] = source.used
    return results


WRK_SCRIPT = """-- Each request posts a question no other request sent (wrk threads interleave).
local questions = {%s}
local threads, counter = %d, 0
id = 0  -- a global: setup() sets it in each thread's own Lua state
function setup(thread) thread:set("id", counter); counter = counter + 1 end
function init(args) counter = 0 end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function request()
  local i = id + counter * threads
  counter = counter + 1
  local q = questions[(i %% #questions) + 1]
  return wrk.format(nil, "/retrieve", nil, '{"query": "' .. q .. '", "phase": %d}')
end
"""


def wrk_script(questions: list[str], phase: int, threads: int) -> str:
    import json

    quoted = ",".join(json.dumps(json.dumps(q)[1:-1]) for q in questions)  # Lua string of JSON text
    return WRK_SCRIPT % (quoted, threads, phase)


def _wrk_figures(text: str) -> dict[str, Any]:
    """Requests/sec, latency percentiles (ms) and errors from `wrk --latency` output."""
    import re

    def ms(value: str, unit: str) -> float:
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]

    out: dict[str, Any] = {}
    if match := re.search(r"Requests/sec:\s+([\d.]+)", text):
        out["rps"] = float(match.group(1))
    for pct, value, unit in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M):
        out[f"p{pct}"] = round(ms(value, unit), 3)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    out["errors"] = (sum(int(x) for x in errors.groups()) if errors else 0) + (int(non2xx.group(1)) if non2xx else 0)
    return out


async def crosscheck_wrk(seconds: float, clients: int) -> dict[str, Any]:
    """The same rows by `wrk` and by lab/loadgen.py, back to back on one server."""
    import shutil

    from lab.loadgen import run_load

    wrk = shutil.which("wrk")
    if wrk is None:
        raise RuntimeError("wrk is not installed (Debian: apt-get install -y wrk)")
    work = Path(tempfile.mkdtemp(prefix="bench-wrk-"))
    questions = list(distinct_questions(labelled_questions()))
    half = len(questions) // 2  # wrk and loadgen draw from separate halves: no text twice
    source = QuestionSource(labelled_questions())
    source._texts = iter(questions[half:])
    out: dict[str, Any] = {}
    async with serving({}, "wrk", work) as (url, _pid):
        offset = 0
        for phase in (2, 3):
            script = work / f"phase{phase}.lua"
            script.write_text(wrk_script(questions[offset:offset + half // 2], phase, 2))
            offset += half // 2
            done = await asyncio.to_thread(
                subprocess.run, [wrk, "-t2", f"-c{clients}", f"-d{seconds:g}s", "--latency", "-s", str(script), url],
                capture_output=True, text=True, timeout=seconds + 120, check=False)
            ours = await run_load(url, source.body(phase), clients, seconds)
            out[f"phase {phase}"] = {
                "wrk": _wrk_figures(done.stdout), "wrk_output": done.stdout,
                "loadgen": {"rps": ours.rps, "p50": ours.p50_ms, "p99": ours.p99_ms, "errors": ours.errors,
                            "answered": ours.answered()},
                "load_avg": [round(x, 2) for x in os.getloadavg()]}
            say(f"phase {phase} c={clients}: wrk {out[f'phase {phase}']['wrk']} | loadgen {out[f'phase {phase}']['loadgen']}")
    return out


def _cpu(row: dict[str, Any]) -> str:
    cpu = row["cpu_ms_per_request"]
    return f"{cpu['total']:g} ({cpu['event_loop']:g} + {cpu['model_threads']:g} + {cpu['postgres']:g})"


def table(results: dict[str, Any], seconds: float) -> str:
    lines = [f"Closed-loop clients, {seconds:g} s per row, a new question text on every request "
             f"({results['distinct_questions_sent']} distinct texts in the run).", "",
             "| variant | clients | phase 2 req/s | phase 3 req/s | ratio 3/2 | phase 3 p50 / p95 / p99 ms "
             "| p99/p50 | errors (2 / 3) | phase 3 answered by | server CPU ms/request, phase 2 → 3 "
             "(event loop + model threads + PostgreSQL) | load avg |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, variant in results["variants"].items():
        for level, row in variant["rows"].items():
            if not level.startswith("c="):
                continue
            p2, p3 = row["phase2"], row["phase3"]
            lines.append(
                f"| {label} | {level[2:]} | {p2['rps']} | {p3['rps']} | {row['ratio_rps']} "
                f"| {p3['p50']} / {p3['p95']} / {p3['p99']} | {p3['p99_over_p50']} "
                f"| {p2['errors']} / {p3['errors']} | {p3['answered']}"
                f"{' (' + str(p3['fell_back']) + ' fell back)' if p3['fell_back'] else ''} "
                f"| {_cpu(p2)} → {_cpu(p3)} | {p3['load_avg'][0]} |")
    lines += ["", "| variant | cache on: phase 3 c=16, golden repeated | req/s | p50 / p99 ms | server RSS MiB |",
              "|---|---|---|---|---|"]
    for label, variant in results["variants"].items():
        cached = variant["rows"]["cache on: phase 3 c=16 (golden repeated)"]
        lines.append(f"| {label} | {cached['answered']} | {cached['rps']} | {cached['p50']} / {cached['p99']} "
                     f"| {variant['rows']['server_rss_mb']} |")
    return "\n".join(lines) + "\n"


def run_http(variants: list[str], levels: list[int], seconds: float, out_dir: Path) -> str:
    import json
    import logging

    from lab.bench.golden_queries import golden_queries

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per readiness poll otherwise
    parsed = [parse_variant(v) for v in variants] or [("default", {})]
    results = asyncio.run(run_variants(parsed, levels, seconds, golden_queries()))
    results["seconds"] = seconds
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "http.json").write_text(json.dumps(results, indent=2) + "\n")
    text = table(results, seconds)
    (out_dir / "http.md").write_text(text)
    return text
