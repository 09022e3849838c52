"""Evidence + thresholds → Answer | Clarify | NoMatch (pure; no I/O).

The rules run in the seed plan's order:

1. top score 0 (or nothing found)                  → no match
   (also: a query word unknown to the corpus while only body text matched)
2. only one result                                 → second score is 0
3. matched terms < MIN_MATCHED_TERMS               → weak: clarify
4. no title/keyword hit and no exact title phrase  → weak: clarify
5. top raw score < MIN_SCORE                       → weak: clarify
   (a weak match on the only page answers with it: a clarification offers a real
   choice, issue 40; the seed plan asked "I think you mean X. Is that right?")
6. raw gap to the best *other document* < MIN_GAP  → ambiguous: clarify
7. confidence < MIN_CONF                           → ambiguous: clarify
8. otherwise                                       → answer

MIN_SCORE and MIN_GAP are in seed points (raw, before length normalisation):
after dividing by √(content tokens) a 500-token page scores below 1 for any
one-word query, so a threshold of 3 on that scale could never be met.  The
confidence uses the ranking (normalised) scores, as the seed's formula does.

An explain-type question whose subject is literally a page title ("what is
home") answers with that page instead of asking "Home or Dashboard?": the
phrasing already says which meaning is wanted. So does a query that is one
page's whole title ("advanced queries", `named_page`), unless another page lists
it as a keyword ("home" on Dashboard: the seed plan's question stays). A query the
corpus's own synonyms make the title of two differently titled pages asks between
them (`synonym_named_pages`: "home" is Home's title, and Dashboard's through
`dashboard: home`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from service.decide import clarify
from service.domain.types import (
    Answer,
    Clarify,
    Decision,
    Evidence,
    NoMatch,
    NormalizedQuery,
    Option,
    Thresholds,
)
from service.normalize.text import lowercase_words, match_key, words
from service.scoring.keyword_formulas import confidence, matched_term_count

# How deep into each part's ranking multi-intent looks for a strong candidate.
MULTI_INTENT_DEPTH = 5


ONLY_PAGE = "only_page_"
"""Prefixes the weak reason of an answer given because its page was the only one (phase 3
decides such a query by its semantic leg, as it did the question it replaces)."""


def option_of(evidence: Evidence) -> Option:
    return Option(doc_slug=evidence.doc_slug, title=evidence.title, category=evidence.category)


def distinct_documents(results: Sequence[Evidence], limit: int) -> list[Evidence]:
    """The best evidence of each document, in rank order."""
    seen: set[str] = set()
    best: list[Evidence] = []
    for evidence in results:
        if evidence.doc_slug not in seen:
            seen.add(evidence.doc_slug)
            best.append(evidence)
            if len(best) == limit:
                break
    return best


def ranked_by_score(results: Sequence[Evidence]) -> list[Evidence]:
    """The one ranking: best score first (stable, so equal scores keep their order)."""
    return sorted(results, key=lambda e: -e.score)


def pages_by_score(results: Sequence[Evidence]) -> list[Evidence]:
    """The best evidence of every page, best score first."""
    return distinct_documents(ranked_by_score(results), limit=len(results))


def weakness(top: Evidence, thresholds: Thresholds) -> str | None:
    """Rules 3–5: why the top candidate is too weak to answer with, or None."""
    if matched_term_count(len(top.matched_terms), top.exact_title_phrase) < thresholds.min_matched_terms:
        return "matched_terms"
    if not top.title_or_keyword_hit and not top.exact_title_phrase:
        return "no_title_or_keyword_hit"
    if top.raw_score < thresholds.min_score:
        return "low_score"
    return None


def title_key(text: str) -> str:
    return " ".join(match_key(w) for w in words(lowercase_words(text)))


def explain_target(query: NormalizedQuery, results: Sequence[Evidence]) -> Evidence | None:
    """For "what is X" / "explain X": the best evidence whose page title is X."""
    if query.intent != "explain" or not query.subject:
        return None
    subject = title_key(query.subject)
    for evidence in results:
        if title_key(evidence.title) == subject:
            return evidence
    return None


def _corrected_key(query: NormalizedQuery) -> str:
    """The query's words as `title_key` compares them, each typo replaced by its correction."""
    fixed = {c.original.lower(): c.corrected for c in query.corrections}
    return title_key(" ".join(fixed.get(w, w) for w in words(lowercase_words(query.raw))))


