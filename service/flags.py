"""flags.yaml → frozen, validated `Flags`; environment and runtime overrides.

Precedence: file < environment < runtime overrides.  Every layer goes through
the same msgspec schema, so a bad value anywhere is rejected with the key's
path named (e.g. ``phases.keyword.min_gap``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import msgspec
import yaml

from service.domain.types import Thresholds

Phase = Annotated[int, msgspec.Meta(ge=1, le=3)]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
NonNegative = Annotated[float, msgspec.Meta(ge=0)]
Fraction = Annotated[float, msgspec.Meta(ge=0, le=1)]
Weight = Annotated[float, msgspec.Meta(ge=0, le=1)]

RepresentationKind = Literal["body", "section", "page"]
"""What a chunk vector embeds (service/ingest/representations.py)."""

MAX_TOP_K_LIMIT = 100
"""Hard ceiling of `retrieval.max_top_k` (a response of more pages is no navigation)."""
MAX_PAGE_BOOST = 10.0
"""Largest factor of `retrieval.page_boosts` (a page raised further would answer every query)."""


class _Flags(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base for flag groups: every key must be known.

    Checks that involve two keys live in each group's `__post_init__` (msgspec
    runs it on every decode, so flags.yaml, the environment and runtime
    overrides all pass through them); `_key` is the group's dotted prefix, so
    a message names both keys in full.
    """

    _key: ClassVar[str] = ""

    def _name(self, leaf: str) -> str:
        return f"`{self._key}.{leaf}`" if self._key else f"`{leaf}`"

    def _require(self, ok: bool, low: str, high: str, relation: str = "<=") -> None:
        """Raise unless `low` relation `high` holds; the message names both keys."""
        if not ok:
            raise ValueError(
                f"{self._name(low)} ({getattr(self, low)}) must be {relation} "
                f"{self._name(high)} ({getattr(self, high)})"
            )


class RetrievalFlags(_Flags, frozen=True):
    _key: ClassVar[str] = "retrieval"
    default_top_k: Annotated[int, msgspec.Meta(ge=1, le=MAX_TOP_K_LIMIT)] = 3
    max_top_k: Annotated[int, msgspec.Meta(ge=1, le=MAX_TOP_K_LIMIT)] = 10
    """The largest `top_k` a request may ask for (the API schema publishes it)."""
    max_chunks_per_doc: PositiveInt = 2
    candidate_pool: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 50
    release_notes_factor: Annotated[float, msgspec.Meta(gt=0, le=1)] = 0.2
    """A release-notes page's score (its headings are versions or dates) × this, unless the query
    asks about a release (scoring/page_priors.py); 1: off. Chosen leave-one-corpus-out
    (docs/quality/page-priors.md)."""
    migration_guide_factor: Annotated[float, msgspec.Meta(gt=0, le=1)] = 0.2
    """A migration guide's score (its title says it migrates or upgrades) × this, unless the query
    asks about a release or names the guide's subject, a word of its title few pages hold
    (scoring/page_priors.py); 1: off.
    Below 1 on the twelve labelled sets' dev splits (0.5 to 0.2 tie); 0.2 because a guide's
    headings naming the APIs it changes read as definitions (docs/quality/page-priors.md)."""
    page_boosts: dict[
        Annotated[str, msgspec.Meta(extra_json_schema={"minLength": 1})],
        Annotated[float, msgspec.Meta(extra_json_schema={"exclusiveMinimum": 0, "maximum": MAX_PAGE_BOOST})],
    ] = {}
    """The operator's factor per page: a glob on the slug (`api/*`, `about/release-notes`) → its
    scores × the factor, every phase (as DocSearch's `pageRank`); several matching globs multiply."""

    def __post_init__(self) -> None:
        for pattern, factor in self.page_boosts.items():
            # Checked here, not by the schema, so the message names the glob.
            if not pattern.strip() or pattern.startswith("/"):
                raise ValueError(f"`retrieval.page_boosts`: {pattern!r} is not a glob on a page slug "
                                 "(e.g. `api/*`; a slug never starts with `/`)")
            if not 0 < factor <= MAX_PAGE_BOOST:
                raise ValueError(f"`retrieval.page_boosts`: the factor of {pattern!r} ({factor}) must be "
                                 f"> 0 and <= {MAX_PAGE_BOOST}")
        self._require(self.default_top_k <= self.max_top_k, "default_top_k", "max_top_k")
        # Each leg hands fusion `candidate_pool` candidates: more results cannot exist.
        self._require(self.max_top_k <= self.candidate_pool, "max_top_k", "candidate_pool")


class TypoFlags(_Flags, frozen=True):
    _key: ClassVar[str] = "typo"
    min_token_length: Annotated[int, msgspec.Meta(ge=1, le=20)] = 4
    max_token_length: Annotated[int, msgspec.Meta(ge=4, le=100)] = 32
    similarity_cutoff: Annotated[float, msgspec.Meta(ge=50, le=100)] = 88.0
    max_edits: Annotated[int, msgspec.Meta(ge=0, le=2)] = 1

    def __post_init__(self) -> None:
        self._require(self.min_token_length <= self.max_token_length,
                      "min_token_length", "max_token_length")


