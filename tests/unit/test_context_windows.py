"""Context around a hit: block-aware cuts from the parser, neighbour windows,
whole pages for confident answers, and the answered page kept first."""

from __future__ import annotations

from service.context.builder import build_context
from service.context.passages import demote_headings, full_page_of, passages_of, without_title
from service.context.sentences import cut_points, head, longest_fitting_prefix, tail
from service.context.types import (
    DOCUMENTATION,
    Budget,
    ConceptText,
    ContextInputs,
    ContextResult,
    Passage,
)
from service.domain.types import Chunk, Document, Evidence
from service.normalize.lexicon import Synonyms
from service.scoring.indexes import build_indexes

STEPS = (
    "To restore a note:\n\n"
    "1. Open the Trash: click **Trash** at the bottom of the Navigator.\n"
    "2. Find the note. The Trash lists deleted notes; use the search box to filter.\n"
    "3. Hover the note and click **Restore**.\n\n"
    "The note goes back to its workspace."
)


def ends(text: str) -> list[str]:
    """The last line of every allowed prefix."""
    return [text[:p].rsplit("\n", 1)[-1] for p in cut_points(text)]


# --- block-aware cuts ---------------------------------------------------------------------


def test_a_numbered_step_is_never_cut_from_its_text() -> None:
    assert ends(STEPS) == [
        "To restore a note:",
        "1. Open the Trash: click **Trash** at the bottom of the Navigator.",
        "2. Find the note. The Trash lists deleted notes; use the search box to filter.",
        "3. Hover the note and click **Restore**.",
        "The note goes back to its workspace.",
    ]
    cut = longest_fitting_prefix(STEPS, lambda t: "Hover" not in t or len(t) < len(STEPS) - 40)
    assert cut is not None and cut.endswith("use the search box to filter.")


def test_tables_code_blocks_and_nested_lists_are_cut_only_at_their_ends() -> None:
    text = (
        "Intro sentence one. Intro two.\n\n"
        "| Key | Action |\n|---|---|\n| g h | Home. Then more. |\n| g w | Workspaces |\n\n"
        "~~~\nstep. Not. Here.\n~~~\n\n"
        "- Parent item. Its second sentence.\n  - Child one.\n  - Child two.\n\n"
        "> Tip: a quote. With two sentences."
    )
    assert ends(text) == [
        "Intro sentence one.",
        "Intro sentence one. Intro two.",
        "| g w | Workspaces |",
        "~~~",
        "- Parent item. Its second sentence.",
        "  - Child one.",
        "  - Child two.",
        "> Tip: a quote. With two sentences.",
    ]


def test_head_and_tail_take_whole_pieces_within_the_limit() -> None:
    assert head(STEPS, 90) == "To restore a note:\n\n1. Open the Trash: click **Trash** at the bottom of the Navigator."
    assert head(STEPS, 10) == ""
    assert tail(STEPS, 80) == "3. Hover the note and click **Restore**.\n\nThe note goes back to its workspace."
    assert tail(STEPS, 20) == ""
    nested = "- Parent.\n  - Child one.\n  - Child two."
    assert tail(nested, 30) == "- Child one.\n- Child two."  # dedented to read as a list


def test_headings_demote_as_the_parser_sees_them() -> None:
    text = "# Title\n\nIntro.\n\nSetext\n------\n\n```\n## not a heading\n```\n\n- ## In a bullet"
    assert without_title(text).startswith("Intro.")
    assert demote_headings(without_title(text)) == (
        "Intro.\n\n#### Setext\n\n```\n## not a heading\n```\n\n- #### In a bullet"
    )


# --- windows and pages ------------------------------------------------------------------------

DOC = Document(slug="actions/notes", category="actions", title="Notes", content="# Notes\n\nA.\n\n## B\n\nB.",
               keywords=(), content_hash="h")
OTHER = Document(slug="actions/other", category="actions", title="Other", content="Other page.", keywords=(),
                 content_hash="o")


def chunk(slug: str, index: int, text: str, header: str = "Notes > Deleting") -> Chunk:
    return Chunk(doc_slug=slug, category="actions", title="Notes" if slug == DOC.slug else "Other",
                 header_path=header, chunk_index=index, content=text, keywords=(), chunk_hash=str(index),
                 token_count=1)


CHUNKS = [
    chunk(DOC.slug, 0, "Notes live in workspaces. Each note has a title.", "Notes"),
    chunk(DOC.slug, 1, "Deleted notes go to the Trash. Links to them show as broken. Undo with Ctrl+Z."),
    chunk(DOC.slug, 2, STEPS, "Notes > Restoring"),
    chunk(DOC.slug, 3, "Notes stay in the Trash for 30 days. Empty it to delete them for good.", "Notes > Restoring"),
    chunk(OTHER.slug, 0, "A different page entirely.", "Other"),
]
INDEXES = build_indexes([DOC, OTHER], CHUNKS, Synonyms())


def hit(slug: str, index: int, score: float = 1.0) -> Evidence:
    return Evidence(doc_slug=slug, title="Notes", category="actions", snippet="s", score=score, content_hash="h",
                    matched_terms=(), source="keyword", chunk_index=index, header_path="Notes > Restoring")


