"""Full texts for the context: chunk results → whole chunk, document results → whole document."""

from __future__ import annotations

from service.context.passages import concepts_of, demote_headings, passages_of
from service.domain.types import Chunk, Document, Evidence
from service.normalize.lexicon import Synonyms
from service.scoring.indexes import build_indexes
from service.scoring.tier1_cache import Concept

DOC = Document(
    slug="widgets/quick-links", category="widgets", title="Quick Links",
    content="# Quick Links\n\nQuick Links holds your shortcuts.\n\n## Adding a link\n\nClick Add link.",
    keywords=("shortcuts",), content_hash="h",
)
CHUNK = Chunk(
    doc_slug=DOC.slug, category="widgets", title="Quick Links", header_path="Quick Links > Adding a link",
    chunk_index=1, content="Click Add link. Then type a name.", keywords=(), chunk_hash="c", token_count=8,
)
INDEXES = build_indexes([DOC], [CHUNK], Synonyms())


def result(chunk_index: int | None, slug: str = DOC.slug, header: str | None = None) -> Evidence:
    return Evidence(
        doc_slug=slug, title="Quick Links", category="widgets", snippet="snippet…", score=1.5,
        content_hash="h", matched_terms=(), source="keyword", header_path=header, chunk_index=chunk_index,
    )


def test_chunk_result_gets_the_whole_chunk() -> None:
    (p,) = passages_of([result(1, header=CHUNK.header_path)], INDEXES)
    assert (p.text, p.header_path, p.chunk_index, p.score) == (CHUNK.content, CHUNK.header_path, 1, 1.5)


def test_document_result_gets_the_document_without_its_title_and_with_demoted_headings() -> None:
    (p,) = passages_of([result(None)], INDEXES)
    assert p.text == "Quick Links holds your shortcuts.\n\n#### Adding a link\n\nClick Add link."


def test_unknown_unit_or_no_corpus_keeps_the_snippet() -> None:
    assert passages_of([result(7)], INDEXES)[0].text == "snippet…"
    assert passages_of([result(None, slug="widgets/gone")], INDEXES)[0].text == "snippet…"
    assert passages_of([result(1)], None)[0].text == "snippet…"


def test_demote_headings_and_concepts() -> None:
    assert demote_headings("## A\n### B\ntext ## not\n#### C") == "#### A\n##### B\ntext ## not\n###### C"
    assert concepts_of([Concept(term="Home", slug="concepts/home", text="Home is…")])[0].text == "Home is…"