class ThresholdFlags(_Flags, frozen=True):
    min_score: NonNegative = 3.0
    min_conf: Fraction = 0.3
    min_gap: NonNegative = 2.0
    min_matched_terms: Annotated[int, msgspec.Meta(ge=0, le=10)] = 2

    def to_thresholds(self) -> Thresholds:
        return Thresholds(
            min_score=self.min_score,
            min_conf=self.min_conf,
            min_gap=self.min_gap,
            min_matched_terms=self.min_matched_terms,
        )


class PhaseThresholds(_Flags, frozen=True):
    keyword: ThresholdFlags = ThresholdFlags()
    chunks: ThresholdFlags = ThresholdFlags()
    hybrid: ThresholdFlags = ThresholdFlags()

    def for_phase(self, phase: int) -> Thresholds:
        return (self.keyword, self.chunks, self.hybrid)[phase - 1].to_thresholds()


class SemanticFlags(_Flags, frozen=True):
    _key: ClassVar[str] = "semantic"
    similarity_floor: Fraction = 0.35
    answer_similarity: Fraction = 0.55
    margin: Fraction = 0.04
    ef_search: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 200
    """HNSW's candidate list where the index is used (a corpus above `exact_search_max_vectors`):
    on 7,555 real chunk vectors the top 50 kept 98.0 % of the exact top 50 at 64, 99.8 % at 200
    for 0.2 ms more (docs/configuration.md#not-flags)."""
    exact_search_max_vectors: Annotated[int, msgspec.Meta(ge=0)] = 5000
    """A corpus with at most this many vectors (chunks × representations) is searched exactly,
    not through HNSW: exact neighbours, the same on every replica, ~1 ms at 5,000 vectors."""
    # `contains body` is in the schema too, so PUT /admin/flags documents the rule.
    representations: Annotated[
        tuple[RepresentationKind, ...], msgspec.Meta(extra_json_schema={"contains": {"const": "body"}})
    ] = ("body",)
    """Vector kinds embedded and searched; a chunk scores by its best one (issue 19)."""

    def __post_init__(self) -> None:
        if "body" not in self.representations:
            raise ValueError("`semantic.representations` must include `body` (a model serves once every body is embedded)")
        # Below the floor a neighbour is no evidence, so an answer threshold under
        # it could never be met by evidence.
        self._require(self.similarity_floor <= self.answer_similarity,
                      "similarity_floor", "answer_similarity")
        self._require(self.margin < self.answer_similarity, "margin", "answer_similarity", "<")


Ratio = Annotated[float, msgspec.Meta(ge=0, le=2)]


class DecisionPoint(msgspec.Struct, frozen=True, kw_only=True):
    """One phase's operating point of the calibrated decision."""

    answer_p: float
    no_match_p: float
    ambiguity_ratio: float
    nothing_similar_below: float = 0.0
    """Phase 3 only (0 elsewhere): `DecisionFlags.nothing_similar_below`."""
    closest_matches_min_p: float = 0.0
    """`DecisionFlags.closest_matches_min_p`."""


class DecisionFlags(_Flags, frozen=True):
    """Which rule answers, asks or declines (docs/decisions/index.md); per phase 1, 2, 3."""

    _key: ClassVar[str] = "decision"
    policy: Literal["seed_rules", "calibrated"] = "calibrated"
    # The operating points: None = the ones the fit in force was chosen with (every fitted
    # file carries its own, `decide/data/*.json`); a value set here overrides the fit's.
    answer_p: tuple[Fraction, Fraction, Fraction] | None = None
    no_match_p: tuple[Fraction, Fraction, Fraction] | None = None
    ambiguity_ratio: tuple[Ratio, Ratio, Ratio] | None = None
    nothing_similar_below: Fraction = 0.15
    """Phase 3: when no chunk of the corpus has this cosine with the query, the corpus has nothing
    on it, whatever p says: a no match (0: off). No in-domain labelled case of twelve corpora has its
    best cosine under 0.167; format strings and pasted code do (0.09)."""
    closest_matches_min_p: Fraction = 0.05
    """A no match offers the ranking's closest pages only when p is at least this: below it they are
    noise ("what is the capital of France" → "the closest matches are Component v-model …"). Over
    the twelve labelled dev splits, no matches under p 0.05 were 94 out-of-domain questions and
    one in-domain one whose right page was among the closest (lab/experiments/closest_matches.py)."""
    corpus_probes: bool = False
    """Run the corpus's self-check at each corpus load: 100 questions made from its own sections
    (`decide.corpus_probes`) through phase 3, figures stored in PostgreSQL and shown in `/ready`.
    Off by default: it costs a few seconds of each load and the shift it feeds is chosen off."""
    corpus_shift_strength: Fraction = 0.0
    """How far the self-check moves phase 3's p towards the corpus's own hit rate (0: not at all).
    Chosen leave-one-corpus-out on the twelve labelled sets' dev splits: 0, every strength up to 1
    lost right outcomes (docs/quality/cross-corpus.md, seventh session)."""
    corpus_shift_reference: Annotated[float, msgspec.Meta(ge=-5, le=5)] = -0.555
    """The self-check's gap (logit(hit rate) − logit(mean p)) on the corpora the portable fit was
    made on, measured with that fit: a corpus with this gap is not moved. Remeasure it with the
    portable fit (lab/experiments/corpus_adaptation.py)."""

    def __post_init__(self) -> None:
        # Between the two is "clarify"; the other way round there is no such band.
        if self.no_match_p is not None and self.answer_p is not None and any(
            low > high for low, high in zip(self.no_match_p, self.answer_p, strict=True)
        ):
            raise ValueError(
                f"`decision.no_match_p` ({list(self.no_match_p)}) must be <= `decision.answer_p` "
                f"({list(self.answer_p)}) at every phase"
            )

    def at(self, phase: int) -> DecisionPoint:
        """One phase's point; every point must be set (`CalibrationModel.points` fills the fit's)."""
        if self.answer_p is None or self.no_match_p is None or self.ambiguity_ratio is None:
            raise ValueError("the operating points are the fit's: resolve them with CalibrationModel.points")
        i = phase - 1
        return DecisionPoint(
            answer_p=self.answer_p[i], no_match_p=self.no_match_p[i], ambiguity_ratio=self.ambiguity_ratio[i],
            nothing_similar_below=self.nothing_similar_below if phase == 3 else 0.0,
            closest_matches_min_p=self.closest_matches_min_p,
        )


