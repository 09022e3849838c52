"""What the name-phrase term (`lexical.phrase_weight`, service/scoring/bm25f.py) costs the keyword
leg: queries holding a name beside another word, searched on a corpus's chunk index with the term
on and off, median of `--runs` searches each.

Usage:
    .venv/bin/python -m lab.experiments.phrase_cost [--corpus tests/corpora/restic-docs] \
        [--runs 200] [--out lab/results/phrase-term-cost-DATE.txt] [QUERY ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from service.flags import LexicalFlags
from service.ingest.seeder import SeedOptions, default_chunker, prepare
from service.normalize.lexicon import Synonyms
from service.normalize.query import normalize_query
from service.scoring.indexes import build_indexes
from service.settings import PROJECT_ROOT

QUERIES = ("restic rewrite --exclude", "what does restic check --read-data do?",
           "restic backup --exclude-file and --files-from")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("queries", nargs="*", default=list(QUERIES))
    parser.add_argument("--corpus", type=Path, default=PROJECT_ROOT / "tests" / "corpora" / "restic-docs")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    documents, chunks, _ = prepare(args.corpus, default_chunker(), SeedOptions())
    indexes = build_indexes(documents, chunks, Synonyms())
    lines = [f"{args.corpus.name}: {len(chunks)} chunks; chunk index, median of {args.runs} searches"]
    for raw in args.queries:
        query, _ = normalize_query(raw, indexes.lexicon)
        shown = {}
        for weight in (1.0, 0.0):
            flags = LexicalFlags(phrase_weight=weight)
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                indexes.chunks.search_unexplained(query.tokens, identifiers=query.identifiers,
                                                  phrases=query.name_phrases, lexical=flags)
                times.append((time.perf_counter() - started) * 1000)
            shown[weight] = statistics.median(times)
        lines.append(f"{raw!r} (phrases {list(query.name_phrases)}): {shown[1.0]:.3f} ms with the term, "
                     f"{shown[0.0]:.3f} ms without")
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
