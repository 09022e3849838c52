"""Phase 3 decisions: the keyword rules, calibrated by how close the neighbours are.

Semantic search always returns neighbours, even for "explain calendar"; the
nearest one is evidence only when it is close.  Measured on the seed corpus
with all-MiniLM-L6-v2 (chunks embedded with title and header path):
out-of-domain queries (calendar, billing, email, tasks, invoices, weather)
reach a top cosine of 0.13–0.32, in-domain questions 0.43–0.79.  Hence:

- below `semantic.similarity_floor` the neighbours say nothing;
- `semantic.answer_similarity` plus a `semantic.margin` over the best other
  page lets the semantic leg turn a weak keyword match into an answer.

(The values are flags: `flags.yaml` → `semantic`.)  Pure: it gets the fused
ranking, the keyword decision and the semantic signal, never the scorers.

| keyword decision       | semantic signal            | phase 3 decision           |
|------------------------|----------------------------|----------------------------|
| answer                 | any                        | answer (that page first)   |
| clarify: ambiguous     | any                        | clarify (same question)    |
| clarify: weak          | confident                  | answer                     |
| clarify: weak          | plausible (≥ floor)        | clarify (weak, fused top)  |
| clarify: weak/no match | below floor                | no match                   |
| no match               | confident                  | answer                     |
| no match               | plausible, not confident   | clarify (weak, fused top)  |
"""

from __future__ import annotations

from collections.abc import Sequence

from service.decide import clarify
from service.decide.policy import distinct_documents, option_of
from service.domain.signals import SemanticSignal
from service.domain.types import (
    Answer,
    Clarify,
    Decision,
    Evidence,
    NoMatch,
    NormalizedQuery,
    Option,
)
from service.flags import SemanticFlags
from service.scoring.keyword_formulas import confidence

AMBIGUOUS_REASONS = frozenset({"small_gap", "low_confidence"})


def _fused_confidence(results: Sequence[Evidence]) -> float:
    best = distinct_documents(results, limit=2)
    if not best:
        return 0.0
    return round(confidence(best[0].score, best[1].score if len(best) > 1 else 0.0), 4)


def _page_first(results: Sequence[Evidence], slug: str) -> tuple[Evidence, ...]:
    """The answered page's best evidence first, the rest in fused order."""
    first = next((e for e in results if e.doc_slug == slug), None)
    if first is None:
        return tuple(results)
    return (first, *[e for e in results if e is not first])


def decide_hybrid(
    fused: Sequence[Evidence],
    keyword_decision: Decision,
    signal: SemanticSignal,
    query: NormalizedQuery,
    thresholds: SemanticFlags,
) -> Decision:
    if not query.tokens or not fused:
        return NoMatch(message=clarify.NO_MATCH, reason="no_match")
    confident = signal.top_similarity >= thresholds.answer_similarity and signal.margin >= thresholds.margin
    plausible = signal.top_similarity >= thresholds.similarity_floor
    conf = _fused_confidence(fused)

    match keyword_decision:
        case Answer(reason="multi_intent"):
            return keyword_decision
        case Answer():
            top_slug = keyword_decision.results[0].doc_slug
            return Answer(results=_page_first(fused, top_slug), confidence=conf, reason=keyword_decision.reason)
        case Clarify(reason=reason) if reason in AMBIGUOUS_REASONS:
            # Evidence for both pages the question names comes first.
            ordered = tuple(fused)
            for option in reversed(keyword_decision.options):
                ordered = _page_first(ordered, option.doc_slug)
            return Clarify(
                results=ordered, confidence=conf, message=keyword_decision.message,
                options=keyword_decision.options, reason=reason,
            )
    if confident:
        return Answer(results=tuple(fused), confidence=conf, reason="semantic_confident")
    if not plausible:
        return NoMatch(message=clarify.NO_MATCH, reason="below_similarity_floor")
    top = fused[0]
    others = distinct_documents(fused, limit=3)
    options: tuple[Option, ...]
    if len(others) == 1:
        message, options = clarify.single_low_confidence(top), (option_of(top),)
    else:
        message, options = clarify.weak(top), tuple(option_of(e) for e in others)
    return Clarify(results=tuple(fused), confidence=conf, message=message, options=options, reason="semantic_weak")
