"""`python -m lab adapt-model [--seeds-dir D] [--epochs N] [--queries FILE ...]`.

1. Parse and chunk the corpus with the seeder (as the service does).
2. Mine (anchor, passage) pairs from it (pairs.py) and fine-tune the
   configured model (EMBEDDING_MODEL, else the packaged all-MiniLM-L6-v2) with
   in-batch negatives (train.py), offline.
3. Save it as `<models dir>/adapted/<base>-<corpus>-v<N>` with `adaptation.json`
   (base, corpus, pairs, options, time, peak RSS). The service uses it only when
   `EMBEDDING_MODEL` points at that directory: the directory name is the model
   name stored with every vector (and shown by /ready), so switching re-embeds
   like any model change.
4. With `--queries`: phase-3 quality per kind on each set's dev and test split,
   base model vs adapted (eval-kinds, same database, both models' vectors).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from service.settings import Settings


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def models_root(settings: Settings) -> Path:
    """Next to the data, where the ONNX export of a model is kept too."""
    return settings.data_dir.resolve().parent / "models" / "adapted"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "adapt-model", help="fine-tune the embedding model on pairs mined from the corpus",
        description="Mine heading/title/summary/keyword → section pairs from the corpus, fine-tune the "
        "embedding model with in-batch negatives (offline), save a versioned model directory, and "
        "optionally compare it with the base model per query kind.",
    )
    p.add_argument("--seeds-dir", type=Path, help="corpus (env SEEDS_DIR)")
    p.add_argument("--corpus-name", help="name in the model directory (default: the corpus directory name)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=2e-5)
    p.add_argument("--out-root", type=Path, help="where versioned models go (default <DATA_DIR>/../models/adapted)")
    p.add_argument("--queries", type=Path, action="append", default=[],
                   help="labelled set to compare base and adapted model on (repeatable)")
    p.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from lab.adapt.pairs import mine_pairs
    from lab.adapt.train import TrainOptions, next_version_dir, train
    from lab.evaluation.kinds import read_corpus
    from service.flags import load_flags
    from service.ingest.markdown import SeedError
    from service.ingest.tokens import default_model_dir, model_name_for, validate_model_dir

    settings = settings.with_overrides(data_dir=args.data_dir, seeds_dir=args.seeds_dir)
    if args.epochs < 1 or args.batch_size < 2:
        print("error: --epochs must be >= 1 and --batch-size >= 2", file=sys.stderr)
        return 2
    flags = load_flags(settings.flags_file)
    try:
        docs, chunks = read_corpus(settings.seeds_dir, flags)
    except (SeedError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    base = validate_model_dir(Path(settings.embedding_model)) if settings.embedding_model else default_model_dir()
    corpus = args.corpus_name or settings.seeds_dir.resolve().name
    slug = re.sub(r"[^a-z0-9]+", "-", f"{model_name_for(base)}-{corpus}".lower()).strip("-")
    out = next_version_dir(args.out_root or models_root(settings), slug)
    pairs = mine_pairs(docs, chunks)
    say(f"{len(docs)} pages, {len(chunks)} chunks → {len(pairs)} pairs; training {base.name} → {out}")
    options = TrainOptions(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate)
    manifest = {"base_model": model_name_for(base), "base_dir": str(base), "corpus": str(settings.seeds_dir),
                "pages": len(docs), "chunks": len(chunks)}
    report = train(base, pairs, out, options, progress=say, manifest=manifest)
    print(json.dumps({"model_dir": str(out), "model_name": out.name, **report.__dict__}, indent=2))
    print(f"use it: EMBEDDING_MODEL={out} (phase 3 re-embeds the corpus for it)")
    for queries in args.queries:
        compare(settings, flags, queries, base, out)
    return 0


def compare(settings: Settings, flags: Any, queries: Path, base: Path, adapted: Path) -> None:
    """Phase 3 per kind for both models on one labelled set."""
    from lab.evaluation.kinds import corpus_dir, corpus_of, format_kinds, run_kinds
    from service.db.server import run_with_database
    from service.embedding.backends import load_embedder, onnx_cache_dir
    from service.evaluation.cache import CachedEmbedder
    from service.evaluation.harness import CACHE_DIR
    from service.evaluation.labelled import load_query_set

    cases = load_query_set(queries)
    corpus = corpus_of(queries)
    seeds = corpus_dir(corpus, settings, None)
    for label, model_dir in (("base", base), ("adapted", adapted)):
        inner = load_embedder(flags.embedding.backend, model_dir, onnx_cache_dir(settings.data_dir))
        embedder = CachedEmbedder(inner, CACHE_DIR if flags.embedding.backend == "torch" else CACHE_DIR / flags.embedding.backend)

        async def measure(dsn: str, embedder: Any = embedder) -> dict[str, Any]:
            return await run_kinds(dsn, settings, flags, cases, corpus, seeds, [3], embedder=embedder)

        results = run_with_database(settings, measure)
        print(f"{queries} — {label} model ({inner.model_name})")
        print(format_kinds(results))
