"""A stub page (an include line, a directive, a link list) is kept but never answers on its own."""

from __future__ import annotations

from service.domain.types import Chunk, Document
from service.flags import Flags, apply_overrides
from service.normalize.lexicon import Synonyms
from service.pipeline import Pipeline, RetrieveParams
from service.scoring.tier1_cache import Tier1Cache

STUB = Document(slug="user-guide/cli", category="user-guide", title="Command line interface",
                content="::: mkdocs-click\n    :module: mkdocs.__main__", content_hash="s", stub=True,
                keywords=())
PAGE = Document(slug="user-guide/commands", category="user-guide", title="Running commands",
                content="The command line interface has three commands: serve, build and deploy. " * 4,
                content_hash="p", keywords=())


def chunk(doc: Document) -> Chunk:
    return Chunk(doc_slug=doc.slug, category=doc.category, title=doc.title, header_path=doc.title, chunk_index=0,
                 content=doc.content, keywords=(), chunk_hash=doc.content_hash, token_count=30)


async def _top(flags: Flags, phase: int) -> tuple[str, str]:
    pipeline = Pipeline(cache=Tier1Cache(()), synonyms=Synonyms(), flags=lambda: flags)
    pipeline.load_corpus([STUB, PAGE], [chunk(STUB), chunk(PAGE)], version=1)
    outcome = await pipeline.run_request(RetrieveParams(query="command line interface", phase_cap=phase))
    return outcome.results[0].doc_slug, outcome.status


async def test_a_stub_page_named_by_the_query_does_not_answer_it() -> None:
    for phase in (1, 2):
        top, status = await _top(Flags(), phase)
        assert top == PAGE.slug, (phase, top, status)


async def test_without_the_prior_the_stub_page_would_lead() -> None:
    # The case above is a real test of the prior: with it off, the stub's title wins the ranking.
    top, _ = await _top(apply_overrides(Flags(), {"retrieval.stub_page_factor": 1.0}), 1)
    assert top == STUB.slug