class FusionWeights(_Flags, frozen=True):
    """(keyword, semantic) per query type; the seed plan's 0.3/0.7 is `default`.

    Identifiers and quoted strings must match literally (exact); questions in
    the user's own words lean on meaning (semantic: 0.3/0.7, measured on
    Cranfield against the issue's 0.15/0.85: nDCG@10 0.4160 vs 0.4068).
    """

    _key: ClassVar[str] = "fusion.weights"
    default: tuple[Weight, Weight] = (0.3, 0.7)
    exact: tuple[Weight, Weight] = (0.7, 0.3)
    semantic: tuple[Weight, Weight] = (0.3, 0.7)
    mixed: tuple[Weight, Weight] = (0.4, 0.6)

    def __post_init__(self) -> None:
        # A weighted sum of two min-max scores in [0, 1]: the weights share 1.
        for name in ("default", "exact", "semantic", "mixed"):
            keyword, semantic = getattr(self, name)
            if abs(keyword + semantic - 1) > 1e-6:
                raise ValueError(
                    f"{self._name(name)}: keyword + semantic weight must be 1, "
                    f"got {keyword} + {semantic}"
                )


class FusionFlags(_Flags, frozen=True):
    method: Literal["weighted", "rrf"] = "weighted"
    query_type_weights: bool = True
    """Pick weights by query type; off: `weights.default` for every query."""
    rrf_k: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 60
    weights: FusionWeights = FusionWeights()


class LexicalFlags(_Flags, frozen=True):
    """Ranking of the keyword leg (service/scoring/keyword.py, keyword_formulas.py)."""

    _key: ClassVar[str] = "lexical"
    scorer: Literal["seed", "bm25"] = "bm25"
    k1: Annotated[float, msgspec.Meta(ge=0, le=10)] = 1.2
    b: Fraction = 0.75
    title_weight: Annotated[float, msgspec.Meta(ge=0, le=20)] = 2.0
    keyword_weight: Annotated[float, msgspec.Meta(ge=0, le=20)] = 1.0
    content_weight: Annotated[float, msgspec.Meta(ge=0, le=20)] = 1.0
    identifier_weight: Annotated[float, msgspec.Meta(ge=0, le=20)] = 1.0
    """A name the query holds, shown by the unit (code, inline code), counts this many occurrences
    (issue 42; service/scoring/bm25f.py)."""
    definition_weight: Annotated[float, msgspec.Meta(ge=0, le=20)] = 1.0
    """Defining that name (heading, API entry, configuration row) counts this many occurrences of a
    term of its own, whose idf is that of the units defining it."""
    definition_words: Annotated[int, msgspec.Meta(ge=0, le=100)] = 1
    """Query words beside its names (their own parts and words of their kind, `hook`, `signal`,
    aside) up to which a definition counts whole;
    with more it counts (1 + this) / (1 + words): a query about a name wants where it is defined, a
    task that uses the name wants the page that does the task."""
    phrase_weight: Annotated[float, msgspec.Meta(ge=0, le=20)] = 1.0
    """A name written beside the query word next to it (`rewrite --exclude`) counts this many
    occurrences of a term of its own (0: off)."""

    def __post_init__(self) -> None:
        if self.title_weight + self.keyword_weight + self.content_weight <= 0:
            raise ValueError(
                f"{self._name('title_weight')}, {self._name('keyword_weight')} and "
                f"{self._name('content_weight')} are all 0: no field would count"
            )


class ChunkingFlags(_Flags, frozen=True):
    max_tokens: Annotated[int, msgspec.Meta(ge=32, le=4096)] = 450


class EmbeddingFlags(_Flags, frozen=True):
    # No HNSW build parameters here: m / ef_construction shape the index only
    # when it is built (migration 003); query-time recall is `semantic.ef_search`.
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 64
    query_cache_size: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] = 1024
    backend: Literal["torch", "onnx", "onnx-int8"] = "onnx"
    """Model runtime (service/embedding/); read at start-up."""
    batch_wait_ms: Annotated[float, msgspec.Meta(ge=0, le=1000)] = 2.0
    """Longest a query waits for others to share its forward pass."""
    batch_max: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 32
    max_queue_ms: Annotated[float, msgspec.Meta(ge=0, le=60_000)] = 250.0
    """A query whose embedding would wait longer goes to phase 2 at once."""
    threads: Annotated[int, msgspec.Meta(ge=0, le=256)] = 0
    """Model threads; 0 sizes them to the cores (service/embedding/base.py). Start-up only."""
    remote_batch_size: Annotated[int, msgspec.Meta(ge=1, le=4096)] = 64
    remote_concurrency: Annotated[int, msgspec.Meta(ge=1, le=64)] = 4
    remote_retries: Annotated[int, msgspec.Meta(ge=0, le=20)] = 4
    keep_vectors: bool = True
    """Keep the local model's document vectors on disk by exact input (service/embedding/vector_cache.py)."""


