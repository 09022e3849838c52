"""Does "how do I X" decide as "X" does?

Usage:
    .venv/bin/python -m lab.experiments.question_frames [--sets seed logseq ...] [--phase-cap 2]

For every labelled case with pages whose query opens with a how-to frame (the service's own
pattern, `service.normalize.query_type.HOW_TO_FRAME`: "how do I", "how to", "I want to", …), the
framed query and the rest alone ("X": the frame and a closing question mark dropped, as the
query type reads it) go through the service's pipeline over the set's corpus, in memory
(`lab.evaluation.kinds.memory_pipeline`: phases 1-2, no database), at `--phase-cap` with the
flags file's flags. Printed: each case whose two queries get different statuses, as
`set | query | [(status, first page right, confidence) framed, same bare]`; then per set, the
count of each (framed status, bare status) pair. Issue 40 asks that the frame never decides
worse than the term; tests/integration/test_question_frames.py holds six such pairs at phase 3.

Each set's corpus is read and indexed first: `--sets` names a few; the default, every labelled
set of `--queries`, reads all their corpora.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from lab.evaluation.kinds import corpus_dir, memory_pipeline, read_corpus
from lab.experiments.signals import QUERIES
from service.evaluation.labelled import LabelledQuery, load_labelled_set
from service.flags import Flags, load_flags
from service.normalize.query_type import HOW_TO_FRAME
from service.pipeline import Pipeline, RetrieveParams
from service.settings import Settings, load_settings

Reply = tuple[str, bool, float]
"""(status, the first page of the ranking is a labelled one, confidence)."""


def bare(query: str) -> str | None:
    """The query without its how-to frame (None when it has none)."""
    text = query.strip()
    frame = HOW_TO_FRAME.match(text)
    return text[frame.end() :].rstrip(" ?") if frame else None


async def reply(
    pipeline: Pipeline, flags: Flags, query: str, case: LabelledQuery, cap: int
) -> Reply:
    outcome = await pipeline.run(
        RetrieveParams(query=query, phase_cap=cap, top_k=3), flags, observe=False
    )
    ranking = outcome.signals.ranking if outcome.signals is not None else ()
    return outcome.status, bool(ranking) and ranking[0] in case.pages, round(outcome.confidence, 2)


async def compare_set(
    name: str, queries: Path, settings: Settings, flags: Flags, cap: int
) -> Counter[tuple[str, str]]:
    corpus, cases = load_labelled_set(queries / f"{name}.yaml")
    folder = corpus_dir(corpus, settings, None)
    documents, chunks = read_corpus(folder, flags)
    pipeline = memory_pipeline(folder, flags, documents, chunks)
    pairs: Counter[tuple[str, str]] = Counter()
    for case in cases:
        rest = bare(case.query)
        if rest is None or not case.pages:
            continue
        framed, plain = [
            await reply(pipeline, flags, text, case, cap) for text in (case.query, rest)
        ]
        pairs[(framed[0], plain[0])] += 1
        if framed[0] != plain[0]:
            print(name, "|", case.query, "|", [framed, plain], flush=True)
    return pairs


async def run(names: Sequence[str], queries: Path, cap: int) -> None:
    settings = load_settings()
    flags = load_flags(settings.flags_file)
    for name in names:
        pairs = await compare_set(name, queries, settings, flags, cap)
        print(name, "(framed, bare):", dict(pairs.most_common()), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sets", nargs="+", metavar="NAME", help="labelled sets (default: all of --queries)"
    )
    parser.add_argument("--queries", type=Path, default=QUERIES, metavar="DIR")
    parser.add_argument(
        "--phase-cap",
        type=int,
        choices=(1, 2),
        default=2,
        help="highest phase (in memory: no semantic leg)",
    )
    args = parser.parse_args(argv)
    names = args.sets or sorted(p.stem for p in args.queries.glob("*.yaml"))
    asyncio.run(run(names, args.queries, args.phase_cap))
    return 0


if __name__ == "__main__":
    sys.exit(main())
