"""Do variants of a word find the same pages? Issue 40 item 5, over the twelve labelled corpora.

Usage: .venv/bin/python -m lab.experiments.word_variants [--out FILE] [--sample N]   (about 40 s)

For each corpus (the seed corpus and tests/corpora/*-docs), read in memory as seeding reads it
(`lab.evaluation.kinds.read_corpus` + `memory_pipeline`: the folder's glossary and synonyms
included), the corpus's words are the surface forms of its pages (title, keywords, text; letters
only, three or more, not stopwords) found on at least `MIN_PAGES` pages. Two kinds of pairs:

- joined: two words with the same BM25F key (`scoring.stemming.lexical_key`, the Snowball stem
  of the plural stem): "deploy"/"deployment", "upload"/"uploads";
- not joined: two words a reader takes for one (`reader_bases`: a derivational suffix,
  "creation"/"create"; a British/American spelling, "customise"/"customize"; an irregular
  verb, "built"/"build"; a clipping, "config"/"configuration") whose keys differ. For each the
  report says whether the folder's synonym rules or glossary aliases join them.

Every pair (or, with `--sample N`, N per kind and corpus chosen by a hash of the pair: the same
ones on every run) is run, each word alone as the query, through the service's own
`Pipeline.run` at phases 1 and 2 under the calibrated policy, and compared on the page ranking
the decision is made from (`signals.ranking`): how many pairs have the same first page, the same
set of three first pages, the same decision. The pairs whose first pages differ are listed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.evaluation.kinds import TEST_CORPORA, memory_pipeline, read_corpus
from service.domain.types import Document
from service.evaluation.decisions import policy_flags
from service.flags import Flags
from service.normalize.text import (
    apply_phrase_synonyms,
    apply_word_synonyms,
    clean,
    lowercase_words,
    stem_plural,
    words,
)
from service.pipeline import Pipeline, RetrieveParams
from service.scoring.stemming import lexical_key
from service.settings import PROJECT_ROOT

CORPORA: tuple[tuple[str, Path], ...] = (("seed", PROJECT_ROOT / "seeds"), *(
    (name, TEST_CORPORA / f"{name}-docs") for name in (
        "logseq", "mkdocs", "vite", "starlight", "requests", "starlette", "foam", "helix", "pinia",
        "prettier", "restic")))
MIN_PAGES = 2
MIN_LETTERS = 3
PHASES = (1, 2)
TOP = 3
DEFAULT_OUT = PROJECT_ROOT / "lab" / "results" / "kinds" / "word-variants-2026-11-29.txt"

# An ending and what the base word ends in instead. Snowball removes some derivational endings
# ("deployment", "installation"), not all ("creation", "definition", "storage").
SUFFIXES: Mapping[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "derivation": (("ication", ("y",)), ("ation", ("e", "ate", "")), ("ition", ("e",)), ("ution", ("ve",)),
                   ("sion", ("d", "de", "se", "t")), ("ion", ("", "e")), ("ment", ("",)), ("age", ("e",))),
    "spelling": (("isation", ("ization",)), ("ise", ("ize",)), ("ised", ("ized",)), ("ising", ("izing",)),
                 ("yse", ("yze",)), ("our", ("or",))),
}
MIN_BASE = 4  # "option" is not a variant of "opt", nor "action" of "act"
NOT_VARIANTS = frozenset({("application", "apply"), ("found", "foundation"), ("notation", "note")})
"""What the rules above pair and a reader does not (read by hand over the twelve corpora)."""
IRREGULAR: Mapping[str, str] = {
    "built": "build", "rebuilt": "rebuild", "written": "write", "wrote": "write", "rewritten": "rewrite",
    "ran": "run", "chosen": "choose", "chose": "choose", "found": "find", "kept": "keep", "sent": "send",
    "held": "hold", "began": "begin", "begun": "begin", "given": "give", "taken": "take", "shown": "show",
    "hidden": "hide", "known": "know", "seen": "see", "thrown": "throw", "drawn": "draw", "bound": "bind",
    "lost": "lose", "children": "child", "indices": "index", "overridden": "override", "broken": "break",
    "frozen": "freeze", "forgotten": "forget", "undone": "undo", "spent": "spend", "led": "lead",
}
CLIPPINGS: Mapping[str, tuple[str, ...]] = {
    "config": ("configuration", "configure"), "auth": ("authentication",),
    "sync": ("synchronize", "synchronise", "synchronization", "synchronisation"), "repo": ("repository",),
    "doc": ("documentation",), "app": ("application",), "dir": ("directory",), "env": ("environment",),
    "info": ("information",), "spec": ("specification",), "param": ("parameter",), "arg": ("argument",),
    "lib": ("library",), "stat": ("statistics",), "admin": ("administrator", "administration"),
    "init": ("initialize", "initialise", "initialization"), "async": ("asynchronous",),
}

Pair = tuple[str, str]


def page_counts(documents: Iterable[Document], stopwords: frozenset[str]) -> Counter[str]:
    """How many pages each surface word is on (letters only, `MIN_LETTERS`+, not a stopword)."""
    counts: Counter[str] = Counter()
    for doc in documents:
        text = lowercase_words(clean(" ".join((doc.title, *doc.keywords, doc.content))))
        counts.update({w for w in words(text) if w.isalpha() and len(w) >= MIN_LETTERS and w not in stopwords})
    return counts


def joined_pairs(vocabulary: Iterable[str]) -> list[Pair]:
    """Every two words with the same `lexical_key`, each pair sorted, in sorted order."""
    groups: dict[str, list[str]] = {}
    for word in sorted(vocabulary):
        groups.setdefault(lexical_key(word), []).append(word)
    return sorted(p for group in groups.values() for p in itertools.combinations(group, 2))


def reader_bases(word: str) -> dict[str, str]:
    """The words a reader takes `word` to be a form of, each with why (a kind of `SUFFIXES`,
    'irregular' or 'clipping')."""
    bases = {word[: -len(suffix)] + end: kind for kind, rules in SUFFIXES.items()
             for suffix, ends in rules if word.endswith(suffix) for end in ends}
    bases = {b: kind for b, kind in bases.items() if len(b) >= MIN_BASE and b != word}
    if word in IRREGULAR:
        bases[IRREGULAR[word]] = "irregular"
    bases.update(dict.fromkeys(CLIPPINGS.get(stem_plural(word), ()), "clipping"))
    return bases


def unjoined_pairs(vocabulary: Iterable[str]) -> dict[Pair, str]:
    """Pairs of the vocabulary a reader joins (`reader_bases`) and `lexical_key` does not, with why."""
    present = set(vocabulary)
    pairs = {(min(w, b), max(w, b)): kind for w in sorted(present) for b, kind in reader_bases(w).items()
             if b in present and lexical_key(b) != lexical_key(w)}
    return {pair: pairs[pair] for pair in sorted(pairs) if pair not in NOT_VARIANTS}


def sample(pairs: Sequence[Pair], n: int | None) -> list[Pair]:
    """Up to `n` pairs (None: all), the same ones on every run (ordered by a hash of the pair)."""
    return sorted(pairs, key=lambda p: hashlib.sha1(f"{p[0]} {p[1]}".encode()).hexdigest())[:n]


def rewrite_keys(word: str, pipeline: Pipeline) -> tuple[str, ...]:
    """The word's keys after the folder's synonym rules (phrases, then words)."""
    phrased, _ = apply_phrase_synonyms(word, pipeline.synonyms.phrases)
    rewritten, _ = apply_word_synonyms(words(phrased), pipeline.synonyms.words)
    return tuple(lexical_key(t) for t in rewritten)


def joined_by(pair: Pair, pipeline: Pipeline) -> str:
    """'synonyms', 'glossary' or '' : which of the folder's own files makes the two words one."""
    if rewrite_keys(pair[0], pipeline) == rewrite_keys(pair[1], pipeline):
        return "synonyms"
    for concept in pipeline.cache.concepts:
        names = {lexical_key(n) for n in (concept.term.lower(), *(a.lower() for a in concept.aliases))}
        if {lexical_key(pair[0]), lexical_key(pair[1])} <= names:
            return "glossary"
    return ""


