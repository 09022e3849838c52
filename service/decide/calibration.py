"""The calibrated decision: P(top page is right) from the signals retrieval already has.

Pure (no I/O but `load_model`'s file read, no scikit-learn at run time): fitting lives in
`calibration_fit.py`; here a fitted logistic model (standardised features, one per phase)
is evaluated by hand, which is a dot product and a sigmoid.

The decision from p (`choose`, then `decide_calibrated`), on the one ranking the response
shows (sorted by score, best first, one entry per page for the options):

    p < no_match_p, unless the top page holds every query word (all
      corpus words) or, at phase 3, phase 2 has a plausible answer   → no match
    the second page is nearly as good (score ≥ ambiguity_ratio × top)
      and answers another need, and phase 2 would not answer this top page
                                                                     → clarify between the two
      (and the third best too when it is as level and answers a need of its own)
    p ≥ answer_p, or phase 2 would answer with the same top page     → answer; a same-need
                                                                       second page is named related
    otherwise                                                        → clarify ("Are you asking about X?")

Phase 3 also sees phase 2's p on its keyword leg (`KeywordVerdict`): it never says no match
where phase 2 has a plausible answer, and never asks where phase 2 would have answered with
the same top page.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from service.decide import clarify
from service.decide.seed_rules import (
    NAMES_PAGES,
    NAMING_REASONS,
    distinct_documents,
    explain_target,
    option_of,
    pages_by_score,
    ranked_by_score,
    title_key,
)
from service.domain.signals import DecisionSignals, SemanticSignal
from service.domain.types import (
    Answer,
    Clarify,
    Decision,
    Evidence,
    NoMatch,
    NormalizedQuery,
    Option,
)
from service.flags import DecisionFlags, DecisionPoint

MODEL_FORMAT = 2

# The model's inputs, in order.  Phases 1 and 2 see 0 for the semantic ones.
FEATURES: tuple[str, ...] = (
    "top_score",          # ranking score of the best page (BM25F / fused)
    "score_gap",          # top minus the best other page
    "score_ratio",        # best other page / top (0 when alone)
    "top_raw",            # seed points of the top page
    "raw_gap",            # seed points over the best other page
    "max_raw",            # best seed points anywhere in the ranking (the keyword leg's best)
    "matched_terms",      # distinct query terms the top page matched
    "matched_share",      # ... as a share of the query's content tokens
    "title_hit",          # the top page matched in its title or keywords
    "exact_title",        # the query is the top page's title
    "explain_title",      # "what is X" and X is the top page's title
    "tokens",             # content tokens in the query
    "unknown_share",      # share of query tokens the corpus never uses
    "corrections",        # typo corrections made
    "distinct_pages",     # log(1 + distinct candidate pages)
    "query_exact",        # query type one-hot (mixed is the baseline)
    "query_semantic",
    "top_similarity",     # best cosine of any chunk (phase 3)
    "similarity_margin",  # ... over the best other page
    "semantic_agrees",    # the nearest neighbour's page is the top page
    "top_page_similarity",  # best cosine of the top page's own chunks
    "page_similarity_gap",  # ... minus the second page's
    "keyword_agrees",     # the keyword leg's best page is the top page (phase 3)
)

CORPUS_SCALED = frozenset({"top_score", "score_gap", "distinct_pages"})
"""Features on the corpus's own scale (BM25F scores grow with its vocabulary, the number of
candidate pages with its size): a portable fit leaves them out, so that it carries to a
corpus it was not fitted on (leave-one-corpus-out, docs/quality/notes/2026-11-24-calibrated-decision.md)."""

CERTAIN_REASONS = frozenset({"out_of_domain", *NAMING_REASONS, NAMES_PAGES})
"""Seed-rule decisions the calibrated policy keeps as they are: no threshold is involved, the
words decide ("send an email": a topic word the corpus never uses while only body text
matched; "what is home", "advanced queries": the query names a page by its title; "home":
the corpus's synonyms make it the name of two pages)."""

SEED_LEVEL_REASONS = frozenset({"small_gap", "low_confidence"})
"""The seed rules' "ask between the two best pages" (small gap in seed points, or low confidence)."""

Action = Literal["no_match", "ambiguous", "answer", "weak"]


class SemanticView(msgspec.Struct, frozen=True, kw_only=True):
    """What phase 3's semantic leg tells the decision: the signal and each page's best cosine."""

    signal: SemanticSignal
    pages: dict[str, float]


def features_of(
    query: NormalizedQuery,
    results: Sequence[Evidence],
    semantic: SemanticView | None = None,
    keyword_top: str | None = None,
) -> dict[str, float]:
    """Every feature in `FEATURES` from one ranking (sorted here by score)."""
    pages = pages_by_score(results)
    top = pages[0] if pages else None
    second = pages[1] if len(pages) > 1 else None
    tokens = max(len(query.tokens), 1)
    top_score = top.score if top else 0.0
    second_score = second.score if second else 0.0
    matched = len(top.matched_terms) if top else 0
    explained = explain_target(query, pages[:1])
    sim_top = semantic.pages.get(top.doc_slug, 0.0) if semantic and top else 0.0
    sim_second = semantic.pages.get(second.doc_slug, 0.0) if semantic and second else 0.0
    values = {
        "top_score": top_score,
        "score_gap": top_score - second_score,
        "score_ratio": second_score / top_score if top_score > 0 else 0.0,
        "top_raw": top.raw_score if top else 0.0,
        "raw_gap": (top.raw_score - (second.raw_score if second else 0.0)) if top else 0.0,
        "max_raw": max((e.raw_score for e in results), default=0.0),
        "matched_terms": float(matched),
        "matched_share": min(matched / tokens, 1.0),
        "title_hit": float(bool(top and top.title_or_keyword_hit)),
        "exact_title": float(bool(top and top.exact_title_phrase)),
        "explain_title": float(explained is not None),
        "tokens": float(len(query.tokens)),
        "unknown_share": len(query.unknown_tokens) / tokens,
        "corrections": float(len(query.corrections)),
        "distinct_pages": math.log1p(len(pages)),
        "query_exact": float(query.query_type == "exact"),
        "query_semantic": float(query.query_type == "semantic"),
        "top_similarity": semantic.signal.top_similarity if semantic else 0.0,
        "similarity_margin": semantic.signal.margin if semantic else 0.0,
        "semantic_agrees": float(bool(semantic and top and semantic.signal.top_doc == top.doc_slug)),
        "top_page_similarity": sim_top,
        "page_similarity_gap": sim_top - sim_second,
        "keyword_agrees": float(bool(keyword_top and top and keyword_top == top.doc_slug)),
    }
    return {name: float(values[name]) for name in FEATURES}


def decision_signals(
    query: NormalizedQuery,
    results: Sequence[Evidence],
    semantic: SemanticView | None = None,
    keyword_top: str | None = None,
) -> DecisionSignals:
    """The features, the ranking's pages and whether its two best pages share one need."""
    pages = distinct_documents(ranked_by_score(results), limit=10)
    return DecisionSignals(
        features=features_of(query, results, semantic, keyword_top),
        ranking=tuple(e.doc_slug for e in pages),
        second_same_need=len(pages) > 1 and same_need(pages[0], pages[1]),
        third_score_ratio=third_score_ratio(pages),
    )


# -- the fitted model -----------------------------------------------------------
class PhaseModel(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A logistic model on standardised features: p = σ(b + Σ wᵢ (xᵢ − μᵢ) / σᵢ)."""

    intercept: float
    coef: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    dev_cases: int = 0
    dev_brier: float | None = None


class CalibrationModel(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The fitted file (`decide/data/calibration.json`): versioned, tied to one corpus."""

    format: int
    version: str
    """Names this fit in /ready, e.g. `seed-3f2a9c1d-202611221811`."""
    corpus: str
    corpus_fingerprint: str
    """sha256 over the pages' slugs and content hashes the fit was made on (its version)."""
    pages_fingerprint: str
    """sha256 over the slugs alone: the service uses the model only on the same set of pages
    ("" for a portable fit)."""
    features: tuple[str, ...]
    phases: dict[str, PhaseModel]
    """Keyed by phase number as text ("1", "2", "3")."""
    answer_p: tuple[float, float, float]
    no_match_p: tuple[float, float, float]
    ambiguity_ratio: tuple[float, float, float]
    """Per phase 1-3, what the fit chose on dev: the points it decides with unless a `decision.*`
    flag overrides one."""
    library: str
    query_set: str
    fitted_at: str
    dev_summary: dict[str, dict[str, float | None]] = {}
    """Per phase, the chosen thresholds' coverage and wrong-answer rate on dev."""
    portable: bool = False
    """Fitted without `CORPUS_SCALED` on the dev splits of several corpora: used on a corpus
    that has no fit of its own."""

    def fits(self, served_pages: str) -> bool:
        """Whether this fit may decide on the served pages."""
        return self.portable or self.pages_fingerprint == served_pages

    def points(self, flags: DecisionFlags) -> DecisionFlags:
        """The operating points to decide with: the fit's own, each unless the operator set that
        flag (`decision.answer_p` / `no_match_p` / `ambiguity_ratio`: a flag wins)."""
        return msgspec.structs.replace(
            flags,
            answer_p=self.answer_p if flags.answer_p is None else flags.answer_p,
            no_match_p=self.no_match_p if flags.no_match_p is None else flags.no_match_p,
            ambiguity_ratio=self.ambiguity_ratio if flags.ambiguity_ratio is None else flags.ambiguity_ratio,
        )


class CalibrationError(ValueError):
    """The fitted file is missing, malformed or does not match this code's features."""


def load_model(path: Path) -> CalibrationModel:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CalibrationError(f"{path}: {exc}") from exc
    return parse_model(data, str(path))


def parse_model(data: bytes | str, path: str) -> CalibrationModel:
    """A fit from its JSON (a file, or a stored fit's row: `fit_store`); `path` names it in errors."""
    try:
        model = msgspec.json.decode(data, type=CalibrationModel)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CalibrationError(f"{path}: {exc}") from exc
    if model.format != MODEL_FORMAT:
        raise CalibrationError(f"{path}: format {model.format}, this service reads format {MODEL_FORMAT}; refit")
    if tuple(model.features) != FEATURES:
        raise CalibrationError(f"{path}: fitted on other features ({', '.join(model.features)}); refit")
    for phase in ("1", "2", "3"):
        pm = model.phases.get(phase)
        if pm is None:
            raise CalibrationError(f"{path}: no model for phase {phase}")
        if not len(pm.coef) == len(pm.mean) == len(pm.scale) == len(FEATURES):
            raise CalibrationError(f"{path}: phase {phase}: expected {len(FEATURES)} weights")
    return model


def corpus_fingerprint(pages: Mapping[str, str]) -> str:
    """sha256 over `slug → content_hash`, order-free: the corpus a fit belongs to."""
    digest = hashlib.sha256()
    for slug in sorted(pages):
        digest.update(f"{slug}|{pages[slug]}\n".encode())
    return digest.hexdigest()


def pages_fingerprint(slugs: Iterable[str]) -> str:
    """sha256 over the sorted page slugs: which pages a fit knows (content changes aside)."""
    return hashlib.sha256("\n".join(sorted(set(slugs))).encode()).hexdigest()


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def contributions(model: PhaseModel, features: Mapping[str, float]) -> dict[str, float]:
    """Each feature's share of the logit: wᵢ (xᵢ − μᵢ) / σᵢ."""
    return {
        name: w * (features[name] - mu) / (sd or 1.0)
        for name, w, mu, sd in zip(FEATURES, model.coef, model.mean, model.scale, strict=True)
    }


def probability(model: PhaseModel, features: Mapping[str, float]) -> float:
    return sigmoid(model.intercept + sum(contributions(model, features).values()))


def explain(model: PhaseModel, features: Mapping[str, float], p: float, top: int = 3) -> str:
    """`calibrated p(top page right) = 0.930: top_similarity 0.71 (+1.90), ...` for match_explain."""
    parts = sorted(contributions(model, features).items(), key=lambda kv: -abs(kv[1]))[:top]
    drivers = ", ".join(f"{name} {features[name]:.3g} ({c:+.2f})" for name, c in parts)
    return f"calibrated p(top page right) = {p:.3f}: {drivers}"


# -- the decision ---------------------------------------------------------------
class KeywordVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """Phase 2's calibrated view of phase 3's keyword leg, at phase 2's operating point."""

    p: float
    top_doc: str | None
    point: DecisionPoint

    @property
    def plausible(self) -> bool:
        return self.p >= self.point.no_match_p

    @property
    def answers(self) -> bool:
        return self.p >= self.point.answer_p


def section_of(evidence: Evidence) -> str:
    """The heading of the section the evidence comes from, as match keys ("" for a whole page)."""
    path = evidence.header_path or ""
    return title_key(path.split(">")[-1]) if path else ""


def same_need(a: Evidence, b: Evidence) -> bool:
    """Two pages answer the same need when their best sections carry the same heading
    ("Removing a widget" in both Widget Manager and Widget Actions)."""
    sa, sb = section_of(a), section_of(b)
    return bool(sa) and sa == sb


def words_found(features: Mapping[str, float]) -> bool:
    """Every content word of the query is a corpus word and the top page holds them all."""
    return features["tokens"] > 0 and features["unknown_share"] == 0 and features["matched_share"] >= 1


def choose(
    p: float,
    *,
    score_ratio: float,
    has_second: bool,
    second_same_need: bool,
    point: DecisionPoint,
    keyword: KeywordVerdict | None = None,
    top_doc: str | None = None,
    found: bool = False,
) -> Action:
    """The rule table in the module docstring, on plain numbers (the fit replays it).
    `found` (`words_found`): the documentation uses every word of the query, on one page, so
    a low p means "not sure which page", never "not covered": it asks instead of no match."""
    phase2_plausible = keyword is not None and keyword.plausible
    phase2_answers_same = keyword is not None and keyword.answers and keyword.top_doc == top_doc
    if p < point.no_match_p and not phase2_plausible and not found:
        return "no_match"
    close = has_second and score_ratio >= point.ambiguity_ratio
    if close and not second_same_need and not phase2_answers_same:
        return "ambiguous"
    if p >= point.answer_p or phase2_answers_same:
        return "answer"
    return "weak"


def multi_intent_pages(
    model: PhaseModel, point: DecisionPoint, pages: Sequence[str], parts: Sequence[DecisionSignals]
) -> tuple[str, ...] | None:
    """A multi-intent answer's pages, the sure ones first, when it stands; else None (the
    whole query is decided as one).  It stands when each page is
    - sure: the top page of a part searched alone, with p ≥ answer_p for that part, or
    - one of the two best pages of a part the seed rules find level between them ("open notes":
      Navigator or Note Actions, `SEED_LEVEL_REASONS`): the topic is clear, the page is not,
      and the reply asks which one to go deeper on anyway,
    and at least one page is sure (it leads the answer)."""
    sure = {part.ranking[0] for part in parts if part.ranking and probability(model, part.features) >= point.answer_p}
    level = {page for part in parts if part.keyword_reason in SEED_LEVEL_REASONS for page in part.ranking[:2]}
    if not pages or not sure.intersection(pages) or not all(page in sure or page in level for page in pages):
        return None
    return tuple(sorted(pages, key=lambda page: page not in sure))


def order_of(pages: Sequence[str]) -> Callable[[str], int]:
    """Sort key putting slugs in the order of `pages`, any other slug after them (a stable
    sort keeps those as they were): how a multi-intent answer's sure pages come first."""
    rank = {slug: i for i, slug in enumerate(pages)}
    return lambda slug: rank.get(slug, len(rank))


def _with_line(e: Evidence, line: str) -> Evidence:
    return msgspec.structs.replace(e, match_explain=(*e.match_explain, line))


def third_score_ratio(pages: Sequence[Evidence]) -> float:
    """The third best page's score over the best's, or 0 when there is none or it answers the
    need of one of the two best (it could not be a third choice of its own)."""
    if len(pages) < 3 or pages[0].score <= 0:
        return 0.0
    top, second, third = pages[:3]
    if same_need(third, top) or same_need(third, second):
        return 0.0
    return third.score / top.score


def third_joins_question(ratio: float, point: DecisionPoint) -> bool:
    """A question between two pages takes the third best in too when it is as level with the
    best as the question asks of the second (`ambiguity_ratio`; `ratio`: `third_score_ratio`)."""
    return ratio > 0 and ratio >= point.ambiguity_ratio


def decide_calibrated(
    results: Sequence[Evidence],
    query: NormalizedQuery,
    p: float,
    why: str,
    point: DecisionPoint,
    *,
    keyword: KeywordVerdict | None = None,
    found: bool = False,
) -> Decision:
    """Answer / clarify / no match from p, on `results` sorted by score (`found`: `words_found`)."""
    ranked = ranked_by_score(results)
    pages = distinct_documents(ranked, limit=3)
    conf = round(p, 4)
    if not query.tokens or not pages or pages[0].score <= 0:
        return NoMatch(message=clarify.NO_MATCH, reason="no_match", confidence=conf)
    top = pages[0]
    second = pages[1] if len(pages) > 1 else None
    ratio = second.score / top.score if second else 0.0
    related = second is not None and same_need(top, second)
    action = choose(
        p, score_ratio=ratio, has_second=second is not None, second_same_need=related,
        point=point, keyword=keyword, top_doc=top.doc_slug, found=found,
    )
    ranked[0] = _with_line(ranked[0], why)
    if action == "no_match":
        return NoMatch(message=clarify.NO_MATCH, reason="calibrated_no_match", confidence=conf)
    if action == "ambiguous" and second is not None:
        third = pages[2] if third_joins_question(third_score_ratio(pages), point) else None
        asked = (top, second) if third is None else (top, second, third)
        return Clarify(
            results=tuple(ranked), confidence=conf, message=clarify.ambiguous(top, second, third),
            options=tuple(option_of(e) for e in asked), reason="calibrated_ambiguous",
        )
    if action == "answer":
        if second is not None and related and ratio >= point.ambiguity_ratio:
            ranked[0] = _with_line(ranked[0], f"related: {second.title} ({second.header_path})")
        return Answer(results=tuple(ranked), confidence=conf, reason="calibrated")
    options: tuple[Option, ...]
    if second is None:
        message, options = clarify.single_low_confidence(top), (option_of(top),)
    else:
        message, options = clarify.weak(top), tuple(option_of(e) for e in pages)
    return Clarify(results=tuple(ranked), confidence=conf, message=message, options=options, reason="calibrated_weak")