class TimeoutFlags(_Flags, frozen=True):
    # db_ms above phase_ms is allowed: the phase's timeout then bounds the call.
    db_ms: Annotated[int, msgspec.Meta(ge=1, le=60_000)] = 2000
    phase_ms: Annotated[int, msgspec.Meta(ge=1, le=60_000)] = 2500



class KillSwitchFlags(_Flags, frozen=True):
    _key: ClassVar[str] = "kill_switch"
    p95_ms: Annotated[float, msgspec.Meta(gt=0)] = 500.0
    window_s: Annotated[float, msgspec.Meta(gt=0)] = 300.0
    short_window_s: Annotated[float, msgspec.Meta(ge=0)] = 60.0
    """A p95 trip also needs the breach over the last `short_window_s` and slow
    samples at least that far apart (0: the long window alone decides)."""
    error_rate: Fraction = 0.05
    min_samples: PositiveInt = 20
    cooldown_s: Annotated[float, msgspec.Meta(ge=0)] = 600.0
    probe_share: Annotated[float, msgspec.Meta(gt=0, le=1)] = 0.1
    """0 would never probe, so a tripped switch could never close again."""
    error_action: Literal["drop_phase", "disable"] = "drop_phase"
    """Error-rate trip: take the failing phase out (phases below keep answering), or
    disable retrieval as the seed plan's table says."""

    def __post_init__(self) -> None:
        self._require(self.short_window_s <= self.window_s, "short_window_s", "window_s")


class ContextFlags(_Flags, frozen=True):
    _key: ClassVar[str] = "context"
    core_concepts: PositiveInt = 500
    retrieved_docs: PositiveInt = 1500
    ui_context: PositiveInt = 300
    widget_states: PositiveInt = 200
    recent_messages: PositiveInt = 500
    total: PositiveInt = 3000
    max_chunks_per_doc: PositiveInt = 2
    window_chars: Annotated[int, msgspec.Meta(ge=0, le=4000)] = 200
    full_page_confidence: Fraction = 0.5

    def __post_init__(self) -> None:
        # Every context carries the core concepts and, on an answer, the
        # documentation: the total must hold both at their own budgets.
        must_hold = self.core_concepts + self.retrieved_docs
        if self.total < must_hold:
            raise ValueError(
                f"{self._name('total')} ({self.total}) is smaller than "
                f"{self._name('core_concepts')} + {self._name('retrieved_docs')} ({must_hold})"
            )
        for section in ("ui_context", "widget_states", "recent_messages"):
            self._require(getattr(self, section) <= self.total, section, "total")


class SeedingFlags(_Flags, frozen=True):
    """How a documentation folder becomes a corpus (service/ingest/markdown.py, links.py)."""

    broken_links: Literal["warn", "fail"] = "warn"
    default_category: Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)] = "general"
    ignore: tuple[Annotated[str, msgspec.Meta(min_length=1)], ...] = ()
    dialect: Literal["auto", "markdown", "mkdocs", "vitepress", "docusaurus", "starlight", "mdx"] = "auto"
    """How pages are read (service/ingest/dialects.py DIALECTS); auto: detected from the tree."""


class QueryLogFlags(_Flags, frozen=True):
    """The query log in PostgreSQL (service/feedback/log_writer.py), written off the request path."""

    enabled: bool = True
    store_text: bool = True
    """False: the query text is never stored (tokens, decision and evidence still are)."""
    queue_size: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 10_000
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 500
    flush_interval_ms: Annotated[int, msgspec.Meta(ge=10, le=60_000)] = 1000
    retention_days: Annotated[int, msgspec.Meta(ge=1, le=3650)] = 30
    retention_rows: Annotated[int, msgspec.Meta(ge=100, le=100_000_000)] = 1_000_000


class FeedbackFlags(_Flags, frozen=True):
    rate_limit_per_minute: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 30
    """Per client address and minute (a runtime change applies to the next request)."""
    max_comment_chars: Annotated[int, msgspec.Meta(ge=0, le=2000)] = 1000


class ReviewFlags(_Flags, frozen=True):
    sample_size: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 20
    period: Literal["day", "week"] = "week"


class InsightsFlags(_Flags, frozen=True):
    """The seed plan's Phase Triggers; the plan names 70 % and leaves the rest to us."""

    keyword_match_rate_min: Fraction = 0.70
    typo_failure_rate_max: Fraction = 0.10
    reviewed_precision_min: Fraction = 0.80
    question_failure_rate_max: Fraction = 0.25
    question_match_rate_min: Fraction = 0.70
    min_samples: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 20


class ConversationFlags(_Flags, frozen=True):
    reply_ttl_s: Annotated[int, msgspec.Meta(ge=10, le=86_400)] = 1800
    """A clarification older than this is refused as `reply_to` (400 "expired")."""


