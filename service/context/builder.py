"""Phase 4: the token-budgeted context block the chat LLM consumes (pure, no I/O).

Sections, in this order: Core concepts (always) · Relevant documentation ·
UI context · Widget states · Recent messages. Each section's token count
includes its `## Name` heading and stays within its budget; the assembled text
(sections joined by blank lines) stays within the total.

Fitting, in order (every removal is reported in `dropped`):
1. Documentation: the answered page's passages first, then best-scored first;
   the answered page as a whole (`scope` "page") when the passage carries it
   and it fits the documentation budget on its own (its other chunks are then
   in it); else each chunk with its neighbours (`scope` "window") when it has
   them; more than `max_chunks_per_doc` passages of one document are dropped
   (`per_document_cap`).
2. Each section within its own budget (`section_budget`): documentation first
   narrows windows to their chunk (lowest-ranked first), then drops its
   lowest-ranked passage; recent messages drop their oldest message, the other
   sections their last item; a section's last remaining item is shortened
   (page → window → chunk, then by whole sentences and blocks from its end),
   or dropped when not even one sentence fits.
3. The total (`total_budget`): narrow the windows of all but the first
   passage, drop the lowest-ranked passages down to the first one, then the
   oldest messages, then widget states, UI context and core concepts from
   their ends, and only then shorten (or drop) the first passage: a tight
   budget keeps the answered page's material first. A clarification goes last.
On `clarify`, `no_match` and `disabled` the documentation section carries the
clarification text (and its options) and no documentation at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from service.context.sentences import longest_fitting_prefix, longest_fitting_words, word_prefix
from service.context.types import (
    CORE_CONCEPTS,
    DOCUMENTATION,
    RECENT_MESSAGES,
    UI_CONTEXT,
    WIDGET_STATES,
    Budget,
    Citation,
    ContextInputs,
    ContextResult,
    ContextSection,
    Dropped,
    DropReason,
    Passage,
    Scope,
)
from service.normalize.text import clean

Counter = Callable[[str], int]
SECTION_JOINER = "\n\n"


@dataclass(frozen=True)
class _Item:
    key: str
    """How `dropped` names the item."""
    body: str
    """The part that may be shortened by whole sentences."""
    head: str = ""
    """A first line that is never shortened (a passage's citation)."""
    passage: Passage | None = None
    trimmed: bool = False
    scope: Scope = "chunk"
    narrower: tuple[tuple[str, Scope], ...] = ()
    """Whole, smaller bodies to fall back on before cutting, largest first (window → chunk)."""

    def render(self) -> str:
        return f"{self.head}\n{self.body}" if self.head else self.body


@dataclass
class _Section:
    name: str
    budget: int
    items: list[_Item]
    joiner: str = "\n"
    oldest_first: bool = False
    """Over budget, drop the first item (oldest message) instead of the last."""

    def text(self, items: list[_Item] | None = None) -> str:
        chosen = self.items if items is None else items
        if not chosen:
            return ""
        return f"## {self.name}\n" + self.joiner.join(i.render() for i in chosen)


@dataclass
class _Fitter:
    count: Counter
    dropped: list[Dropped] = field(default_factory=list)

    def tokens(self, section: _Section) -> int:
        return self.count(section.text())

    def drop(self, section: _Section, index: int, reason: DropReason) -> None:
        item = section.items.pop(index)
        self.dropped.append(Dropped(
            section=section.name, item=item.key, action="dropped", reason=reason,
            tokens=self.count(item.render()),
        ))

    def narrow(self, section: _Section, index: int, reason: DropReason) -> None:
        """The item's next smaller whole body (page → window → chunk)."""
        item = section.items[index]
        (body, scope), *rest = item.narrower
        self._replace(section, index, replace(item, body=body, scope=scope, narrower=tuple(rest), trimmed=True),
                      reason)

    def _replace(self, section: _Section, index: int, smaller: _Item, reason: DropReason) -> None:
        item = section.items[index]
        section.items[index] = smaller
        self.dropped.append(Dropped(
            section=section.name, item=item.key, action="trimmed", reason=reason,
            tokens=self.count(item.render()) - self.count(smaller.render()),
        ))

    def shorten(self, section: _Section, index: int, limit: int, reason: DropReason) -> None:
        """Narrow the item, then cut it by whole sentences and blocks, until the
        section fits `limit`; else drop it."""
        def fits_with(candidate: _Item) -> bool:
            trial = [*section.items[:index], candidate, *section.items[index + 1 :]]
            return self.count(section.text(trial)) <= limit

        item = section.items[index]
        while item.narrower:
            body, scope = item.narrower[0]
            if fits_with(replace(item, body=body)) or len(item.narrower) == 1:
                # The first narrower body that fits, else the narrowest (the chunk) to cut.
                item = replace(item, body=body, scope=scope, narrower=item.narrower[1:], trimmed=True)
                break
            item = replace(item, narrower=item.narrower[1:])
        if fits_with(item):
            self._replace(section, index, item, reason)
            return
        shorter = longest_fitting_prefix(item.body, lambda body: fits_with(replace(item, body=body)))
        if not shorter and item.passage is not None:
            # Not one whole sentence fits: a passage is cut inside its first sentence (the
            # ellipsis says so) rather than dropped, so the LLM still gets the answer's start.
            shorter = longest_fitting_words(item.body, lambda body: fits_with(replace(item, body=body)))
        if not shorter or shorter == item.body.rstrip():
            self.drop(section, index, reason)
            return
        self._replace(section, index, replace(item, body=shorter, trimmed=True), reason)

    def narrow_windows(self, section: _Section, over: Callable[[], bool], first: int, reason: DropReason) -> None:
        """Windows back to their chunk, lowest-ranked first down to item `first`, while `over()`."""
        for index in range(len(section.items) - 1, first - 1, -1):
            if not over():
                return
            if section.items[index].scope == "window":
                self.narrow(section, index, reason)

    def fit_section(self, section: _Section) -> None:
        if section.name == DOCUMENTATION:
            self.narrow_windows(section, lambda: self.tokens(section) > section.budget, 0, "section_budget")
        while section.items and self.tokens(section) > section.budget:
            if len(section.items) > 1:
                self.drop(section, 0 if section.oldest_first else -1, "section_budget")
            else:
                self.shorten(section, 0, section.budget, "section_budget")


def citation_label(passage: Passage) -> str:
    """ "Title > header path" (the chunker's header path already starts with the title)."""
    path = passage.header_path
    if not path:
        return passage.title
    return path if path == passage.title or path.startswith(passage.title + " > ") else f"{passage.title} > {path}"


def _passage_key(passage: Passage) -> str:
    where = passage.doc_slug if passage.chunk_index is None else f"{passage.doc_slug}#{passage.chunk_index}"
    return f"{citation_label(passage)} ({where})"


def _documentation(inputs: ContextInputs, budget: Budget, fitter: _Fitter) -> _Section:
    section = _Section(DOCUMENTATION, budget.retrieved_docs, [], joiner=SECTION_JOINER)
    if inputs.status != "answer":
        text = (
            f"No documentation is included (retrieval status: {inputs.status}). "
            f"Ask the user this instead of guessing: {inputs.message}"
        )
        if inputs.options:
            text += "\nOptions: " + "; ".join(inputs.options)
        section.items.append(_Item(key="clarification", body=text))
        return section
    per_doc: dict[str, int] = {}
    seen: set[tuple[str, int | None]] = set()
    whole_pages: set[str] = set()
    ranked = sorted(
        enumerate(inputs.passages), key=lambda p: (p[1].doc_slug != inputs.answered, -p[1].score, p[0])
    )
    for _, passage in ranked:
        if (passage.doc_slug, passage.chunk_index) in seen or passage.doc_slug in whole_pages:
            continue  # a repeat, or a chunk of a page that is already there whole
        seen.add((passage.doc_slug, passage.chunk_index))
        item = _passage_item(passage)
        if passage.page_text and per_doc.get(passage.doc_slug, 0) == 0:
            page = replace(item, body=passage.page_text.strip(), scope="page",
                           narrower=((item.body, item.scope), *item.narrower))
            if fitter.count(_Section(DOCUMENTATION, 0, [page]).text()) <= budget.retrieved_docs:
                item = page
                whole_pages.add(passage.doc_slug)
        per_doc[passage.doc_slug] = per_doc.get(passage.doc_slug, 0) + 1
        if per_doc[passage.doc_slug] > budget.max_chunks_per_doc:
            fitter.dropped.append(Dropped(
                section=DOCUMENTATION, item=item.key, action="dropped", reason="per_document_cap",
                tokens=fitter.count(item.render()),
            ))
            continue
        section.items.append(item)
    return section


def _passage_item(passage: Passage) -> _Item:
    chunk = passage.text.strip()
    window = (passage.window_text or "").strip()
    return _Item(
        key=_passage_key(passage), passage=passage,
        head=f"Source: {citation_label(passage)} ({passage.doc_slug})",
        body=window or chunk, scope="window" if window else "chunk",
        narrower=((chunk, "chunk"),) if window else (),
    )


def _multiline(text: str) -> str:
    """User-supplied text: control characters out, line breaks kept, blank runs folded."""
    return "\n".join(line for line in (clean(part) for part in text.split("\n")) if line)


def _sections(inputs: ContextInputs, budget: Budget, fitter: _Fitter) -> list[_Section]:
    concepts = [_Item(key=c.term, body=f"- {c.term}: {c.text}") for c in inputs.concepts]
    ui: list[_Item] = []
    if inputs.ui is not None:
        state = inputs.ui
        fields = [("screen", "Screen", state.screen), ("entry", "Entry", state.entry),
                  ("workspace", "Workspace", state.workspace),
                  ("open_panels", "Open panels", ", ".join(clean(p) for p in state.open_panels))]
        ui = [_Item(key=key, body=f"{label}: {clean(value)}") for key, label, value in fields if value and clean(value)]
    widgets = [_Item(key=w.widget, body=f"- {clean(w.widget)}: {_multiline(w.summary)}") for w in inputs.widgets]
    total = len(inputs.messages)
    messages = [
        _Item(key=f"message {n} of {total} ({m.role})", body=f"{m.role}: {_multiline(m.content)}")
        for n, m in enumerate(inputs.messages, start=1)
    ]
    return [
        _Section(CORE_CONCEPTS, budget.core_concepts, concepts),
        _documentation(inputs, budget, fitter),
        _Section(UI_CONTEXT, budget.ui_context, ui),
        _Section(WIDGET_STATES, budget.widget_states, widgets),
        _Section(RECENT_MESSAGES, budget.recent_messages, messages, oldest_first=True),
    ]


def _assemble(sections: list[_Section]) -> str:
    return SECTION_JOINER.join(t for t in (s.text() for s in sections) if t)


def _total_steps(sections: list[_Section], answer: bool) -> Iterator[tuple[_Section, int]]:
    """(section, items to keep) in the order the total budget takes from them."""
    concepts, docs, ui, widgets, messages = sections
    if answer:
        yield docs, 1
    yield from ((messages, 0), (widgets, 0), (ui, 0), (concepts, 0), (docs, 0))


def _fit_total(sections: list[_Section], total: int, answer: bool, fitter: _Fitter) -> None:
    def overflow() -> int:
        return fitter.count(_assemble(sections)) - total

    if answer:
        fitter.narrow_windows(sections[1], lambda: overflow() > 0, 1, "total_budget")
    for section, keep in _total_steps(sections, answer):
        while len(section.items) > keep and (over := overflow()) > 0:
            if len(section.items) > 1:
                fitter.drop(section, 0 if section.oldest_first else -1, "total_budget")
            else:
                fitter.shorten(section, 0, max(fitter.tokens(section) - over, 0), "total_budget")


def _citations(section: _Section, count: Counter) -> list[Citation]:
    return [
        Citation(
            doc_slug=i.passage.doc_slug, title=i.passage.title, label=citation_label(i.passage),
            score=i.passage.score, tokens=count(i.render()), header_path=i.passage.header_path,
            chunk_index=i.passage.chunk_index, trimmed=i.trimmed, scope=i.scope,
        )
        for i in section.items
        if i.passage is not None
    ]


MIN_ANSWER_WORDS = 8
"""The fewest words of the answering passage worth handing the LLM (with its citation)."""


class BudgetTooSmall(ValueError):
    """A budget below `minimum`: the context could not carry the answer (or the clarification)."""

    def __init__(self, name: str, value: int, minimum: int, what: str) -> None:
        self.name, self.value, self.minimum = name, value, minimum
        super().__init__(f"{name} {value} is below {minimum} tokens, the least that carries {what};"
                         f" give at least {minimum}")


def minimum_tokens(inputs: ContextInputs, count: Counter) -> tuple[int, str]:
    """The fewest tokens the documentation section (and so the whole context) needs to carry the
    answer: its heading, the first passage's citation and first `MIN_ANSWER_WORDS` words; on a
    clarification or no match, its whole text. With what those tokens carry, for a message."""
    fitter = _Fitter(count)
    unlimited = Budget(core_concepts=1, retrieved_docs=10**9, ui_context=1, widget_states=1, recent_messages=1,
                       total=10**9, max_chunks_per_doc=10**3)
    section = _documentation(inputs, unlimited, fitter)
    if not section.items:
        return 0, "nothing"
    first = section.items[0]
    if first.passage is None:
        return fitter.tokens(section), "the clarification"
    narrowest = first.narrower[-1][0] if first.narrower else first.body
    section.items = [replace(first, body=word_prefix(narrowest, MIN_ANSWER_WORDS))]
    return fitter.tokens(section), f"the answer ({citation_label(first.passage)}: its citation and first words)"


def check_minimum(inputs: ContextInputs, budget: Budget, count: Counter, names: dict[str, str]) -> None:
    """BudgetTooSmall naming the first of `retrieved_docs` and `total` (as `names` calls them)
    that cannot carry the answer; the builder would otherwise hand the LLM less than it."""
    minimum, what = minimum_tokens(inputs, count)
    for key, value in (("retrieved_docs", budget.retrieved_docs), ("total", budget.total)):
        if value < minimum:
            raise BudgetTooSmall(names.get(key, key), value, minimum, what)


def build_context(inputs: ContextInputs, budget: Budget, count: Counter, tokenizer: str) -> ContextResult:
    """Assemble the budgeted context; `count` is the tokenizer named by `tokenizer`."""
    fitter = _Fitter(count)
    sections = _sections(inputs, budget, fitter)
    for section in sections:
        fitter.fit_section(section)
    _fit_total(sections, budget.total, inputs.status == "answer", fitter)
    text = _assemble(sections)
    return ContextResult(
        sections=[
            ContextSection(name=s.name, tokens=fitter.tokens(s), budget=s.budget, text=s.text(),
                    citations=_citations(s, count))
            for s in sections
        ],
        text=text,
        total_tokens=count(text),
        total_budget=budget.total,
        dropped=fitter.dropped,
        tokenizer=tokenizer,
    )
