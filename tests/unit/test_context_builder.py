"""Phase 4 context builder: budgets, drop order, per-document cap, clarify, sentences."""

from __future__ import annotations

import pytest

from service.context.builder import (
    MIN_ANSWER_WORDS,
    BudgetTooSmall,
    build_context,
    check_minimum,
    citation_label,
    minimum_tokens,
)
from service.context.sentences import cut_points, longest_fitting_prefix
from service.context.types import (
    CORE_CONCEPTS,
    DOCUMENTATION,
    RECENT_MESSAGES,
    SECTION_ORDER,
    UI_CONTEXT,
    WIDGET_STATES,
    Budget,
    ConceptText,
    ContextInputs,
    ContextResult,
    Message,
    Passage,
    UiState,
    WidgetState,
    budget_of,
    section_budget,
)
from service.flags import ContextFlags
from service.ingest.tokens import get_token_counter


def words(text: str) -> int:
    """A transparent stand-in tokenizer: one token per whitespace-separated word."""
    return len(text.split())


def sentences(tag: str, n: int, length: int = 5) -> str:
    """`n` sentences of `length` words each, all starting with `tag`."""
    return " ".join(f"{tag.capitalize()} {' '.join(['word'] * (length - 2))} end." for _ in range(n))


def passage(slug: str, index: int, score: float, text: str, header: str | None = None) -> Passage:
    title = slug.split("/")[1].replace("-", " ").title()
    return Passage(doc_slug=slug, title=title, text=text, score=score,
                   header_path=header or f"{title} > Part {index}", chunk_index=index)


CONCEPTS = (
    ConceptText(term="Home", text="Home is your main dashboard."),
    ConceptText(term="Workspace", text="A workspace is where your notes live."),
)
BIG = Budget(core_concepts=10_000, retrieved_docs=10_000, ui_context=10_000, widget_states=10_000,
             recent_messages=10_000, total=100_000, max_chunks_per_doc=10)


def build(inputs: ContextInputs, budget: Budget = BIG) -> ContextResult:
    return build_context(inputs, budget, words, "words")


def section(result: ContextResult, name: str) -> str:
    return next(s.text for s in result.sections if s.name == name)


def answer(*passages: Passage, **kw: object) -> ContextInputs:
    return ContextInputs(status="answer", message="", passages=passages, concepts=CONCEPTS, **kw)  # type: ignore[arg-type]


# --- budget arithmetic ----------------------------------------------------------------


def full_inputs() -> ContextInputs:
    return ContextInputs(
        status="answer", message="",
        passages=tuple(passage(f"widgets/doc-{i}", 0, 1.0 - i / 10, sentences(f"doc{i}", 30)) for i in range(4)),
        concepts=CONCEPTS * 5,
        ui=UiState(screen="workspace", entry="Thesis", workspace="Chapter 3", open_panels=("Navigator", "Chat")),
        widgets=tuple(WidgetState(widget=f"W{i}", summary=sentences("state", 4)) for i in range(6)),
        messages=tuple(Message(role="user" if i % 2 == 0 else "assistant", content=sentences(f"m{i}", 8))
                       for i in range(5)),
    )


@pytest.mark.parametrize(
    "budget",
    [
        Budget(),
        Budget(core_concepts=40, retrieved_docs=120, ui_context=10, widget_states=30, recent_messages=60, total=200),
        Budget(retrieved_docs=400, recent_messages=400, total=300),
        Budget(total=20),
        Budget(core_concepts=1, retrieved_docs=1, ui_context=1, widget_states=1, recent_messages=1, total=1),
    ],
)
@pytest.mark.parametrize("tokenizer", ["words", "wordpiece"])
def test_every_section_and_the_total_stay_within_budget(budget: Budget, tokenizer: str) -> None:
    count = words if tokenizer == "words" else get_token_counter().count
    result = build_context(full_inputs(), budget, count, tokenizer)
    assert [s.name for s in result.sections] == list(SECTION_ORDER)
    for s in result.sections:
        assert s.budget == section_budget(budget, s.name)
        assert s.tokens == count(s.text) <= s.budget, s.name
    assert result.total_tokens == count(result.text) <= budget.total
    assert result.text == "\n\n".join(s.text for s in result.sections if s.text)


def test_default_budget_keeps_everything_that_fits() -> None:
    inputs = answer(passage("widgets/quick-links", 0, 2.0, "Quick Links holds your shortcuts."),
                    messages=(Message(role="user", content="Where are my shortcuts?"),))
    result = build_context(inputs, Budget(), get_token_counter().count, "wordpiece")
    assert result.dropped == []
    assert [s.name for s in result.sections if s.text] == [CORE_CONCEPTS, DOCUMENTATION, RECENT_MESSAGES]
    assert "Quick Links holds your shortcuts." in section(result, DOCUMENTATION)