class RelevanceFlags(_Flags, frozen=True):
    enabled: bool = False
    """Load the relevance model (service/relevance/) at start-up, its sha256 checked, and name
    it in /ready. Off until it is shown to pay (docs/quality/relevance-model.md)."""


class Flags(_Flags, frozen=True):
    enabled: bool = True
    phase: Phase = 3
    retrieval: RetrievalFlags = RetrievalFlags()
    typo: TypoFlags = TypoFlags()
    phases: PhaseThresholds = PhaseThresholds()
    semantic: SemanticFlags = SemanticFlags()
    decision: DecisionFlags = DecisionFlags()
    fusion: FusionFlags = FusionFlags()
    lexical: LexicalFlags = LexicalFlags()
    chunking: ChunkingFlags = ChunkingFlags()
    embedding: EmbeddingFlags = EmbeddingFlags()
    timeouts: TimeoutFlags = TimeoutFlags()
    kill_switch: KillSwitchFlags = KillSwitchFlags()
    context: ContextFlags = ContextFlags()
    seeding: SeedingFlags = SeedingFlags()
    query_log: QueryLogFlags = QueryLogFlags()
    feedback: FeedbackFlags = FeedbackFlags()
    review: ReviewFlags = ReviewFlags()
    insights: InsightsFlags = InsightsFlags()
    conversation: ConversationFlags = ConversationFlags()
    relevance: RelevanceFlags = RelevanceFlags()

    def __post_init__(self) -> None:
        # HNSW returns at most ef_search neighbours: a larger pool could not fill.
        if self.semantic.ef_search < self.retrieval.candidate_pool:
            raise ValueError(
                f"`semantic.ef_search` ({self.semantic.ef_search}) must be >= "
                f"`retrieval.candidate_pool` ({self.retrieval.candidate_pool})"
            )


class FlagError(ValueError):
    """A flag value or key was rejected; the message names the key."""


# Environment variables and the flag each one sets.
ENV_VARIABLES: dict[str, str] = {
    "DOC_RETRIEVAL_ENABLED": "enabled",
    "DOC_RETRIEVAL_PHASE": "phase",
}

_GROUP_SUFFIX = re.compile(r" - at `([a-z_.]+)`$")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _convert(data: Mapping[str, Any], origin: str) -> Flags:
    # strict: "2" is not 2, "yes" is not True (YAML and JSON carry real types).
    # JSON has one number type and JSON Schema counts 2.0 as an integer, so an
    # integral float is taken as an int (a float flag takes an int as it is).
    try:
        return msgspec.convert(_integral_floats_as_ints(data), Flags, strict=True)
    except msgspec.ValidationError as exc:
        # msgspec names the path as `$.phases.keyword.min_gap`; show it as a dotted key.
        message = str(exc).replace("`$.", "`").replace(" - at `$`", "")
        # A two-key check names its keys in full already; drop msgspec's group path.
        message = _GROUP_SUFFIX.sub(lambda m: "" if f"`{m[1]}." in message else m[0], message)
        raise FlagError(f"{origin}: {message}") from exc


def _integral_floats_as_ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _integral_floats_as_ints(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_integral_floats_as_ints(v) for v in value]
    return value


