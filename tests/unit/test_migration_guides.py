"""Migration guides, a page type of their own (issue 40: the ranking puts the right page first),
with no database.

Pinia's three migration guides ("Migrating from Vuex ≤4", "Migrating from 0.x (v1) to v2", …)
walk through nearly every feature once, as each one changes; before the prior they were the first
page for "install pinia", "hot module replacement" and a store in a router guard. A guide is found
by its title and ranks below the page that documents the feature unless the question is about a
release or names what the guide's title names. Here Pinia's labelled set runs through the
service's own `Pipeline.run` at phases 1 and 2, in memory; phase 3 is measured by the
twelve-corpus table (docs/quality/page-priors.md).
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from service.domain.types import Chunk, Document
from service.evaluation.decisions import policy_flags, run_case
from service.evaluation.labelled import LabelledQuery, load_query_set
from service.flags import Flags
from service.ingest.seeder import SeedOptions, default_chunker, prepare
from service.normalize.query import normalize_query
from service.pipeline import Pipeline, RetrieveParams
from service.scoring.indexes import CorpusIndexes
from service.scoring.page_priors import is_release_question
from service.scoring.stemming import lexical_key
from service.wiring import make_pipeline

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "tests" / "corpora"
PINIA = CORPORA / "pinia-docs"
PINIA_GUIDES = {"cookbook/migration-vuex", "cookbook/migration-v1-v2", "cookbook/migration-0-0-7"}


def _pipeline(folder: Path) -> Pipeline:
    flags = Flags()
    documents: list[Document]
    chunks: list[Chunk]
    documents, chunks, _ = prepare(folder, default_chunker(flags.chunking.max_tokens), SeedOptions.from_flags(flags))
    pipeline = make_pipeline(folder, Flags)
    pipeline.load_corpus(documents, chunks, 1)
    return pipeline


@pytest.fixture(scope="module")
def pinia() -> Pipeline:
    return _pipeline(PINIA)


@pytest.fixture(scope="module")
def pinia_cases() -> list[LabelledQuery]:
    return load_query_set(ROOT / "bench" / "queries" / "pinia.yaml")


def _indexes(pipeline: Pipeline) -> CorpusIndexes:
    assert pipeline.indexes is not None
    return pipeline.indexes


def _guides(pipeline: Pipeline) -> set[str]:
    indexes = _indexes(pipeline)
    return {slug for slug in indexes.documents_by_slug if indexes.page_type(slug) == "migration_guide"}


@pytest.mark.parametrize(("folder", "expected"), [
    ("pinia-docs", PINIA_GUIDES),
    ("vite-docs", {"guide/migration"}),
    ("helix-docs", {"from-vim"}),
    ("requests-docs", set()),
])
def test_migration_guides_are_found_by_their_title(folder: str, expected: set[str]) -> None:
    """"Migrating from Vim", "Migration from v7": a title that migrates or upgrades; Requests'
    "Community Updates" and release-process pages are no guides."""
    assert _guides(_pipeline(CORPORA / folder)) == expected


def _off(flags: Flags) -> Flags:
    return msgspec.structs.replace(flags, retrieval=msgspec.structs.replace(flags.retrieval, migration_guide_factor=1.0))


def _names_the_guide(pipeline: Pipeline, case: LabelledQuery, slug: str) -> bool:
    """The question is about a release, or names the guide's subject ("pinia vs vuex")."""
    query, _ = normalize_query(case.query, _indexes(pipeline).lexicon)
    said = {lexical_key(t) for t in query.tokens}
    return is_release_question(query) or bool(said & _indexes(pipeline).migration_subject(slug))


@pytest.mark.parametrize("phase", [1, 2])
async def test_a_migration_guide_comes_first_only_when_the_question_is_about_it(
    pinia: Pipeline, pinia_cases: list[LabelledQuery], phase: int,
) -> None:
    on = policy_flags(Flags(), "seed_rules")
    crowded, crowded_without = [], []
    for case in pinia_cases:
        for flags, found in ((on, crowded), (_off(on), crowded_without)):
            run = await run_case(pinia, flags, case, phase, "seed_rules")
            first = run.ranked[0] if run.ranked else None
            if first in PINIA_GUIDES and not _names_the_guide(pinia, case, first):
                found.append((case.id, case.query, first))
    assert crowded == []
    # The assertion above can fail: without the prior, questions that never mention a migration
    # get a guide first ("How do I use a store in a Vue Router navigation guard?").
    assert len(crowded_without) >= 8


@pytest.mark.parametrize(("query", "guide"), [
    ("migrate from vuex 4 to pinia", "cookbook/migration-vuex"),  # a migration question
    ("what happened to store.state after 0.0.7", "cookbook/migration-0-0-7"),  # a version
])
async def test_a_question_about_the_migration_is_ranked_as_without_the_prior(
    pinia: Pipeline, query: str, guide: str,
) -> None:
    flags = policy_flags(Flags(), "seed_rules")
    for phase in (1, 2):
        params = RetrieveParams(query=query, phase_cap=phase, top_k=3)
        on = await pinia.run(params, flags, observe=False)
        off = await pinia.run(params, _off(flags), observe=False)
        assert on.signals is not None and off.signals is not None
        assert on.signals.ranking == off.signals.ranking
        assert guide in on.signals.ranking[:3]


async def test_a_question_naming_the_guides_subject_keeps_it_at_full_weight(pinia: Pipeline) -> None:
    """"Migrating from Vuex ≤4" is about Vuex: a question that names Vuex is scored as without the
    prior, while one that does not has the guide lowered."""
    flags = policy_flags(Flags(), "seed_rules")
    for query, lowered in (("vuex modules and namespacing", False), ("modules and namespacing", True)):
        on = await pinia.run(RetrieveParams(query=query, phase_cap=2, top_k=10), flags, observe=False)
        off = await pinia.run(RetrieveParams(query=query, phase_cap=2, top_k=10), _off(flags), observe=False)
        score_on = next(e.score for e in on.results if e.doc_slug == "cookbook/migration-vuex")
        score_off = next(e.score for e in off.results if e.doc_slug == "cookbook/migration-vuex")
        assert (score_on < score_off) is lowered


def test_a_guides_subject_is_not_the_product_every_page_names() -> None:
    """"Migrate to Logseq Beta" is about the beta: "logseq", on about half of Logseq's pages, does
    not make a question about the guide, "beta" (a few pages) does."""
    indexes = _indexes(_pipeline(CORPORA / "logseq-docs"))
    subject = indexes.migration_subject("migrate-to-logseq-beta")
    assert indexes.page_type("migrate-to-logseq-beta") == "migration_guide"
    assert "beta" in subject
    assert "logseq" not in subject
    assert indexes.documents.postings.document_frequency("logseq") >= len(indexes.documents_by_slug) / 4