def test_budget_from_flags_and_per_request_overrides() -> None:
    flags = ContextFlags(retrieved_docs=900, total=2500)
    assert budget_of(flags) == Budget(retrieved_docs=900, total=2500)
    budget = budget_of(flags, {"retrieved_docs": 100, "total": None, "max_chunks_per_doc": 1})
    assert (budget.retrieved_docs, budget.total, budget.max_chunks_per_doc) == (100, 2500, 1)
    with pytest.raises(ValueError, match="positive"):
        budget_of(flags, {"total": 0})
    with pytest.raises(ValueError, match="unknown budget keys: nope"):
        budget_of(flags, {"nope": 3})


# --- drop order -----------------------------------------------------------------------


def test_section_budget_drops_the_lowest_scored_chunk_first() -> None:
    a = passage("widgets/a", 0, 0.9, sentences("alpha", 2))
    b = passage("widgets/b", 0, 0.2, sentences("beta", 2))
    c = passage("widgets/c", 0, 0.5, sentences("gamma", 2))
    size = words(section(build(answer(a, c)), DOCUMENTATION))
    result = build(answer(a, b, c), Budget(retrieved_docs=size, total=10_000))
    docs = next(s for s in result.sections if s.name == DOCUMENTATION)
    assert [c.doc_slug for c in docs.citations] == ["widgets/a", "widgets/c"]  # best first
    assert [(d.item, d.action, d.reason) for d in result.dropped] == [
        ("B > Part 0 (widgets/b#0)", "dropped", "section_budget")
    ]


def test_total_budget_drops_chunks_then_oldest_messages() -> None:
    chunks = [passage(f"widgets/d{i}", 0, score, sentences(f"d{i}", 2)) for i, score in enumerate((0.9, 0.3, 0.6))]
    messages = tuple(Message(role="user", content=sentences(f"m{i}", 1)) for i in range(4))
    inputs = answer(*chunks, messages=messages)
    full = build(inputs)
    assert full.dropped == []
    order = []
    for total in range(full.total_tokens, 0, -1):
        result = build(inputs, Budget(core_concepts=10_000, retrieved_docs=10_000, recent_messages=10_000,
                                      total=total, max_chunks_per_doc=10))
        assert result.total_tokens <= total
        order += [d.item for d in result.dropped if d.item not in order]
    assert order[:5] == [
        "D1 > Part 0 (widgets/d1#0)",  # lowest score
        "D2 > Part 0 (widgets/d2#0)",
        "message 1 of 4 (user)",  # oldest message
        "message 2 of 4 (user)",
        "message 3 of 4 (user)",
    ]
    # The best chunk outlives every message but the newest.
    assert order.index("D0 > Part 0 (widgets/d0#0)") > order.index("message 3 of 4 (user)")


def test_section_budget_trims_oldest_messages_first() -> None:
    messages = tuple(Message(role="assistant" if i % 2 else "user", content=sentences(f"m{i}", 1)) for i in range(5))
    result = build(answer(messages=messages), Budget(recent_messages=2 + 2 * 7, total=10_000))
    text = section(result, RECENT_MESSAGES)
    assert "M0" not in text and "M1" not in text and "M2" not in text
    assert "M3" in text and "M4" in text
    assert [d.item for d in result.dropped] == ["message 1 of 5 (user)", "message 2 of 5 (assistant)",
                                                "message 3 of 5 (user)"]


# --- per-document cap -----------------------------------------------------------------


def test_at_most_max_chunks_per_document() -> None:
    same = [passage("widgets/quick-links", i, 1.0 - i / 10, sentences(f"q{i}", 1)) for i in range(4)]
    other = passage("widgets/recent", 0, 0.1, sentences("r", 1))
    result = build(answer(*same, other), Budget(max_chunks_per_doc=2))
    docs = next(s for s in result.sections if s.name == DOCUMENTATION)
    assert [(c.doc_slug, c.chunk_index) for c in docs.citations] == [
        ("widgets/quick-links", 0), ("widgets/quick-links", 1), ("widgets/recent", 0)
    ]
    capped = [d for d in result.dropped if d.reason == "per_document_cap"]
    assert [d.item for d in capped] == ["Quick Links > Part 2 (widgets/quick-links#2)",
                                        "Quick Links > Part 3 (widgets/quick-links#3)"]
    one = build(answer(*same), Budget(max_chunks_per_doc=1))
    assert len(next(s for s in one.sections if s.name == DOCUMENTATION).citations) == 1


