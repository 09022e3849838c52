"""The seed scoring formula and the keyword index, on hand-computed cases."""

from __future__ import annotations

import math

import msgspec
import pytest

from service.domain.types import Chunk, Document
from service.flags import LexicalFlags
from service.normalize.lexicon import Synonyms, build_lexicon
from service.scoring import keyword_formulas as f
from service.scoring.chunks import dedupe_per_document
from service.scoring.keyword import (
    LexicalScorer,
    build_chunk_index,
    build_document_index,
    lexical_scorer,
)
from service.scoring.lexical_units import is_exact_title_phrase, prepare_document
from service.scoring.snippets import make_snippet
from service.scoring.stemming import lexical_key


def test_raw_points_follow_the_seed_table() -> None:
    assert f.raw_points(exact_title_phrase=True, title_hits=2, keyword_hits=1, content_hits=2) == 5 + 6 + 2 + 2
    assert f.raw_points(exact_title_phrase=False, title_hits=0, keyword_hits=0, content_hits=1) == 1


def test_length_normalisation_and_exact_phrase_discount() -> None:
    assert f.length_divisor(100, exact_title_phrase=False) == pytest.approx(10.0)
    # Half the penalty: divisor 0.5 × √100 = 5.
    assert f.length_divisor(100, exact_title_phrase=True) == pytest.approx(5.0)
    assert f.length_divisor(0, False) == 1.0  # an empty page never divides by zero


def test_confidence_formula() -> None:
    assert f.confidence(4.0, 1.0) == pytest.approx(0.75)
    assert f.confidence(4.0, 0.0) == 1.0
    assert f.confidence(0.0, 0.0) == 0.0


def test_exact_phrase_counts_as_two_matched_terms() -> None:
    assert f.matched_term_count(1, exact_title_phrase=True) == 2
    assert f.matched_term_count(1, exact_title_phrase=False) == 1
    assert f.matched_term_count(3, exact_title_phrase=True) == 3


@pytest.mark.parametrize(
    ("phrase", "titles", "expected"),
    [
        (["workspace"], ["workspace"], True),
        (["workspace"], ["workspace action"], False),  # one word inside a longer title
        (["quick", "link"], ["quick link"], True),
        (["quick", "link"], ["quick link widget"], True),  # 2+ words inside a title
        (["link", "quick"], ["quick link"], False),
        ([], ["quick link"], False),
    ],
)
def test_exact_title_phrase(phrase: list[str], titles: list[str], expected: bool) -> None:
    assert is_exact_title_phrase(phrase, titles) is expected


def _doc(slug: str, title: str, keywords: tuple[str, ...], content: str) -> Document:
    return Document(
        slug=slug, category=slug.split("/")[0], title=title, content=content,
        keywords=keywords, content_hash=f"hash-{slug}",
    )


DOCS = [
    _doc("concepts/workspace", "Workspace", ("canvas",), "A workspace groups notes on a canvas. " * 4),
    _doc("actions/workspaces", "Workspace Actions", ("rename",), "Rename or archive a workspace here."),
    _doc("widgets/recent", "Recent", ("history",), "Recently opened notes appear here."),
]
LEXICON = build_lexicon(
    titles=[d.title for d in DOCS], keywords=[k for d in DOCS for k in d.keywords],
    texts=[d.content for d in DOCS], synonyms=Synonyms(),
)


def test_document_scores_are_hand_computable() -> None:
    index = build_document_index(DOCS, LEXICON)
    results = index.search(["workspace"], lexical=LexicalFlags(scorer="seed"))
    assert [r.doc_slug for r in results] == ["concepts/workspace", "actions/workspaces"]
    top, second = results
    # Workspace page: exact title +5, title token +3, content +1 = 9 raw; content has
    # 4 × "workspace groups notes canvas" = 16 tokens; divisor 0.5 × 4 = 2.
    assert top.raw_score == 9 and top.score == pytest.approx(4.5)
    assert top.exact_title_phrase and top.title_or_keyword_hit
    # Actions page: title token +3, content +1 = 4; content tokens: rename archive workspace = 3.
    assert second.raw_score == 4 and second.score == pytest.approx(4 / math.sqrt(3))
    assert any("exact phrase in title" in line for line in top.match_explain)


def test_category_filter_and_unmatched_documents() -> None:
    index = build_document_index(DOCS, LEXICON)
    assert [r.doc_slug for r in index.search(["workspace"], category="actions")] == ["actions/workspaces"]
    assert index.search(["calendar"]) == []