NAMING_REASONS = frozenset({"explain_subject_is_title", "query_is_title"})
"""The seed rules' answers where the query names the page ("what is home", "advanced queries")."""
NAMES_PAGES = "query_names_pages"
"""The seed rules' question where the query names several pages (`synonym_named_pages`)."""

# A named page must also rank among this many best pages: the ranking has to agree that the
# page is about the query before its title settles the answer.
NAMED_PAGE_RANK = 2


def named_page(
    query: NormalizedQuery, results: Sequence[Evidence], is_stub: Callable[[str], bool] | None = None,
) -> Evidence | None:
    """The best evidence of the one page whose whole title is the query ("advanced queries",
    "wrkspace" once corrected) when it ranks among the `NAMED_PAGE_RANK` best pages: the user
    typed a page's name. None when no page, or several, carry that title, when another page
    lists the query as a keyword of its own ("home": Home's title and a Dashboard keyword, the
    seed plan's ambiguous case), or when the page is a stub (`is_stub(slug)`: almost no text,
    "Right sidebar" is `type:: [[UI Element]]`)."""
    key = _corrected_key(query)
    if not key:
        return None
    pages = pages_by_score(results)
    named = [i for i, e in enumerate(pages) if title_key(e.title) == key]
    if len(named) != 1 or named[0] >= NAMED_PAGE_RANK:
        return None
    page = pages[named[0]]
    claimed = any(e.query_is_keyword and e.doc_slug != page.doc_slug for e in results)
    return None if claimed or (is_stub is not None and is_stub(page.doc_slug)) else page


def synonym_named_pages(
    results: Sequence[Evidence], thresholds: Thresholds, is_stub: Callable[[str], bool] | None = None,
) -> list[Evidence]:
    """The best evidence of each page whose whole title the query is as the corpus's synonyms
    read both (`Evidence.query_is_title`), best first, when those pages' own titles differ: a
    synonym that gives two pages one name ("dashboard: home" in the seed corpus) says the word
    means either page.  Pages that share a title up to its plural (Property, Properties) are
    not meant by a synonym and are left to the other rules, as are stubs and pages too weak
    to answer with (`weakness`).  Empty unless two or more such pages remain."""
    named = [
        e for e in pages_by_score(results)
        if e.query_is_title and weakness(e, thresholds) is None and not (is_stub is not None and is_stub(e.doc_slug))
    ]
    return named if len({title_key(e.title) for e in named}) > 1 else []


def lead_with(results: Sequence[Evidence], target: Evidence, why: str) -> tuple[Evidence, ...]:
    """The ranking with `target` first, its score raised to the best score so that the results
    stay in the order of their scores; `match_explain` says why ("ranked first: <why>")."""
    best = max((e.score for e in results), default=target.score)
    lifted = target if target.score >= best else msgspec.structs.replace(
        target, score=best, match_explain=(*target.match_explain, f"ranked first: {why}"),
    )
    return (lifted, *[e for e in results if e is not target])


def names_the_page(target: Evidence) -> str:
    return f"the question names this page ({target.title})"


def _confidence_score(evidence: Evidence) -> float:
    """The seed-formula score (MIN_CONF's scale) even when BM25 ranked the list."""
    return evidence.score if evidence.seed_score is None else evidence.seed_score