def test_a_window_adds_neighbours_of_the_same_page_within_window_chars() -> None:
    (p,) = passages_of([hit(DOC.slug, 2)], INDEXES, window_chars=38)
    assert p.text == STEPS and p.window_text is not None
    before, after = p.window_text.split(STEPS)
    # The closing sentence of chunk 1 (17 characters): the whole chunk is longer than 38.
    assert before == "#### Deleting\n\nUndo with Ctrl+Z.\n\n#### Restoring\n\n"
    assert after == "\n\nNotes stay in the Trash for 30 days."
    (wide,) = passages_of([hit(DOC.slug, 2)], INDEXES, window_chars=10_000)
    assert wide.window_text is not None
    assert "Notes live in workspaces." in wide.window_text  # two chunks back: still the same page
    assert "different page" not in wide.window_text  # the last chunk of a page ends its window
    (last,) = passages_of([hit(DOC.slug, 3)], INDEXES, window_chars=10_000)
    assert last.window_text is not None and last.window_text.endswith("delete them for good.")
    assert passages_of([hit(DOC.slug, 2)], INDEXES, window_chars=0)[0].window_text is None


def test_a_retrieved_neighbour_ends_the_window() -> None:
    first, second = passages_of([hit(DOC.slug, 2), hit(DOC.slug, 3)], INDEXES, window_chars=10_000)
    assert first.window_text is not None and "30 days" not in first.window_text
    assert second.window_text is None  # its only neighbour is retrieved itself


def test_full_page_only_for_a_confident_single_page_answer() -> None:
    results = [hit(DOC.slug, 2)]
    assert full_page_of("answer", 0.7, "confident", results, 0.5) == DOC.slug
    assert full_page_of("answer", 0.3, "confident", results, 0.5) is None
    assert full_page_of("answer", 1.0, "multi_intent", results, 0.5) is None
    assert full_page_of("clarify", 0.9, "small_gap", results, 0.5) is None
    (p,) = passages_of(results, INDEXES, full_page=DOC.slug)
    assert p.page_text == "A.\n\n#### B\n\nB."


def words(text: str) -> int:
    return len(text.split())


def docs_of(result: ContextResult) -> tuple[str, list[tuple[str, int | None, str]]]:
    section = next(s for s in result.sections if s.name == DOCUMENTATION)
    return section.text, [(c.doc_slug, c.chunk_index, c.scope) for c in section.citations]


def passage(index: int, score: float, *, window: str | None = None, page: str | None = None,
            slug: str = DOC.slug) -> Passage:
    return Passage(doc_slug=slug, title="Notes", text=f"Chunk {index} text.", score=score,
                   header_path="Notes", chunk_index=index, window_text=window, page_text=page)


PAGE = " ".join(f"Page sentence {i}." for i in range(30))  # 90 words


def test_the_whole_page_replaces_its_chunks_when_it_fits() -> None:
    inputs = ContextInputs(status="answer", message="", answered=DOC.slug, passages=(
        passage(0, 0.9, page=PAGE), passage(1, 0.8, page=PAGE), passage(0, 0.5, slug=OTHER.slug),
    ))
    text, cited = docs_of(build_context(inputs, Budget(retrieved_docs=200), words, "words"))
    assert cited == [(DOC.slug, 0, "page"), (OTHER.slug, 0, "chunk")]
    assert PAGE in text and "Chunk 1 text." not in text


def test_a_page_too_large_for_the_documentation_budget_falls_back_to_the_window() -> None:
    inputs = ContextInputs(status="answer", message="", answered=DOC.slug,
                           passages=(passage(0, 0.9, page=PAGE, window="Before. Chunk 0 text. After."),))
    text, cited = docs_of(build_context(inputs, Budget(retrieved_docs=60), words, "words"))
    assert cited == [(DOC.slug, 0, "window")] and "Before. Chunk 0 text. After." in text


def test_over_budget_windows_narrow_before_any_passage_is_dropped() -> None:
    wide = " ".join(["Neighbour words."] * 20)
    inputs = ContextInputs(status="answer", message="", passages=(
        passage(0, 0.9, window=f"{wide} Chunk 0 text."), passage(5, 0.5, window=f"Chunk 5 text. {wide}"),
    ))
    result = build_context(inputs, Budget(retrieved_docs=70), words, "words")
    _, cited = docs_of(result)
    assert cited == [(DOC.slug, 0, "window"), (DOC.slug, 5, "chunk")]
    assert [(d.action, d.reason) for d in result.dropped] == [("trimmed", "section_budget")]


CONCEPTS = tuple(ConceptText(term=f"Term{i}", text="A glossary line about something else.") for i in range(5))


def test_a_tight_total_keeps_the_answered_page_before_the_glossary_and_other_pages() -> None:
    inputs = ContextInputs(status="answer", message="", answered=DOC.slug, concepts=CONCEPTS, passages=(
        passage(0, 0.4, window="Before. Chunk 0 text. After."),  # the answer, scored below another page
        passage(0, 0.9, slug=OTHER.slug),
    ))
    result = build_context(inputs, Budget(total=14), words, "words")
    text, cited = docs_of(result)
    assert cited == [(DOC.slug, 0, "window")]
    assert result.text == text and result.total_tokens <= 14  # the glossary went, the answer stayed
    tighter = build_context(inputs, Budget(total=10), words, "words")
    assert docs_of(tighter)[1] == [(DOC.slug, 0, "chunk")]  # then the window narrows to the chunk


def test_a_window_stays_contiguous_after_a_partial_neighbour() -> None:
    # 45 characters: chunk 1's last sentence (17) fits, its whole text does not; chunk 0 is never reached.
    (p,) = passages_of([hit(DOC.slug, 2)], INDEXES, window_chars=45)
    assert p.window_text is not None
    assert "Undo with Ctrl+Z." in p.window_text and "Each note has a title." not in p.window_text