def test_chunks_inherit_title_and_headings_count_as_title_words() -> None:
    chunk = Chunk(
        doc_slug="widgets/recent", category="widgets", title="Recent",
        header_path="Recent > Clearing history", chunk_index=2, content="Press the button.",
        keywords=("history",), chunk_hash="abc", token_count=4,
    )
    index = build_chunk_index([chunk], LEXICON, lambda slug: ("doc-hash", "summary"))
    (result,) = index.search(["clearing"])
    assert result.title_or_keyword_hit  # heading word counts as a title word
    assert result.header_path == "Recent > Clearing history"
    assert (result.chunk_index, result.chunk_hash, result.content_hash) == (2, "abc", "doc-hash")


def test_snippet_is_cut_around_the_first_matched_term() -> None:
    content = "intro " * 100 + "the Quick Links widget keeps pinned links " + "tail " * 100
    snippet = make_snippet(content, ["quick"])
    assert "Quick Links" in snippet
    assert snippet.startswith("… ") and snippet.endswith(" …")
    assert len(snippet) < 260


def test_dedupe_keeps_at_most_n_chunks_per_document() -> None:
    index = build_document_index(DOCS, LEXICON)
    results = index.search(["workspace"])
    doubled = [results[0], results[0], results[0], results[1]]
    kept, trimmed = dedupe_per_document(doubled, 2)
    assert [e.doc_slug for e in kept] == ["concepts/workspace", "concepts/workspace", "actions/workspaces"]
    assert trimmed == 1


def test_vectorised_bm25f_matches_the_scalar_formula() -> None:
    """The numpy ranking equals BM25F computed unit by unit from the definition
    (Robertson & Zaragoza 2009, eq. 3.18-3.19; Lucene's idf), written here
    independently of the service's formulas."""
    docs = [
        _doc("concepts/notes", "Notes", ("notes", "annotations"), "Notes hold text. Notes link to notes."),
        _doc("actions/notes", "Note Actions", ("rename",), "Rename, move or delete a note."),
        _doc("widgets/recent", "Recent", ("history",), "Recently opened notes and workspaces."),
        _doc("widgets/links", "Links Overview", ("backlinks",), "Backlinks between notes."),
    ]
    lexicon = build_lexicon(
        titles=[d.title for d in docs], keywords=[k for d in docs for k in d.keywords],
        texts=[d.content for d in docs], synonyms=Synonyms(),
    )
    params = LexicalFlags(scorer="bm25", k1=1.2, b=0.6, title_weight=2.0, keyword_weight=1.5, content_weight=1.0)
    tokens = ["rename", "notes"]
    results = build_document_index(docs, lexicon).search(tokens, lexical=params)

    terms = [prepare_document(d, lexicon).terms for d in docs]
    n = len(docs)
    fields = [
        (params.title_weight, [(t.title_tf, t.title_length) for t in terms]),
        (params.keyword_weight, [(t.keyword_tf, t.keyword_length) for t in terms]),
        (params.content_weight, [(t.content_tf, t.content_length) for t in terms]),
    ]
    expected: dict[str, float] = {}
    for i, doc in enumerate(docs):
        total = 0.0
        for stem in dict.fromkeys(lexical_key(t) for t in tokens):
            df = sum(any(stem in counts[j][0] for _, counts in fields) for j in range(n))
            pseudo = 0.0
            for weight, counts in fields:
                average = sum(length for _, length in counts) / n
                tf, length = counts[i][0].get(stem, 0), counts[i][1]
                pseudo += weight * tf / (1 - params.b + params.b * length / average)
            if df and pseudo:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                total += idf * pseudo * (params.k1 + 1) / (params.k1 + pseudo)
        expected[doc.slug] = total
    assert {r.doc_slug for r in results} == {slug for slug, score in expected.items() if score > 0}
    for result in results:
        assert result.score == pytest.approx(expected[result.doc_slug], abs=1e-5)  # float32 counts, 6-place rounding
        explained = next(line for line in result.match_explain if line.startswith("ranking score: bm25"))
        assert explained.endswith(f"= {expected[result.doc_slug]:.3f}")
    assert [r.doc_slug for r in results] == sorted(expected, key=lambda s: -expected[s])[: len(results)]


def test_scorer_names_and_unknown_scorer_lists_the_valid_ones() -> None:
    assert lexical_scorer(" BM25 ") is LexicalScorer.bm25
    with pytest.raises(ValueError, match="unknown lexical scorer 'tfidf'; valid: seed, bm25"):
        lexical_scorer("tfidf")