class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load that refuses a key written twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise FlagError(
                    f"key `{key}` is written twice (lines {first_line[key]} and {line})"
                )
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def load_flags_file(path: Path) -> Flags:
    """Read and validate flags.yaml (a missing file means all defaults)."""
    if not path.exists():
        return Flags()
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader) or {}
    except FlagError as exc:
        raise FlagError(f"{path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise FlagError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise FlagError(f"{path}: the top level must be a mapping of flag names")
    return _convert(data, str(path))


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """Flag values set through environment variables, as dotted-key overrides."""
    found: dict[str, Any] = {}
    for variable, key in ENV_VARIABLES.items():
        if variable not in environ:
            continue
        raw = environ[variable].strip().lower()
        if key == "enabled":
            if raw not in _TRUE | _FALSE:
                raise FlagError(f"{variable}: expected true/false, got {environ[variable]!r}")
            found[key] = raw in _TRUE
        else:
            try:
                found[key] = int(raw)
            except ValueError as exc:
                raise FlagError(f"{variable}: expected 1, 2 or 3, got {environ[variable]!r}") from exc
    return found


def flag_keys(flags: Flags | None = None) -> list[str]:
    """Every dotted leaf key, e.g. ``phases.keyword.min_gap``: the schema's, so a flag whose value
    is a mapping (``retrieval.page_boosts``) is one key, whatever it holds."""
    del flags  # every Flags has the same keys
    return [key for key, _ in _leaf_types()]


def get_value(flags: Flags, key: str) -> Any:
    value: Any = msgspec.to_builtins(flags)
    for part in key.split("."):
        value = value[part]
    return value


def apply_overrides(flags: Flags, overrides: Mapping[str, Any], origin: str = "override") -> Flags:
    """Return new Flags with dotted-key values replaced, validated by the schema."""
    data: dict[str, Any] = msgspec.to_builtins(flags)
    known = set(flag_keys(flags))
    for key, value in overrides.items():
        if key not in known:
            raise FlagError(f"{origin}: unknown flag `{key}`")
        target = data
        *parents, leaf = key.split(".")
        for part in parents:
            target = target[part]
        target[leaf] = value
    return _convert(data, origin)


def apply_env_overrides(flags: Flags, overrides: Mapping[str, Any]) -> Flags:
    """Apply `env_overrides` one by one, so an error names its environment variable."""
    variable_of = {key: variable for variable, key in ENV_VARIABLES.items()}
    for key, value in overrides.items():
        flags = apply_overrides(flags, {key: value}, variable_of.get(key, "environment"))
    return flags


def load_flags(path: Path, environ: Mapping[str, str] | None = None) -> Flags:
    """flags.yaml, then the environment: what the service starts with."""
    base = load_flags_file(path)
    return apply_env_overrides(base, env_overrides(environ if environ is not None else os.environ))


# -- the documentation's flags table (docs/configuration.md), generated from this schema --

FLAG_MEANINGS: dict[str, str] = {
    "enabled": "DOC_RETRIEVAL_ENABLED: master switch",
    "phase": "DOC_RETRIEVAL_PHASE: highest phase in use (1 keyword docs, 2 chunks, 3 hybrid)",
    "retrieval.default_top_k": "results when a request gives no top_k",
    "retrieval.max_top_k": "largest top_k a request may ask (published in the OpenAPI schema); <= candidate_pool",
    "retrieval.max_chunks_per_doc": "phase 2+ de-duplication (lifted for multi-intent queries)",
    "retrieval.candidate_pool": "candidates each leg hands to fusion",
    "retrieval.release_notes_factor": "a release-notes page's score × this (headings mostly versions or dates), "
    "unless the query asks about a release (a version number, changed, new in, deprecated, upgrade, …); 1: off",
    "retrieval.migration_guide_factor": "a migration guide's score × this (its title: migrating, migration, "
    "upgrading, …), unless the query asks about a release or names the guide's subject (a word of its "
    "title on fewer than a quarter of the pages); 1: off",
    "retrieval.page_boosts": 'glob on the page slug → its scores × this factor, every phase (as DocSearch\'s '
    'pageRank), 0 < factor ≤ 10, e.g. `{"api/*": 0.5, "guide/start": 2}`; matching globs multiply',
    "typo.min_token_length": "shorter tokens are never corrected",
    "typo.max_token_length": "longer tokens are never corrected: bounds the fuzzy work",
    "typo.similarity_cutoff": 'rapidfuzz ratio (0-100) a correction must reach ("task" → "ask" is 85.7)',
    "typo.max_edits": "non-words only: edits to a corpus word (a swapped letter is one); 2 only past 5 letters; 0 = off",
    "semantic.similarity_floor": "below this cosine the best neighbour is not evidence",
    "semantic.answer_similarity": "a purely semantic answer needs at least this cosine",
    "semantic.margin": "cosine gap top-vs-other-document below which it is ambiguous",
    "semantic.ef_search": "HNSW candidate list; >= retrieval.candidate_pool (the pool's session default)",
    "semantic.exact_search_max_vectors": "corpora with at most this many vectors (chunks × representations) are "
    "searched exactly, not through HNSW (same neighbours on every replica); 0 = always HNSW",
    "semantic.representations": "vectors per chunk: body | section | page "
    "([note](quality/notes/2026-11-24-paraphrases.md)); a change needs a reindex",
    "decision.policy": "calibrated (the default; a corpus with no fit of its own: the portable fit) | "
    "seed_rules (the seed plan's literal rules); "
    "[Decisions](decisions/index.md)",
    "decision.answer_p": "answer when p >= this; unset: the point the fit in force chose (every fitted file "
    "carries its own; [Operating points](#operating-points-which-wins))",
    "decision.no_match_p": "no match below this, clarify in between; <= answer_p",
    "decision.ambiguity_ratio": "ask between two pages when the second scores >= this share of the top (> 1: never)",
    "decision.nothing_similar_below": "phase 3, calibrated: no match when no chunk has this cosine with the query "
    "(0: off)",
    "decision.closest_matches_min_p": "calibrated: a no match offers its closest pages only when p >= this "
    "(0: always)",
    "decision.corpus_probes": "run the corpus self-check (100 questions from its own sections) at each corpus "
    "load; /ready shows it",
    "decision.corpus_shift_strength": "calibrated, phase 3: how far the self-check moves p (0: off, as chosen "
    "leave-one-corpus-out)",
    "decision.corpus_shift_reference": "the self-check gap that moves nothing: the portable fit's corpora's",
    "fusion.method": "weighted | rrf",
    "fusion.query_type_weights": "false: weights.default for every query",
    "fusion.rrf_k": "RRF's rank constant (method rrf)",
    "fusion.weights.default": "[keyword, semantic] when query_type_weights is false; each pair sums to 1",
    "fusion.weights.exact": "identifiers, quoted strings",
    "fusion.weights.semantic": "was 0.15/0.85: Cranfield nDCG@10 0.4068 → 0.4160 with 0.3/0.7",
    "fusion.weights.mixed": "neither clearly exact nor a question",
    "lexical.scorer": "seed | bm25 (BM25F; chosen on [Cranfield](quality/cranfield.md))",
    "lexical.k1": "term-frequency saturation",
    "lexical.b": "length normalisation (0 none .. 1 full)",
    "lexical.title_weight": "a title/heading word counts as this many occurrences",
    "lexical.keyword_weight": "a keyword counts as this many occurrences",
    "lexical.content_weight": "a body word counts as this many occurrences (not all three 0)",
    "lexical.identifier_weight": "a name in code the query holds (`after_this_request`, `ProxyFix`, `--print-width`: "
    "whole and by its parts) counts as this many occurrences where the unit shows it; 0: names are no field "
    "([Identifiers](operations/identifiers.md))",
    "lexical.definition_weight": "where the unit defines that name (a heading, an API entry, a configuration "
    "table's key): this many occurrences of a term of its own, with the idf of the units that define it",
    "lexical.definition_words": "query words beside its names (their own parts and words of their kind, `hook`, "
    "`signal`, aside) up to which a definition "
    "counts whole; with more words a definition counts (1 + this) / (1 + words) (`PageTitle` alone: whole; "
    "\"override PageTitle and read the page's frontmatter\": a share)",
    "lexical.phrase_weight": "a name written beside the query word next to it (`restic rewrite --exclude` → "
    "`rewrite --exclude`, a command and its option): this many occurrences of a term of its own, held by the "
    "units that write the two together; 0: off",
    "chunking.max_tokens": "a chunk's size in model tokens",
    "embedding.batch_size": "chunks per embedding batch",
    "embedding.query_cache_size": "query embeddings kept (LRU; 0 = off)",
    "embedding.backend": "torch | onnx | onnx-int8 ([Embedding backends](operations/embedding.md)); read at start-up",
    "embedding.batch_wait_ms": "a query waits at most this long for others to share its forward pass",
    "embedding.batch_max": "queries per forward pass",
    "embedding.max_queue_ms": "a query whose embedding would wait longer falls back to phase 2 at once",
    "embedding.threads": "model threads; 0: the cores this process may use, minus one kept for the event loop "
    "(keyword work); read at start-up",
    "embedding.remote_batch_size": "chunks per POST /v1/embeddings (EMBEDDING_REMOTE_URL)",
    "embedding.remote_concurrency": "requests in flight to the embedding server",
    "embedding.remote_retries": "retries per batch, exponential back-off",
    "embedding.keep_vectors": "keep the local model's document vectors on disk by exact input (beside the exported "
    "model): a new database embeds only text the model has not seen",
    "timeouts.db_ms": "a database call slower than this is an error",
    "timeouts.phase_ms": "a phase slower than this is passed over",
    "kill_switch.p95_ms": "a phase's p95 above this over a window drops a phase",
    "kill_switch.window_s": "rolling window length",
    "kill_switch.short_window_s": "a p95 trip needs the breach over this recent window too and slow samples "
    "this far apart: a burst of seconds does not trip (0: off)",
    "kill_switch.error_rate": "errors / attempts above this trips (see error_action)",
    "kill_switch.min_samples": "samples a window needs before it can trip",
    "kill_switch.cooldown_s": "after a trip, time before probing again",
    "kill_switch.probe_share": "share of requests probing while half-open (> 0)",
    "kill_switch.error_action": "error-rate trip: drop_phase takes the failing phase out (phases below answer); "
    "disable: retrieval off (the seed plan's rule)",
    "context.core_concepts": "token budget per section (always included)",
    "context.retrieved_docs": "the documentation passages",
    "context.ui_context": "the UI context section",
    "context.widget_states": "the widget states section",
    "context.recent_messages": "the recent messages section",
    "context.total": "the whole context; >= core_concepts + retrieved_docs",
    "context.max_chunks_per_doc": "passages of one page in the context",
    "context.window_chars": "characters of the neighbouring chunks (same page) before and after each chunk; 0: none",
    "context.full_page_confidence": "an answer at least this confident gets its whole page when it fits "
    "retrieved_docs; 1: only certain ones",
    "seeding.broken_links": "warn | fail: internal links that resolve to no page or heading",
    "seeding.default_category": "category of pages at the root of SEEDS_DIR (no folder, no front matter)",
    "seeding.dialect": "how pages are read: as that site generator renders them; auto: its config file, else the pages' syntax "
                       "([Dialects](operations/dialects.md))",
    "seeding.ignore": "extra globs (relative path or file name) that are not pages "
    "([Seeding](operations/seeding.md#keeping-a-file-out-of-the-corpus-seedingignore))",
    "query_log.enabled": "every /retrieve and /context call, written off the request path",
    "query_log.store_text": "false: keep tokens, decision and evidence but never the query text",
    "query_log.queue_size": "records waiting for the writer; beyond it they are dropped (counted)",
    "query_log.batch_size": "records written per batch",
    "query_log.flush_interval_ms": "a batch is written at least this often",
    "query_log.retention_days": "rows older than this are pruned (checked once a minute)",
    "query_log.retention_rows": "rows beyond the newest this many are pruned",
    "feedback.rate_limit_per_minute": "POST /feedback per client address (429 + Retry-After beyond)",
    "feedback.max_comment_chars": "longer comments are a 400 (at most 2000, the request schema's bound)",
    "review.sample_size": "queries in each period's review sample",
    "review.period": "day | week (UTC)",
    "insights.keyword_match_rate_min": '"keyword match rate < 70 %" → consider phase 2',
    "insights.typo_failure_rate_max": "share of queries with an unknown word that found nothing",
    "insights.reviewed_precision_min": '"manual review shows poor precision"',
    "insights.question_failure_rate_max": '"how do I…" questions answered with clarify / no match',
    "insights.question_match_rate_min": "keyword match rate on natural-language questions",
    "insights.min_samples": "fewer queries (or reviews) in the window: no verdict",
    "conversation.reply_ttl_s": 'a clarification older than this is refused as reply_to (400 "expired")',
    "relevance.enabled": "load the relevance model (a cross-encoder, service/relevance/model/; [Relevance model](quality/relevance-model.md)) and name it in /ready; nothing ranks or decides with it yet; read at start-up",
}
"""What each flag does, for the generated table (links are relative to docs/). The seed
rules' thresholds `phases.<keyword|chunks|hybrid>.*` share one meaning each (below)."""

_THRESHOLD_MEANINGS = {
    "min_score": "seed rules: the best page's raw seed-formula points (before length normalisation) must reach this",
    "min_conf": "seed rules: (top - second) / top of the ranking scores must reach this",
    "min_gap": "seed rules: the raw seed-point gap to the best other page must reach this",
    "min_matched_terms": "seed rules: query terms the best page must match",
}


def _meaning(key: str) -> str:
    if key.startswith("phases."):
        return _THRESHOLD_MEANINGS.get(key.rsplit(".", 1)[1], "")
    return FLAG_MEANINGS.get(key, "")


def _allowed(info: msgspec.inspect.Type) -> str:
    if isinstance(info, msgspec.inspect.Metadata):
        contains = (info.extra_json_schema or {}).get("contains", {}).get("const")
        return _allowed(info.type) + (f" holding {contains}" if contains is not None else "")
    if isinstance(info, msgspec.inspect.BoolType):
        return "true / false"
    if isinstance(info, msgspec.inspect.LiteralType):
        return " / ".join(str(v) for v in info.values)
    if isinstance(info, msgspec.inspect.TupleType):
        return "[" + ", ".join(_allowed(item) for item in info.item_types) + "]"
    if isinstance(info, msgspec.inspect.VarTupleType):
        return f"list of {_allowed(info.item_type)}"
    if isinstance(info, msgspec.inspect.DictType):
        return f"mapping of {_allowed(info.key_type)} → {_allowed(info.value_type)}"
    if isinstance(info, msgspec.inspect.StrType):
        return "string"
    if isinstance(info, msgspec.inspect.IntType | msgspec.inspect.FloatType):
        low = f"≥ {info.ge}" if info.ge is not None else f"> {info.gt}" if info.gt is not None else ""
        high = f"≤ {info.le}" if info.le is not None else f"< {info.lt}" if info.lt is not None else ""
        kind = "int" if isinstance(info, msgspec.inspect.IntType) else "number"
        return " ".join(part for part in (kind, low, high) if part)
    if isinstance(info, msgspec.inspect.UnionType):
        return " or ".join("null" if isinstance(t, msgspec.inspect.NoneType) else _allowed(t) for t in info.types)
    return type(info).__name__


def _leaf_types() -> Iterator[tuple[str, msgspec.inspect.Type]]:
    def walk(prefix: str, info: msgspec.inspect.Type) -> Iterator[tuple[str, msgspec.inspect.Type]]:
        if isinstance(info, msgspec.inspect.StructType):
            for field in info.fields:
                yield from walk(f"{prefix}{field.name}.", field.type)
        else:
            yield prefix[:-1], info

    yield from walk("", msgspec.inspect.type_info(Flags))


def flags_table() -> str:
    """Markdown table of every flag: its schema default, allowed values and meaning."""
    defaults = Flags()
    lines = ["| flag | default | allowed | meaning |", "|---|---|---|---|"]
    for key, info in _leaf_types():
        default = json.dumps(get_value(defaults, key), ensure_ascii=False)
        meaning = _meaning(key).replace("|", "\\|")
        lines.append(f"| `{key}` | `{default}` | {_allowed(info)} | {meaning} |")
    return "\n".join(lines)


TABLE_START, TABLE_END = "<!-- flags-table:start -->", "<!-- flags-table:end -->"


def with_flags_table(page: str) -> str:
    """`page` with the text between its table markers replaced by today's table."""
    head, start, rest = page.partition(TABLE_START)
    _, end, tail = rest.partition(TABLE_END)
    if not (start and end):
        raise ValueError(f"the page has no {TABLE_START} … {TABLE_END} markers")
    return f"{head}{start}\n\n{flags_table()}\n\n{end}{tail}"


def leaf_json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema of each dotted flag key's value (for the API's PUT /admin/flags)."""
    (root,), components = msgspec.json.schema_components([Flags], ref_template="{name}")

    def walk(prefix: str, schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        if "$ref" in schema:
            schema = components[schema["$ref"]]
        if schema.get("type") == "object" and "properties" in schema:
            for name, sub in schema["properties"].items():
                yield from walk(f"{prefix}{name}.", sub)
        else:
            yield prefix[:-1], {k: v for k, v in schema.items() if k not in ("default", "title")}

    return dict(walk("", root))


if __name__ == "__main__":  # python -m service.flags [--write]: the docs' flags table
    page = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
    if sys.argv[1:] == ["--write"]:
        page.write_text(with_flags_table(page.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote the flags table into {page}")
    else:
        print(flags_table())
