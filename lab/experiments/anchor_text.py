"""Could the words other pages link to a page by rank paraphrases? (a ceiling, before building it)

Web search ranks a page by the text of the links that reach it (anchor text): other authors
describe the page in their own words, which is what a paraphrase needs. Before adding such a
field to the keyword index, this counts the paraphrases it could move at most: per labelled set,
each page's inbound link texts (links from other pages, `linked_names.markdown_links`, reached
through `CorpusLinks`), and for each dev paraphrase whose phase-3 first page is wrong, whether the
right page's inbound texts share more of the query's words than the wrong first page's do (`could
gain`) or any at all (`shares a word`).

    .venv/bin/python -m lab.experiments.anchor_text --set bench/queries/seed.yaml=/tmp/loco/seed.json ...
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from lab.experiments.relevance_decision import Loaded, load_set, phase3_runs
from service.ingest.linked_names import markdown_links
from service.ingest.links import CorpusLinks
from service.ingest.markdown import CorpusPage
from service.ingest.parse import Link
from service.normalize.lexicon import default_stopwords
from service.normalize.text import lowercase_words, words


def content_words(text: str) -> set[str]:
    """The words of `text` the service would search (its tokeniser, its stopwords)."""
    return set(words(lowercase_words(text))) - default_stopwords()


def inbound_texts(corpus: Sequence[CorpusPage], known: CorpusLinks) -> dict[str, list[str]]:
    """Each page's slug → the texts of the links other pages reach it by."""
    found: dict[str, list[str]] = defaultdict(list)
    for entry in corpus:
        for text, target in markdown_links(entry.doc.content):
            reached = known.target(Link(target, "markdown", 0), entry)
            if reached.page is not None and reached.page.doc.slug != entry.doc.slug:
                found[reached.page.doc.slug].append(text)
    return found


def tally(loaded: Loaded, inbound: Mapping[str, Sequence[str]]) -> Counter[str]:
    """Dev paraphrases: right first pages, misses, and misses the inbound texts could turn."""
    from service.evaluation.labelled import LabelledQuery

    cases: dict[str, LabelledQuery] = {c.id: c for c in loaded.cases}
    counts: Counter[str] = Counter()
    for run in phase3_runs(loaded):
        case = cases.get(run.case_id)
        if case is None or case.kind != "paraphrase" or case.split != "dev" or not case.pages:
            continue
        first = run.ranked[0] if run.ranked else None
        if first in case.pages:
            counts["right first"] += 1
            continue
        counts["missed"] += 1
        asked = content_words(case.query)
        right = asked & {w for t in inbound.get(case.pages[0], ()) for w in content_words(t)}
        wrong = asked & {w for t in inbound.get(first or "", ()) for w in content_words(t)}
        counts["shares a word"] += bool(right)
        counts["could gain"] += len(right) > len(wrong)
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    from lab.evaluation.kinds import corpus_dir
    from service.flags import load_flags
    from service.ingest.markdown import ignored_files, parse_corpus
    from service.ingest.seeder import SeedOptions
    from service.settings import load_settings

    parser = argparse.ArgumentParser(prog="python -m lab.experiments.anchor_text")
    parser.add_argument("--set", dest="sets", action="append", required=True, metavar="QUERIES=SIGNALS")
    args = parser.parse_args(argv)
    settings = load_settings()
    options = SeedOptions.from_flags(load_flags(settings.flags_file))
    total: Counter[str] = Counter()
    print("| corpus | internal links | pages reached | dev paraphrases right first | missed | right page's inbound texts"
          " share a query word | share more than the wrong first page's |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for spec in args.sets:
        loaded = load_set(spec)
        folder = corpus_dir(loaded.corpus, settings, None)
        corpus = parse_corpus(folder, options.rules)
        inbound = inbound_texts(corpus, CorpusLinks(corpus, folder, ignored_files(folder, options.rules)))
        counts = tally(loaded, inbound)
        total.update(counts)
        print(f"| {loaded.corpus} | {sum(map(len, inbound.values()))} | {len(inbound)} of {len(corpus)} | "
              f"{counts['right first']} | {counts['missed']} | {counts['shares a word']} | {counts['could gain']} |")
    print(f"| pooled | | | {total['right first']} | {total['missed']} | {total['shares a word']} | {total['could gain']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