def test_seed_guards_are_the_same_whichever_formula_ranks() -> None:
    """The decision thresholds are in seed points: BM25F changes the order and
    `score`, never a unit's raw points, matched terms or title/keyword hit."""
    index = build_document_index(DOCS, LEXICON)
    tokens = ["workspace", "notes"]
    seed = {e.doc_slug: e for e in index.search(tokens, lexical=LexicalFlags(scorer="seed"))}
    bm25 = {e.doc_slug: e for e in index.search(tokens, lexical=LexicalFlags(scorer="bm25"))}
    assert seed.keys() == bm25.keys() and len(seed) == 3
    for slug, by_seed in seed.items():
        by_bm25 = bm25[slug]
        guards = ("raw_score", "matched_terms", "title_or_keyword_hit", "exact_title_phrase", "snippet")
        assert {g: getattr(by_bm25, g) for g in guards} == {g: getattr(by_seed, g) for g in guards}
        assert by_seed.seed_score is None and by_bm25.seed_score == by_seed.score


@pytest.mark.parametrize("scorer", ["seed", "bm25"])
def test_unexplained_search_has_the_same_numbers_and_explains_on_demand(scorer: str) -> None:
    """Phase 3 ranks and decides on numbers and guards; the text of a shown candidate is
    exactly what `search` builds."""
    index = build_document_index(DOCS, LEXICON)
    tokens, flags = ["workspace", "notes", "calendar"], LexicalFlags(scorer=scorer)
    full = index.search(tokens, lexical=flags, notes=("typo: note",))
    hits = index.search_unexplained(tokens, lexical=flags, notes=("typo: note",))
    assert [msgspec.structs.replace(e, snippet="", match_explain=()) for e in full] == hits.results
    assert all(e.snippet == "" and e.match_explain == () for e in hits.results)
    assert [hits.explained(e) for e in hits.results] == full
    # A decision's own lines stay last; evidence from another search is left as it is.
    decided = msgspec.structs.replace(hits.results[0], match_explain=("calibrated p",))
    assert hits.explained(decided).match_explain == (*full[0].match_explain, "calibrated p")
    other = index.search(["rename"], lexical=flags)[0]
    assert hits.explained(other) == other
    assert hits.explained(msgspec.structs.replace(other, snippet="")) == msgspec.structs.replace(other, snippet="")


def test_a_synonym_makes_the_query_the_title_of_a_page_named_otherwise() -> None:
    # The seed corpus's `dashboard: home`: the word stands for Home and for Dashboard.
    docs = [
        _doc("concepts/home", "Home", ("start screen",), "Home is the first screen after sign-in."),
        _doc("concepts/dashboard", "Dashboard", ("widget grid",), "A dashboard is a grid of widgets."),
        _doc("concepts/workspace", "Workspace", ("canvas",), "Your home for notes."),
    ]
    lexicon = build_lexicon(
        titles=[d.title for d in docs], keywords=[k for d in docs for k in d.keywords],
        texts=[d.content for d in docs], synonyms=Synonyms(words={"dashboard": "home"}),
    )
    results = build_document_index(docs, lexicon).search(["home"])
    named = {r.doc_slug: r.query_is_title for r in results}
    assert named == {"concepts/home": True, "concepts/dashboard": True, "concepts/workspace": False}
    # Without the synonym only Home carries the name.
    plain = build_lexicon(
        titles=[d.title for d in docs], keywords=[k for d in docs for k in d.keywords],
        texts=[d.content for d in docs], synonyms=Synonyms(),
    )
    assert [r.doc_slug for r in build_document_index(docs, plain).search(["home"]) if r.query_is_title] == [
        "concepts/home"
    ]


def test_a_link_address_is_no_word_of_the_page_that_links() -> None:
    # An FAQ that links to the quickstart's section: its address names the other page's words.
    docs = [
        _doc("user/quickstart", "Quickstart", (), "## Custom Headers\n\nPass a dict to `headers=`."),
        _doc("community/faq", "FAQ", (), "See [the quickstart](../user/quickstart.rst#custom-headers \"Quickstart\")."),
    ]
    lexicon = build_lexicon(
        titles=[d.title for d in docs], keywords=[], texts=[d.content for d in docs], synonyms=Synonyms(),
    )
    units = {d.slug: prepare_document(d, lexicon).terms for d in docs}
    faq_words = set(units["community/faq"].content_tf)
    assert lexical_key("quickstart") in faq_words  # the link's text is the page's
    assert not {lexical_key("custom"), lexical_key("headers")} & faq_words
    results = build_document_index(docs, lexicon).search(["custom", "headers"])
    assert [r.doc_slug for r in results] == ["user/quickstart"]