@dataclass(frozen=True)
class Run:
    status: str
    ranking: tuple[str, ...]

    @property
    def first(self) -> str:
        return self.ranking[0] if self.ranking else "-"


async def run_words(pipeline: Pipeline, flags: Flags, queries: Iterable[str]) -> dict[tuple[str, int], Run]:
    """Each word alone as the query at each of `PHASES`: its decision and page ranking."""
    out: dict[tuple[str, int], Run] = {}
    for word in sorted(set(queries)):
        for phase in PHASES:
            outcome = await pipeline.run(RetrieveParams(query=word, phase_cap=phase, top_k=5), flags, observe=False)
            ranking = outcome.signals.ranking if outcome.signals is not None else ()
            out[word, phase] = Run(outcome.status, tuple(ranking))
    return out


@dataclass(frozen=True)
class Compared:
    """A sample of pairs at one phase."""

    pairs: int
    same_first: int
    same_top3: int
    same_status: int
    differ: tuple[str, ...]



def compare(pairs: Sequence[Pair], runs: Mapping[tuple[str, int], Run], phase: int) -> Compared:
    first = top3 = status = 0
    differ: list[str] = []
    for a, b in pairs:
        ra, rb = runs[a, phase], runs[b, phase]
        first += ra.first == rb.first
        top3 += set(ra.ranking[:TOP]) == set(rb.ranking[:TOP])
        status += ra.status == rb.status
        if ra.first != rb.first:
            differ.append(f"{a} -> {ra.first} ({ra.status}) | {b} -> {rb.first} ({rb.status})")
    return Compared(len(pairs), first, top3, status, tuple(differ))


