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
| answer                 | any but a partial match's  | answer (that page first)   |
| answer, partial match  | nearest page is another    | as "no match" below        |
| clarify: ambiguous     | any                        | clarify (same question, its pages first) |
| clarify: weak          | confident                  | answer                     |
| clarify: weak          | plausible (≥ floor)        | clarify (weak, fused top)  |
| clarify: weak/no match | below floor                | no match                   |
| no match               | confident                  | answer                     |
| no match               | plausible, not confident   | clarify (weak, fused top)  |

A partial match is a keyword answer on some of the query's words only: a word the corpus never
uses ("send this page as a fax"), or fewer than half of the words on the answered page. Its
words then say little, and when the nearest neighbour is another page the meaning points away
from it (both labelled sets, phase 3: the 16 answers this changed were all wrong;
docs/quality/notes/2026-11-25-partial-keyword-answers.md).

The results are always in the order of their scores (issue 18): a page the keyword rules put
first ("that page first", "its pages first") leads the fused ranking with its score raised to
the best score, and `match_explain` says so ("ranked first: …"). Before, it was moved to the
front with its own, lower score ("results come back unsorted (0.51, 0.99, 0.69)").
"""

from __future__ import annotations

from collections.abc import Sequence

from service.decide import clarify
from service.decide.seed_rules import (
    NAMES_PAGES,
    NAMING_REASONS,
    ONLY_PAGE,
    distinct_documents,
    lead_with,
    names_the_page,
    option_of,
)
from service.domain.signals import SemanticSignal
from service.domain.types import (
    Answer,
    Clarify,
    Decision,
    Evidence,
    NoMatch,
    NormalizedQuery,
)
from service.flags import SemanticFlags
from service.scoring.keyword_formulas import confidence

AMBIGUOUS_REASONS = frozenset({"small_gap", "low_confidence", NAMES_PAGES})
# A keyword answer on fewer than this share of the query's words is a partial match.
PARTIAL_MATCH_SHARE = 0.5


def partial_match(answered: Evidence, query: NormalizedQuery) -> bool:
    """The answer rests on some of the query's words only (see the module doc)."""
    matched = len(set(answered.matched_terms) & set(query.tokens))
    return bool(query.unknown_tokens) or matched < PARTIAL_MATCH_SHARE * len(set(query.tokens))


def _fused_confidence(results: Sequence[Evidence]) -> float:
    best = distinct_documents(results, limit=2)
    if not best:
        return 0.0
    return round(confidence(best[0].score, best[1].score if len(best) > 1 else 0.0), 4)


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
        case Answer(reason=reason) if reason.startswith(ONLY_PAGE):
            pass  # a weak match that the keyword rules answer for want of a second page: below
        case Answer(results=(answered, *_)) if (
            keyword_decision.reason not in NAMING_REASONS
            and signal.top_doc not in (None, answered.doc_slug) and partial_match(answered, query)
        ):
            pass  # the meaning points to another page: decided by the semantic leg, below
        case Answer():
            # The keyword rules are sure of this page (or the question names it): it leads the
            # fused ranking, so that the answer's page is the first of results in score order.
            answered = keyword_decision.results[0]
            own = next((e for e in fused if e.doc_slug == answered.doc_slug), None)
            why = names_the_page(answered) if keyword_decision.reason in NAMING_REASONS \
                else f"the keyword rules answer with this page ({keyword_decision.reason or 'confident'})"
            ranking = tuple(fused) if own is None else lead_with(fused, own, why)
            return Answer(results=ranking, confidence=conf, reason=keyword_decision.reason)
        case Clarify(reason=reason) if reason in AMBIGUOUS_REASONS:
            # The keyword rules' question stands ("home": Home's title, a Dashboard keyword; the
            # semantic leg cannot know that), and the evidence of the pages it names leads.
            ranking = tuple(fused)
            for option in reversed(keyword_decision.options):
                own = next((e for e in ranking if e.doc_slug == option.doc_slug), None)
                if own is not None:
                    # Said of the question only when true (issue 35): "how do I create a new note"
                    # does not ask about the Navigator, the clarification offers it.
                    why = names_the_page(own) if own.query_is_title \
                        else f"the clarification offers this page ({option.title})"
                    ranking = lead_with(ranking, own, why)
            return Clarify(
                results=ranking, confidence=conf, message=keyword_decision.message,
                options=keyword_decision.options, reason=reason,
            )
    if confident:
        return Answer(results=tuple(fused), confidence=conf, reason="semantic_confident")
    if not plausible:
        return NoMatch(message=clarify.NO_MATCH, reason="below_similarity_floor")
    top = fused[0]
    others = distinct_documents(fused, limit=3)
    if len(others) == 1:  # nothing to choose between (issue 40): the only page answers
        return Answer(results=tuple(fused), confidence=conf, reason=f"{ONLY_PAGE}semantic_weak")
    return Clarify(results=tuple(fused), confidence=conf, message=clarify.weak(top),
                   options=tuple(option_of(e) for e in others), reason="semantic_weak")
