"""Pure domain types shared by every stage of the pipeline.

Every type is a frozen msgspec Struct: evidence flows one way through the
pipeline and a later stage makes new objects instead of editing old ones.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Source = Literal["keyword", "hybrid", "embedding", "cache"]
Intent = Literal["explain", "navigate", "lookup", "small_talk"]
QueryType = Literal["exact", "semantic", "mixed"]


class Base(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every wire and domain type."""


class Document(Base, frozen=True):
    """One documentation page as stored in `docs_knowledge`."""

    slug: str
    category: str
    title: str
    content: str
    keywords: tuple[str, ...]
    content_hash: str
    summary: str = ""
    version: int = 1
    stub: bool = False
    """Nothing to say on its own (only an include, a directive, links or properties):
    kept for links and /documents, never the answer alone (service/ingest/dialects.py)."""


class Chunk(Base, frozen=True):
    """One retrievable section of a document (`docs_knowledge_chunks`)."""

    doc_slug: str
    category: str
    title: str
    header_path: str
    chunk_index: int
    content: str
    keywords: tuple[str, ...]
    chunk_hash: str
    token_count: int
    anchor: str = ""
    """URL fragment of the chunk's heading (`pin-a-command`); "" before the first heading."""
    linked_names: tuple[str, ...] = ()
    """Names other sections link to this one by (`[store.$onAction](./actions.md#…)`): it
    explains them (service/ingest/linked_names.py)."""

    @property
    def chunk_id(self) -> str:
        return f"{self.doc_slug}#chunk-{self.chunk_index}"


class Correction(Base, frozen=True):
    """A typo correction made while normalising a query."""

    original: str
    corrected: str
    similarity: float


class NormalizedQuery(Base, frozen=True):
    """A query after cleaning, stopwords, synonyms, stemming and typo fixes."""

    raw: str
    """The query as received, control characters stripped and trimmed."""
    tokens: tuple[str, ...]
    """Unique content tokens in query order."""
    phrase: str
    """The tokens joined by spaces: what the exact-title-phrase rule compares."""
    corrections: tuple[Correction, ...] = ()
    unknown_tokens: tuple[str, ...] = ()
    """Tokens the corpus never uses, even after typo correction (out-of-domain words)."""
    intent: Intent = "lookup"
    subject: str = ""
    """For explain-type queries, the subject as the user wrote it (pre-synonym)."""
    parts: tuple[tuple[str, ...], ...] = ()
    """Token groups of a multi-intent query ("workspace and widgets")."""
    is_multi_intent: bool = False
    query_type: QueryType = "mixed"
    identifiers: tuple[str, ...] = ()
    """Names in code the query holds, as written (`after_this_request`, `ProxyFix`, `--print-width`):
    searched whole as well as by their parts, which are among `tokens` (issue 42)."""
    unknown_identifiers: tuple[str, ...] = ()
    """The names the corpus never mentions, whole or as one word: of `identifiers`, the strong
    ones (service/domain/identifiers.py), and any name the query writes as a call (`alert(1)`)."""
    name_phrases: tuple[str, ...] = ()
    """Each name with a query word beside it, as the query writes them, lower-cased
    (`rewrite --exclude`, `check --read-data`): a unit that writes them together scores a term
    of its own (service/scoring/bm25f.py)."""
    only_identifiers: bool = False
    """The query says nothing but its identifiers (stopwords aside): "`--keep-forever`",
    "what does editor.minimap do?"."""
    semantic_text: str = ""
    """What phase 3 embeds when it is not `raw`: `raw` less the words written in a script the
    documentation does not use ("ما هو workspace שלום" → "workspace"); empty: `raw`."""


class Evidence(Base, frozen=True):
    """One scored candidate: a whole document (phase 1) or a chunk (phase 2+)."""

    doc_slug: str
    title: str
    category: str
    snippet: str
    score: float
    content_hash: str
    matched_terms: tuple[str, ...]
    source: Source
    header_path: str | None = None
    match_explain: tuple[str, ...] = ()
    chunk_index: int | None = None
    chunk_hash: str | None = None
    raw_score: float = 0.0
    """Seed-formula points before length normalisation."""
    seed_score: float | None = None
    """The seed formula's normalised score when another formula (BM25) ranks:
    the decision's confidence stays on the scale its thresholds were set on."""
    title_or_keyword_hit: bool = False
    exact_title_phrase: bool = False
    query_is_keyword: bool = False
    """The whole query is one of the page's keywords ("home" on Dashboard)."""
    query_is_title: bool = False
    """The whole query is the page's title, both as the corpus's synonyms read them ("home" is
    Home's title, and Dashboard's through `dashboard: home`)."""
    anchor: str | None = None
    """The chunk's heading as a URL fragment (set by the pipeline from the corpus)."""


class Option(Base, frozen=True):
    """A candidate the UI can render as a button."""

    doc_slug: str
    title: str
    category: str


class Thresholds(Base, frozen=True):
    """Decision thresholds of one phase (values: the flags' `phases.<phase>`)."""

    min_score: float
    min_conf: float
    min_gap: float
    min_matched_terms: int


class Answer(Base, frozen=True, tag="answer"):
    results: tuple[Evidence, ...]
    confidence: float
    message: str = ""
    options: tuple[Option, ...] = ()
    reason: str = "confident"


class Clarify(Base, frozen=True, tag="clarify"):
    results: tuple[Evidence, ...]
    confidence: float
    message: str
    options: tuple[Option, ...]
    reason: str


class NoMatch(Base, frozen=True, tag="no_match"):
    message: str
    reason: str
    results: tuple[Evidence, ...] = ()
    confidence: float = 0.0
    options: tuple[Option, ...] = ()


Decision = Answer | Clarify | NoMatch