def test_cap_keeps_the_best_chunks_of_a_document_whatever_the_input_order() -> None:
    low, high = passage("widgets/x", 0, 0.1, "Low one."), passage("widgets/x", 1, 0.9, "High one.")
    result = build(answer(low, high), Budget(max_chunks_per_doc=1))
    assert "High one." in result.text and "Low one." not in result.text


# --- clarify / no match ---------------------------------------------------------------


@pytest.mark.parametrize("status", ["clarify", "no_match", "disabled"])
def test_no_confident_answer_carries_the_clarification_and_no_documentation(status: str) -> None:
    guessed = passage("widgets/quick-links", 0, 0.4, "Guessed documentation text.")
    inputs = ContextInputs(
        status=status, message="Do you mean Quick Links (widgets) or Links Overview (widgets)?",  # type: ignore[arg-type]
        passages=(guessed,), options=("Quick Links (widgets)", "Links Overview (widgets)"), concepts=CONCEPTS,
    )
    result = build(inputs)
    docs = next(s for s in result.sections if s.name == DOCUMENTATION)
    assert docs.citations == []
    assert "Do you mean Quick Links (widgets) or Links Overview (widgets)?" in docs.text
    assert "Options: Quick Links (widgets); Links Overview (widgets)" in docs.text
    assert "Guessed documentation" not in result.text
    assert section(result, CORE_CONCEPTS).startswith("## Core concepts\n- Home: Home is")


# --- never mid-sentence ---------------------------------------------------------------


def test_a_chunk_over_budget_loses_whole_sentences_from_its_end() -> None:
    text = "First sentence is here. Second one, e.g. with an abbreviation, follows! Third? Fourth and last one."
    result = build(answer(passage("widgets/a", 0, 1.0, text)), Budget(retrieved_docs=3 + 6 + 11, total=10_000))
    docs = next(s for s in result.sections if s.name == DOCUMENTATION)
    body = docs.text.split("\n", 2)[2]
    assert body == "First sentence is here. Second one, e.g. with an abbreviation, follows!"
    assert docs.citations[0].trimmed
    assert result.dropped[0].action == "trimmed" and result.dropped[0].tokens == 5


def test_a_chunk_whose_first_sentence_does_not_fit_is_cut_inside_it_not_dropped() -> None:
    # Issue 35: dropping it handed the LLM less than the answer. 3 heading + 6 citation words
    # leave 11 of the 20 for the text: its first 11 words, the cut marked by an ellipsis.
    text = sentences("long", 1, length=50)
    result = build(answer(passage("widgets/a", 0, 1.0, text)), Budget(retrieved_docs=20, total=10_000))
    docs = next(s for s in result.sections if s.name == DOCUMENTATION)
    body = docs.text.split("\n", 2)[2]
    assert body == " ".join(text.split()[:11]) + "…"
    assert docs.tokens == 20 and docs.citations[0].trimmed
    assert [(d.action, d.reason) for d in result.dropped] == [("trimmed", "section_budget")]


def test_the_total_cuts_the_answering_passage_inside_its_first_sentence_last() -> None:
    text = "Open Trash at the bottom of the Navigator and click Restore on the workspace you deleted. Done."
    inputs = answer(passage("actions/workspaces", 7, 1.0, text, "Workspace Actions > Restoring"),
                    passage("concepts/glossary", 0, 0.4, "An unrelated glossary line."))
    result = build(inputs, Budget(core_concepts=10_000, retrieved_docs=10_000, total=17))
    docs = next(s for s in result.sections if s.name == DOCUMENTATION)
    assert [c.doc_slug for c in docs.citations] == ["actions/workspaces"]
    assert docs.text.endswith("\nOpen Trash at the bottom of…") and result.total_tokens == 17
    assert section(result, CORE_CONCEPTS) == ""


def test_a_sentence_that_fits_is_preferred_to_a_cut_inside_one() -> None:
    text = "Short first. " + sentences("long", 1, length=40)
    result = build(answer(passage("widgets/a", 0, 1.0, text)), Budget(retrieved_docs=20, total=10_000))
    assert section(result, DOCUMENTATION).endswith("\nShort first.")


