"""Long reference pages and page types (issue 34 item 6), with no database.

On MkDocs' docs the 110 KB release notes mention every feature once per release, and were the top
result or an option for a third of ordinary questions. The page is found by its structure (its
headings are versions and dates), and ranks below the page that answers unless the question is
about a release. Here the labelled set of tests/corpora/mkdocs-docs runs through the service's own
`Pipeline.run` at phases 1 and 2, in memory; phase 3 is tests/integration/test_release_notes_phase3.py.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from service.domain.types import Chunk, Document
from service.evaluation.decisions import policy_flags, run_case
from service.evaluation.labelled import LabelledQuery, load_query_set
from service.flags import FlagError, Flags, apply_overrides
from service.ingest.seeder import SeedOptions, default_chunker, prepare
from service.pipeline import Pipeline, RetrieveParams
from service.scoring.indexes import release_notes_pages
from service.scoring.page_priors import RELEASE_QUESTION
from service.scoring.snippets import plain_text
from service.wiring import make_pipeline

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "tests" / "corpora"
MKDOCS = CORPORA / "mkdocs-docs"
RELEASE_NOTES = "about/release-notes"
RELEASE = "release question"
SETS = {
    "seeds": "seed", "logseq-docs": "logseq", "mkdocs-docs": "mkdocs", "vite-docs": "vite",
    "starlight-docs": "starlight", "requests-docs": "requests",
}


def _prepared(folder: Path) -> tuple[list[Document], list[Chunk]]:
    flags = Flags()
    documents, chunks, _ = prepare(folder, default_chunker(flags.chunking.max_tokens), SeedOptions.from_flags(flags))
    return documents, chunks


@pytest.fixture(scope="module")
def mkdocs() -> tuple[Pipeline, list[Chunk]]:
    documents, chunks = _prepared(MKDOCS)
    pipeline = make_pipeline(MKDOCS, Flags)
    pipeline.load_corpus(documents, chunks, 1)
    return pipeline, chunks


@pytest.fixture(scope="module")
def mkdocs_cases() -> list[LabelledQuery]:
    return load_query_set(ROOT / "bench" / "queries" / "mkdocs.yaml")


def _first(status: str, shown: tuple[str, ...], options: tuple[str, ...]) -> str | None:
    pages = shown if status == "answer" else options if status == "clarify" else ()
    return pages[0] if pages else None


@pytest.mark.parametrize("policy", ["seed_rules", "calibrated"])
@pytest.mark.parametrize("phase", [1, 2])
async def test_no_question_but_a_release_question_gets_the_release_notes_first(
    mkdocs: tuple[Pipeline, list[Chunk]], mkdocs_cases: list[LabelledQuery], phase: int, policy: str,
) -> None:
    pipeline, _ = mkdocs
    flags = policy_flags(Flags(), policy)
    crowded, reached = [], []
    for case in mkdocs_cases:
        run = await run_case(pipeline, flags, case, phase, policy)
        first = _first(run.status, run.shown, run.options)
        if case.note == RELEASE:
            reached.append(run.ranked[:1] == (RELEASE_NOTES,))
        elif first == RELEASE_NOTES:
            crowded.append((case.id, case.query, run.status))
    assert crowded == []
    # The release questions still reach the page: every one has it first in the ranking.
    assert len(reached) >= 3
    assert all(reached)


async def test_the_prior_switched_off_lets_the_release_notes_crowd_in(
    mkdocs: tuple[Pipeline, list[Chunk]], mkdocs_cases: list[LabelledQuery],
) -> None:
    """The test above can fail: without the prior, ordinary questions get the release notes first."""
    pipeline, _ = mkdocs
    base = Flags()
    off = policy_flags(msgspec.structs.replace(
        base, retrieval=msgspec.structs.replace(base.retrieval, release_notes_factor=1.0)), "seed_rules")
    crowded = 0
    for case in mkdocs_cases:
        if case.note != RELEASE:
            run = await run_case(pipeline, off, case, 2, "seed_rules")
            crowded += _first(run.status, run.shown, run.options) == RELEASE_NOTES
    assert crowded >= 5


@pytest.mark.parametrize("folder", sorted(SETS))
def test_release_pages_are_found_by_structure_alone(folder: str) -> None:
    """Across the six vendored corpora exactly the two changelogs are release pages: MkDocs'
    release notes (Markdown "## Version 1.6.0 (2024-04-20)") and Logseq's changelog (outliner
    heading blocks "- ## Beta 0.10.15 Dec 1st, 2025"); no guide that names a version here and there."""
    path = ROOT / "seeds" if folder == "seeds" else CORPORA / folder
    _, chunks = _prepared(path)
    expected = {"mkdocs-docs": {RELEASE_NOTES}, "logseq-docs": {"changelog"}}.get(folder, set())
    assert release_notes_pages(chunks) == expected


def _chunks(slug: str, *paths: str) -> list[Chunk]:
    return [Chunk(doc_slug=slug, category="c", title="T", header_path=path, chunk_index=i, content="x",
                  keywords=(), chunk_hash=str(i), token_count=1) for i, path in enumerate(paths)]


def test_the_release_rule_needs_three_release_headings_and_half_of_their_depth() -> None:
    changelog = _chunks("changelog", "Changes > Unreleased > Fixed", "Changes > 2.1.0 > Added",
                        "Changes > v2.0 > Fixed", "Changes > 14 March 2024", "Changes > Upgrading")
    two = _chunks("two", "Guide > Node 18.2 support", "Guide > Since 1.4", "Guide > Install")
    minority = _chunks("minority", "Guide > 1.0", "Guide > 1.1", "Guide > 1.2", *(f"Guide > Topic {n}" for n in "abcd"))
    assert release_notes_pages([*changelog, *two, *minority]) == {"changelog"}


@pytest.mark.parametrize("folder", sorted(SETS))
def test_every_labelled_release_question_is_taken_for_one(folder: str) -> None:
    cases = load_query_set(ROOT / "bench" / "queries" / f"{SETS[folder]}.yaml")
    missed = [c.query for c in cases if c.note == RELEASE and RELEASE_QUESTION.search(c.query) is None]
    assert missed == []


@pytest.mark.parametrize("query", ["how do I change the theme", "change the search language",
                                   "How do I switch my site to the readthedocs theme?"])
def test_an_ordinary_question_is_not_a_release_question(query: str) -> None:
    assert RELEASE_QUESTION.search(query) is None


async def test_an_operators_page_boost_moves_a_page_at_every_keyword_phase(mkdocs: tuple[Pipeline, list[Chunk]]) -> None:
    pipeline, _ = mkdocs
    base = policy_flags(Flags(), "seed_rules")
    for phase in (1, 2):
        params = RetrieveParams(query="site_url", phase_cap=phase, top_k=5)
        plain = await pipeline.run(params, base, observe=False)
        assert plain.signals is not None and plain.signals.ranking[0] == "user-guide/configuration"
        demoted = await pipeline.run(
            params, apply_overrides(base, {"retrieval.page_boosts": {"user-guide/conf*": 0.01}}), observe=False)
        assert demoted.signals is not None and demoted.signals.ranking[0] != "user-guide/configuration"
        second = plain.signals.ranking[1]
        raised = await pipeline.run(params, apply_overrides(base, {"retrieval.page_boosts": {second: 10}}), observe=False)
        assert raised.signals is not None and raised.signals.ranking[0] == second


@pytest.mark.parametrize(("boosts", "named"), [
    ({"api/*": 11}, "'api/*'"), ({"api/*": 0}, "'api/*'"), ({"": 1}, "''"), ({"/guide": 2}, "'/guide'"),
])
def test_a_bad_page_boost_is_refused_naming_its_glob(boosts: dict[str, float], named: str) -> None:
    with pytest.raises(FlagError, match=r"retrieval\.page_boosts") as caught:
        apply_overrides(Flags(), {"retrieval.page_boosts": boosts})
    assert named in str(caught.value)


async def test_phase_1_shows_the_section_that_matched(mkdocs: tuple[Pipeline, list[Chunk]]) -> None:
    """Phase 1 ranks whole pages; the page shown names its best-matching section (header path,
    anchor, snippet from that section's text), so the link opens the part that answers."""
    pipeline, chunks = mkdocs
    outcome = await pipeline.run(RetrieveParams(query="site_url", phase_cap=1, top_k=3),
                                 policy_flags(Flags(), "seed_rules"), observe=False)
    first = outcome.results[0]
    assert first.doc_slug == "user-guide/configuration" and first.chunk_index is None
    assert first.header_path is not None and first.header_path.endswith("site_url")
    section = next(c for c in chunks if c.doc_slug == first.doc_slug and c.header_path == first.header_path)
    assert first.anchor == section.anchor == "site_url"
    assert first.snippet.strip("… ") in plain_text(section.content)