def decide(
    results: Sequence[Evidence], query: NormalizedQuery, thresholds: Thresholds,
    *, is_stub: Callable[[str], bool] | None = None,
) -> Decision:
    """Apply the rules to ranked evidence (best first); `is_stub`: see `named_page`."""
    if not results or results[0].score <= 0:
        return NoMatch(message=clarify.NO_MATCH, reason="no_match")
    if query.unknown_tokens and not any(e.title_or_keyword_hit or e.exact_title_phrase for e in results):
        # "send an email": the topic word is unknown to the corpus and what did
        # match is body text only; offering a page would be a guess.
        return NoMatch(message=clarify.NO_MATCH, reason="out_of_domain")

    target = explain_target(query, results)
    if target is not None and weakness(target, thresholds) is None:
        # "what is X" names the page titled X: that page ranks first.
        return Answer(
            results=lead_with(results, target, names_the_page(target)), confidence=1.0,
            reason="explain_subject_is_title",
        )
    asked = synonym_named_pages(results, thresholds, is_stub)[:3]
    if asked:
        # "home": the corpus's synonyms give Home and Dashboard that name; ask which one.
        return Clarify(
            results=tuple(results),
            confidence=round(confidence(_confidence_score(asked[0]), _confidence_score(asked[1])), 4),
            message=clarify.ambiguous(*asked), options=tuple(option_of(e) for e in asked), reason=NAMES_PAGES,
        )

    named = named_page(query, results, is_stub)
    if named is not None and weakness(named, thresholds) is None:
        # The query is a page's name ("advanced queries"): that page, as for "what is X".
        return Answer(
            results=lead_with(results, named, names_the_page(named)), confidence=1.0,
            reason="query_is_title",
        )

    top = results[0]
    others = distinct_documents(results, limit=3)
    second = others[1] if len(others) > 1 else None
    second_score = _confidence_score(second) if second else 0.0
    conf = round(confidence(_confidence_score(top), second_score), 4)

    weak_reason = weakness(top, thresholds)
    if weak_reason is not None:
        if second is None:  # nothing to choose between (issue 40): the only page answers, as under calibrated
            return Answer(results=tuple(results), confidence=conf, reason=f"{ONLY_PAGE}{weak_reason}")
        return Clarify(
            results=tuple(results), confidence=conf, message=clarify.weak(top),
            options=tuple(option_of(e) for e in others), reason=weak_reason,
        )

    if second is not None:
        gap_too_small = top.raw_score - second.raw_score < thresholds.min_gap
        if gap_too_small or conf < thresholds.min_conf:
            return Clarify(
                results=tuple(results),
                confidence=conf,
                message=clarify.ambiguous(top, second),
                options=(option_of(top), option_of(second)),
                reason="small_gap" if gap_too_small else "low_confidence",
            )
    return Answer(results=tuple(results), confidence=conf)


def decide_multi_intent(
    part_results: Sequence[Sequence[Evidence]],
    query: NormalizedQuery,
    thresholds: Thresholds,
) -> Answer | None:
    """Two or more parts with a strong, distinct top document → both, and ask which.

    A part's candidate is the best-ranked evidence among its first few that is
    strong and not already chosen for another part.  It is strong when it passes the score, matched-terms and
    title/keyword guards.  The gap and confidence rules are not applied per
    part: "open notes" may sit between Notes and Note Actions, but it still
    names a clear topic, and the reply asks which one to go deeper on anyway.
    Returns None when fewer than two parts are strong; the caller then
    decides on the whole query.
    """
    chosen: list[Evidence] = []
    for results in part_results:
        taken = {e.doc_slug for e in chosen}
        top = next(
            (e for e in results[:MULTI_INTENT_DEPTH]
             if e.score > 0 and e.doc_slug not in taken and weakness(e, thresholds) is None),
            None,
        )
        if top is not None:
            chosen.append(top)
    if len(chosen) < 2:
        return None
    chosen = chosen[:2]
    return Answer(
        results=tuple(sorted(chosen, key=lambda e: -e.score)),  # the options keep the parts' order
        confidence=1.0,
        message=clarify.MULTI_INTENT,
        options=tuple(option_of(e) for e in chosen),
        reason="multi_intent",
    )