def test_the_minimum_is_the_citation_and_the_first_words_of_the_answer() -> None:
    text = sentences("long", 1, length=50)
    inputs = answer(passage("widgets/a", 0, 1.0, text), passage("widgets/b", 0, 0.5, "Other."))
    minimum, what = minimum_tokens(inputs, words)
    assert minimum == 3 + 6 + MIN_ANSWER_WORDS and "A > Part 0" in what
    check_minimum(inputs, Budget(retrieved_docs=minimum, total=minimum), words, {})
    with pytest.raises(BudgetTooSmall, match=f"budget.total 10 is below {minimum} tokens") as raised:
        check_minimum(inputs, Budget(total=10), words, {"total": "budget.total"})
    assert (raised.value.name, raised.value.minimum) == ("budget.total", minimum)
    with pytest.raises(BudgetTooSmall, match="retrieved_docs 5 is below"):
        check_minimum(inputs, Budget(retrieved_docs=5), words, {})
    # At the minimum the builder keeps exactly those words: never less than the answer's start.
    kept = build(inputs, Budget(retrieved_docs=minimum, total=minimum))
    assert kept.text.endswith(" ".join(text.split()[:MIN_ANSWER_WORDS]) + "…")


def test_a_clarification_is_never_cut_its_whole_text_is_the_minimum() -> None:
    inputs = ContextInputs(status="clarify", message="Do you mean Home (concepts) or Dashboard (concepts)?",
                           passages=(), options=("Home (concepts)", "Dashboard (concepts)"), concepts=CONCEPTS)
    minimum, what = minimum_tokens(inputs, words)
    assert minimum == words(section(build(inputs), DOCUMENTATION)) and what == "the clarification"
    with pytest.raises(BudgetTooSmall):
        check_minimum(inputs, Budget(total=minimum - 1), words, {})


def test_real_tokenizer_trim_ends_on_a_sentence() -> None:
    text = " ".join(f"Sentence number {i} explains how Quick Links holds shortcuts." for i in range(200))
    count = get_token_counter().count
    result = build_context(answer(passage("widgets/quick-links", 0, 1.0, text)), Budget(), count, "wordpiece")
    body = section(result, DOCUMENTATION).split("\n", 2)[2]
    assert text.startswith(body) and body.endswith("shortcuts.") and len(body) < len(text)
    assert count(section(result, DOCUMENTATION)) <= 1500


def test_cut_points_respect_abbreviations_wrapped_lines_headings_and_fences() -> None:
    text = (
        "Label it Ch. 3 draft, e.g. Notes. Then save.\n"
        "A wrapped line that\ncontinues here.\n\n"
        "#### Heading\n\n"
        "```\ncode. Not. Cut.\n```\n"
        "- item one\n- item two"
    )
    ends = [text[:p].rsplit("\n", 1)[-1] for p in cut_points(text)]
    assert ends == [
        "Label it Ch. 3 draft, e.g. Notes.",  # not after "Ch." nor "e.g."
        "Label it Ch. 3 draft, e.g. Notes. Then save.",
        "continues here.",  # not at the end of the wrapped line
        "```",  # after the heading only together with the whole code block
        "- item one",
        "- item two",
    ]
    assert longest_fitting_prefix(text, lambda t: len(t) < 10) is None


def test_citation_label_is_title_and_header_path() -> None:
    assert citation_label(passage("widgets/quick-links", 2, 1, "x", "Quick Links > Adding a link")) == (
        "Quick Links > Adding a link"
    )
    assert citation_label(Passage(doc_slug="widgets/quick-links", title="Quick Links", text="x", score=1)) == (
        "Quick Links"
    )
    assert citation_label(passage("widgets/quick-links", 2, 1, "x", "Adding a link")) == (
        "Quick Links > Adding a link"
    )


# --- UI state sections ----------------------------------------------------------------


def test_ui_widgets_and_messages_are_rendered_in_order_and_cleaned() -> None:
    inputs = answer(
        ui=UiState(screen="workspace", entry="Thesis\x00", workspace="Chapter 3", open_panels=("Navigator", "Chat")),
        widgets=(WidgetState(widget="Recent", summary="3 notes\nopened today"),),
        messages=(Message(role="user", content="hi\x1b[31m"), Message(role="assistant", content="Hello.")),
    )
    result = build(inputs)
    assert section(result, UI_CONTEXT) == (
        "## UI context\nScreen: workspace\nEntry: Thesis\nWorkspace: Chapter 3\nOpen panels: Navigator, Chat"
    )
    assert section(result, WIDGET_STATES) == "## Widget states\n- Recent: 3 notes\nopened today"
    assert section(result, RECENT_MESSAGES) == "## Recent messages\nuser: hi\nassistant: Hello."  # colour code gone
