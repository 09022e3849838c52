"""A stub page (an include line, a directive, a link list) is kept, but a query naming it is not
answered with it for its title alone."""

from __future__ import annotations

import msgspec

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


async def _decided(stub: bool) -> tuple[str, str]:
    page = Document(**{**msgspec.structs.asdict(STUB), "stub": stub})
    flags = apply_overrides(Flags(), {"decision.policy": "seed_rules"})
    pipeline = Pipeline(cache=Tier1Cache(()), synonyms=Synonyms(), flags=lambda: flags)
    pipeline.load_corpus([page, PAGE], [chunk(page), chunk(PAGE)], version=1)
    outcome = await pipeline.run_request(RetrieveParams(query="command line interface", phase_cap=1))
    return outcome.results[0].doc_slug, outcome.reason


async def test_a_stub_page_named_by_the_query_is_not_the_answer_for_its_title_alone() -> None:
    """"command line interface" is the title of MkDocs' `cli` page, whose only line is a plugin
    directive: the named-page rule answers with a page the query names, never with a stub."""
    top, reason = await _decided(stub=False)
    assert (top, reason) == (STUB.slug, "query_is_title")  # the same page with text of its own
    top, reason = await _decided(stub=True)
    assert reason != "query_is_title", (top, reason)