@dataclass(frozen=True)
class CorpusReport:
    name: str
    pages: int
    words: int
    joined: int
    split: tuple[Pair, ...]
    """Pairs the stemmer joins and the folder's synonym rules rewrite apart."""
    unjoined: tuple[tuple[Pair, str, str], ...]
    """Every not-joined pair, why a reader joins it, what joins it in the folder's files ('' for nothing)."""
    by_phase: Mapping[tuple[str, int], Compared]
    """(group, phase) -> the sample compared; groups 'joined', 'unjoined', 'unjoined:<why>'."""


async def measure(name: str, folder: Path, n: int | None) -> CorpusReport:
    flags = Flags()
    documents, chunks = read_corpus(folder, flags)
    pipeline = memory_pipeline(folder, flags, documents, chunks)
    counts = page_counts(documents, pipeline.require_indexes().lexicon.stopwords)
    vocabulary = sorted(w for w, pages in counts.items() if pages >= MIN_PAGES)
    joined, unjoined = joined_pairs(vocabulary), unjoined_pairs(vocabulary)
    chosen = {"joined": sample(joined, n), "unjoined": sample(list(unjoined), n)}
    for why in sorted(set(unjoined.values())):
        chosen[f"unjoined:{why}"] = [p for p in chosen["unjoined"] if unjoined[p] == why]
    runs = await run_words(pipeline, policy_flags(flags, "calibrated"),
                           (w for pairs in chosen.values() for pair in pairs for w in pair))
    by_phase = {(group, phase): compare(pairs, runs, phase) for group, pairs in chosen.items() for phase in PHASES}
    split = tuple(p for p in joined if rewrite_keys(p[0], pipeline) != rewrite_keys(p[1], pipeline))
    return CorpusReport(name, len(documents), len(vocabulary), len(joined), split,
                        tuple((p, why, joined_by(p, pipeline)) for p, why in unjoined.items()), by_phase)


