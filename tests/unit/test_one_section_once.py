"""One section once (issue 42, item 3): the results shown name each page and anchor once, the
lower of two chunks of one section merging into the first, and the freed place goes to the next
section. tests/integration/test_one_per_section.py checks every labelled query of the vendored
corpora through the service. The twelve labelled sets' runs also hold issue 40's rule on choices
at phases 1 and 2 (a question offers two pages or more)."""

from __future__ import annotations

import time

import msgspec
import pytest

from service.domain.candidates import Candidates
from service.domain.outcome import Tier
from service.domain.types import Answer, Evidence
from service.respond import TierOutcome, outcome_of


def chunk(slug: str, index: int, score: float, terms: tuple[str, ...] = ("templates",)) -> Evidence:
    return Evidence(doc_slug=slug, title=slug, category="docs", snippet=f"{slug} {index}", score=score,
                    content_hash="h", matched_terms=terms, source="keyword", chunk_index=index,
                    match_explain=(f"bm25f {score}",))


ANCHORS = {
    ("tutorial/templates", 0): "the-base-layout",
    ("blueprints", 3): "templates", ("blueprints", 4): "templates",
    ("patterns/fileuploads", 4): "a-gentle-introduction", ("patterns/fileuploads", 5): "improving-uploads",
    ("templating", 1): "jinja-setup",
}


def shown(results: list[Evidence], top_k: int = 3, explained: bool = False) -> list[Evidence]:
    def explain(e: Evidence) -> Evidence:
        return msgspec.structs.replace(e, snippet="explained")

    candidates = Candidates(phase=2, ranking=results, explained=explain if explained else None)
    answered = TierOutcome(Tier.phase2, Answer(results=tuple(results), confidence=0.9), candidates, None)
    return list(outcome_of(answered, top_k, (), "r", time.perf_counter(), ANCHORS).results)


def test_two_chunks_of_one_section_are_one_result_and_the_next_section_takes_the_place() -> None:
    results = shown([chunk("tutorial/templates", 0, 9.0), chunk("blueprints", 3, 8.0),
                     chunk("blueprints", 4, 7.5, ("templates", "render")), chunk("templating", 1, 7.0)])
    assert [(e.doc_slug, e.anchor) for e in results] == [
        ("tutorial/templates", "the-base-layout"), ("blueprints", "templates"), ("templating", "jinja-setup")]
    merged = results[1]
    assert merged.chunk_index == 3 and merged.score == 8.0  # the better chunk leads
    assert merged.matched_terms == ("templates", "render")
    assert "merged: chunk 4 of this section (score 7.5)" in merged.match_explain


def test_the_same_chunk_twice_is_listed_once() -> None:
    again = chunk("patterns/fileuploads", 4, 6.0)
    results = shown([chunk("patterns/fileuploads", 4, 6.0), chunk("patterns/fileuploads", 5, 5.0), again], top_k=5)
    assert [(e.doc_slug, e.chunk_index) for e in results] == [("patterns/fileuploads", 4), ("patterns/fileuploads", 5)]
    assert "merged: the same passage again of this section (score 6)" in results[0].match_explain


def test_other_sections_of_one_page_stay_apart_and_every_shown_result_is_explained() -> None:
    results = shown([chunk("patterns/fileuploads", 4, 6.0), chunk("patterns/fileuploads", 5, 5.0),
                     chunk("blueprints", 3, 4.0), chunk("blueprints", 4, 3.0), chunk("templating", 1, 2.0)],
                    explained=True)
    assert [(e.doc_slug, e.anchor) for e in results] == [
        ("patterns/fileuploads", "a-gentle-introduction"), ("patterns/fileuploads", "improving-uploads"),
        ("blueprints", "templates")]
    assert {e.snippet for e in results} == {"explained"}


# -- every labelled set, in-process at phase 2 (no database, no model) ------------------------
def _labelled_corpora() -> list[tuple[str, str]]:
    from service.evaluation.labelled import load_labelled_set
    from service.settings import PROJECT_ROOT

    sets = []
    for path in sorted((PROJECT_ROOT / "bench" / "queries").glob("*.yaml")):
        corpus, _ = load_labelled_set(path)
        sets.append((path.name, corpus))
    return sets


@pytest.mark.parametrize(("queries", "corpus"), _labelled_corpora())
async def test_no_labelled_query_lists_a_section_twice_or_asks_without_a_choice_at_phase_2(
    queries: str, corpus: str,
) -> None:
    """Also issue 40's rule, over every labelled set (tests/integration/test_clarification_choices.py
    holds the seed set to it at every phase): at phases 1 and 2, no question with fewer than two
    pages to pick, no no-match ending in a question it offers nothing for."""
    from collections import Counter

    from service.evaluation.labelled import load_labelled_set
    from service.flags import Flags
    from service.ingest.seeder import SeedOptions, default_chunker, prepare
    from service.pipeline import RetrieveParams
    from service.settings import PROJECT_ROOT
    from service.wiring import make_pipeline
    from tests.conftest import choice_problem

    root = PROJECT_ROOT / ("seeds" if corpus == "seed" else f"tests/corpora/{corpus}")
    flags = Flags()
    documents, chunks, _ = prepare(root, default_chunker(flags.chunking.max_tokens), SeedOptions.from_flags(flags))
    pipeline = make_pipeline(root, lambda: flags)
    pipeline.load_corpus(documents, chunks, 1)
    _, cases = load_labelled_set(PROJECT_ROOT / "bench" / "queries" / queries)
    repeated, no_choice = [], []
    for case in cases:
        outcome = await pipeline.run(RetrieveParams(query=case.query, phase_cap=2, top_k=10), flags, observe=False)
        counts = Counter((r.doc_slug, r.anchor) for r in outcome.results)
        repeated += [f"{case.id}: {slug}#{anchor} x{n}" for (slug, anchor), n in counts.items() if n > 1]
        offered = Counter(o.doc_slug for o in outcome.options)  # a page offered twice to pick from
        repeated += [f"{case.id}: option {slug} x{n}" for slug, n in offered.items() if n > 1]
        for answered in (outcome, await pipeline.run(RetrieveParams(query=case.query, phase_cap=1, top_k=10), flags,
                                                     observe=False)):
            payload = {"status": answered.status, "message": answered.message,
                       "options": [{"doc_slug": o.doc_slug} for o in answered.options]}
            if (problem := choice_problem(payload)) is not None:
                no_choice.append(f"{case.id} {case.query!r} @{answered.phase}: {problem}")
    assert repeated == []
    assert no_choice == []