def _counts(c: Compared, status: bool = True) -> str:
    return " | ".join(str(n) for n in (c.same_first, c.same_top3, *([c.same_status] if status else [])))


def format_report(reports: Sequence[CorpusReport], n: int | None) -> str:
    lines = [
        "# Variants of a word over the twelve labelled corpora (issue 40 item 5), 2026-11-29",
        "# .venv/bin/python -m lab.experiments.word_variants" + (f" --sample {n}" if n is not None else ""),
        f"# words: on >= {MIN_PAGES} pages, letters only, >= {MIN_LETTERS}, not stopwords; each word alone "
        "as the query, Pipeline.run in memory, calibrated policy; pages = signals.ranking",
        "",
        "## Pairs the stemmer joins (same lexical_key): pairs with the same first page / top-3 set / decision",
        "| corpus | pages | words | joined pairs | split by synonyms | run | p1 first | p1 top-3 "
        "| p1 decision | p2 first | p2 top-3 | p2 decision |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in reports:
        c1, c2 = r.by_phase["joined", 1], r.by_phase["joined", 2]
        lines.append(f"| {r.name} | {r.pages} | {r.words} | {r.joined} | {len(r.split)} | {c1.pairs} | "
                     f"{_counts(c1)} | {_counts(c2)} |")
    lines += _pooled(reports, ["joined"])
    whys = sorted({why for r in reports for _, why, _ in r.unjoined})
    lines += ["", "## Pairs a reader joins and the stemmer does not (reader_bases): pairs with the same first page / "
              "top-3 set",
              f"| corpus | not joined | {' | '.join(whys)} | joined by synonyms/glossary | run "
              "| p1 first | p1 top-3 | p2 first | p2 top-3 |",
              "|---|" + "--:|" * (len(whys) + 7)]
    for r in reports:
        c1, c2 = r.by_phase["unjoined", 1], r.by_phase["unjoined", 2]
        per_why = " | ".join(str(sum(w == why for _, w, _ in r.unjoined)) for why in whys)
        lines.append(f"| {r.name} | {len(r.unjoined)} | {per_why} | {sum(bool(j) for _, _, j in r.unjoined)} | "
                     f"{c1.pairs} | {_counts(c1, False)} | {_counts(c2, False)} |")
    lines += _pooled(reports, ["unjoined", *(f"unjoined:{why}" for why in whys)])
    for r in reports:
        lines += ["", f"## {r.name}",
                  "split by synonyms: " + (", ".join(f"{a}/{b}" for a, b in r.split) or "none"),
                  "not joined: " + (", ".join(f"{a}/{b} ({why}" + (f", joined by {j})" if j else ")")
                                              for (a, b), why, j in r.unjoined) or "none")]
        for group in ("joined", "unjoined"):
            for phase in PHASES:
                differ = r.by_phase[group, phase].differ
                if differ:
                    lines.append(f"{group} pairs, phase {phase}, first page differs ({len(differ)}):")
                    lines += [f"  {d}" for d in differ]
    return "\n".join(lines) + "\n"


def _pooled(reports: Sequence[CorpusReport], groups: Sequence[str]) -> list[str]:
    out = [""]
    for group in groups:
        for phase in PHASES:
            rows = [r.by_phase[group, phase] for r in reports if (group, phase) in r.by_phase]
            pairs = sum(c.pairs for c in rows)
            first, top3 = sum(c.same_first for c in rows), sum(c.same_top3 for c in rows)
            out.append(f"pooled {group} phase {phase}: {pairs} pairs, same first page {first} "
                       f"({first / max(pairs, 1):.1%}), same top-3 {top3} ({top3 / max(pairs, 1):.1%})")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="FILE")
    parser.add_argument("--sample", type=int, metavar="N", help="pairs of each kind per corpus (default: all)")
    args = parser.parse_args(argv)
    reports = [asyncio.run(measure(name, folder, args.sample)) for name, folder in CORPORA]
    text = format_report(reports, args.sample)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
