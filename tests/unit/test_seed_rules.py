"""Decision rules in the seed plan's order, templates verbatim, multi-intent."""

from __future__ import annotations

import msgspec

from service.decide import clarify
from service.decide.seed_rules import decide, decide_multi_intent
from service.domain.types import Answer, Clarify, Correction, Evidence, NoMatch, NormalizedQuery
from service.flags import ThresholdFlags

T = ThresholdFlags().to_thresholds()  # the schema defaults: MIN_SCORE=3, MIN_CONF=0.3, MIN_GAP=2, MIN_MATCHED_TERMS=2


def ev(
    slug: str, score: float, raw: float, terms: tuple[str, ...] = ("a", "b"),
    title_hit: bool = True, exact: bool = False, title: str | None = None,
) -> Evidence:
    return Evidence(
        doc_slug=slug, title=title or slug.split("/")[1].title(), category=slug.split("/")[0],
        snippet="", score=score, content_hash="h", matched_terms=terms, source="keyword",
        raw_score=raw, title_or_keyword_hit=title_hit, exact_title_phrase=exact,
    )


Q = NormalizedQuery(raw="q", tokens=("a", "b"), phrase="a b")


def test_no_results_is_no_match_with_the_template() -> None:
    decision = decide([], Q, T)
    assert isinstance(decision, NoMatch)
    assert decision.message == "I couldn't find that in the documentation."  # no question it cannot help with


def test_single_strong_result_answers() -> None:
    decision = decide([ev("concepts/home", 1.0, 8)], Q, T)
    assert isinstance(decision, Answer) and decision.confidence == 1.0


def test_matched_terms_guard_comes_before_score() -> None:
    decision = decide([ev("concepts/home", 1.0, 8, terms=("a",)), ev("concepts/notes", 0.1, 1)], Q, T)
    assert isinstance(decision, Clarify) and decision.reason == "matched_terms"
    assert decision.message == (
        "I'm not sure which feature you mean. Are you asking about Home? If not, tell me the feature name."
    )


def test_exact_title_phrase_satisfies_the_matched_terms_guard() -> None:
    decision = decide([ev("concepts/home", 1.0, 11, terms=("home",), exact=True)], Q, T)
    assert isinstance(decision, Answer)


def test_title_keyword_guard() -> None:
    decision = decide([ev("concepts/home", 1.0, 8, title_hit=False), ev("concepts/notes", 0.1, 1)], Q, T)
    assert isinstance(decision, Clarify) and decision.reason == "no_title_or_keyword_hit"


def test_a_weak_match_on_the_only_page_answers_with_it() -> None:
    # A question with one option is no choice (issue 40): the page is given, its reason says why.
    decision = decide([ev("concepts/home", 0.2, 2)], Q, T)
    assert isinstance(decision, Answer) and decision.reason == "only_page_low_score"
    assert [e.doc_slug for e in decision.results] == ["concepts/home"]


def test_small_raw_gap_is_ambiguous() -> None:
    decision = decide([ev("concepts/home", 1.0, 11), ev("concepts/dashboard", 0.5, 10)], Q, T)
    assert isinstance(decision, Clarify) and decision.reason == "small_gap"
    assert decision.message == "Do you mean Home or Dashboard?"
    assert [o.doc_slug for o in decision.options] == ["concepts/home", "concepts/dashboard"]


def test_low_confidence_is_ambiguous() -> None:
    # Gap of 5 raw points passes, but (1.0 - 0.8) / 1.0 = 0.2 < 0.3.
    decision = decide([ev("concepts/home", 1.0, 11), ev("concepts/dashboard", 0.8, 6)], Q, T)
    assert isinstance(decision, Clarify) and decision.reason == "low_confidence"
    assert decision.confidence == 0.2


def test_second_score_comes_from_another_document() -> None:
    # Two chunks of the same page are not an ambiguity.
    decision = decide([ev("concepts/home", 1.0, 11), ev("concepts/home", 0.99, 11)], Q, T)
    assert isinstance(decision, Answer)


def test_explain_subject_that_is_a_page_title_answers() -> None:
    query = NormalizedQuery(raw="what is home", tokens=("home",), phrase="home", intent="explain", subject="home")
    results = [
        # Dashboard lists "home" among its keywords (seeds/concepts/dashboard.md)
        msgspec.structs.replace(ev("concepts/dashboard", 1.0, 11, terms=("home",), exact=True, title="Dashboard"),
                                query_is_keyword=True),
        ev("concepts/home", 0.9, 11, terms=("home",), exact=True, title="Home"),
    ]
    decision = decide(results, query, T)
    assert isinstance(decision, Answer) and decision.results[0].doc_slug == "concepts/home"
    plain = NormalizedQuery(raw="home", tokens=("home",), phrase="home")
    assert isinstance(decide(results, plain, T), Clarify)


def test_unknown_topic_word_with_only_body_matches_is_no_match() -> None:
    query = NormalizedQuery(raw="send an email", tokens=("send", "email"), phrase="send email", unknown_tokens=("email",))
    decision = decide([ev("concepts/workspace", 0.04, 1, terms=("send",), title_hit=False)], query, T)
    assert isinstance(decision, NoMatch) and decision.reason == "out_of_domain"


def test_multi_intent_returns_two_documents_and_asks() -> None:
    parts = [
        [ev("concepts/workspace", 1.0, 11, exact=True, terms=("workspace",))],
        [ev("concepts/widgets", 1.0, 11, exact=True, terms=("widgets",))],
    ]
    decision = decide_multi_intent(parts, Q, T)
    assert decision is not None
    assert [e.doc_slug for e in decision.results] == ["concepts/workspace", "concepts/widgets"]
    assert decision.message == clarify.MULTI_INTENT == "Which one should I go deeper on?"


def test_multi_intent_needs_two_strong_parts() -> None:
    parts = [[ev("concepts/workspace", 1.0, 11, exact=True)], [ev("concepts/widgets", 0.1, 1, terms=("w",))]]
    assert decide_multi_intent(parts, Q, T) is None


def test_multi_intent_results_are_in_the_order_of_their_scores_and_options_in_the_parts_order() -> None:
    # "rename a note and add it to my quick links" came back as (4.05, 5.91).
    parts = [
        [ev("actions/notes", 4.05, 11, exact=True, terms=("rename", "note"))],
        [ev("widgets/quick-links", 5.91, 11, exact=True, terms=("quick", "links"))],
    ]
    decision = decide_multi_intent(parts, Q, T)
    assert decision is not None
    assert [e.score for e in decision.results] == [5.91, 4.05]
    assert [o.doc_slug for o in decision.options] == ["actions/notes", "widgets/quick-links"]


def test_what_is_a_page_title_answers_that_page_first_with_the_best_score() -> None:
    query = NormalizedQuery(raw="what is a dashboard", tokens=("home",), phrase="home", intent="explain",
                            subject="dashboard")
    home, dashboard = ev("concepts/home", 0.34, 8), ev("concepts/dashboard", 0.33, 8)
    decision = decide([home, dashboard], query, T)
    assert isinstance(decision, Answer) and decision.reason == "explain_subject_is_title"
    assert [e.doc_slug for e in decision.results] == ["concepts/dashboard", "concepts/home"]
    assert [e.score for e in decision.results] == [0.34, 0.34]
    assert decision.results[0].match_explain[-1] == "ranked first: the question names this page (Dashboard)"


def named(slug: str, score: float, title: str, *, keyword_is_query: bool = False) -> Evidence:
    return msgspec.structs.replace(ev(slug, score, 8, terms=("dashboard",), exact=True, title=title),
                                   query_is_keyword=keyword_is_query)


DASHBOARD = NormalizedQuery(raw="Dashboard", tokens=("dashboard",), phrase="dashboard")


def test_a_query_that_is_a_pages_whole_title_answers_with_that_page() -> None:
    # Home scores higher (it says "dashboard" often), but the user typed Dashboard's name.
    ranking = [named("concepts/home", 1.0, "Home"), named("concepts/dashboard", 0.9, "Dashboard")]
    decision = decide(ranking, DASHBOARD, T)
    assert isinstance(decision, Answer) and decision.reason == "query_is_title"
    assert [e.doc_slug for e in decision.results] == ["concepts/dashboard", "concepts/home"]
    assert [e.score for e in decision.results] == [1.0, 1.0]
    typo = NormalizedQuery(raw="dashbord", tokens=("dashboard",), phrase="dashboard",
                           corrections=(Correction(original="dashbord", corrected="dashboard", similarity=0.9),))
    assert decide(ranking, typo, T).reason == "query_is_title"


def test_no_page_is_named_when_another_claims_the_word_or_the_title_ranks_low_or_is_shared() -> None:
    home = NormalizedQuery(raw="home", tokens=("home",), phrase="home")
    # The seed plan's "home": Home's title and a Dashboard keyword, nearly level: it asks.
    claimed = [named("concepts/home", 1.0, "Home"), named("concepts/dashboard", 0.9, "Dashboard", keyword_is_query=True)]
    decision = decide(claimed, home, T)
    assert isinstance(decision, Clarify) and decision.reason != "query_is_title"
    below = [named("concepts/home", 1.0, "Home"), named("widgets/recent", 0.95, "Recent"),
             named("concepts/dashboard", 0.9, "Dashboard")]
    assert decide(below, DASHBOARD, T).reason != "query_is_title"
    twins = [named("concepts/home", 1.0, "Home"), named("concepts/dashboard", 0.9, "Dashboard"),
             named("actions/dashboard", 0.8, "Dashboards")]
    assert decide(twins, DASHBOARD, T).reason != "query_is_title"
    question = NormalizedQuery(raw="which dashboard is mine", tokens=("dashboard",), phrase="dashboard")
    level = [named("concepts/home", 1.0, "Home"), named("concepts/dashboard", 0.9, "Dashboard")]
    assert decide(level, question, T).reason != "query_is_title"


def test_a_stub_page_is_not_answered_for_its_name() -> None:
    # "Right sidebar": a page whose whole text is `type:: [[UI Element]]` answers little.
    ranking = [named("concepts/dashboard", 1.0, "Dashboard"), named("concepts/home", 0.9, "Home")]
    assert decide(ranking, DASHBOARD, T).reason == "query_is_title"
    stub = decide(ranking, DASHBOARD, T, is_stub=lambda slug: slug == "concepts/dashboard")
    assert stub.reason != "query_is_title"


def titled(slug: str, score: float, title: str) -> Evidence:
    """Evidence of a page whose title the query is, as the corpus's synonyms read both."""
    return msgspec.structs.replace(ev(slug, score, 8, terms=("home",), exact=True, title=title), query_is_title=True)


HOME = NormalizedQuery(raw="home", tokens=("home",), phrase="home")


def test_a_query_the_synonyms_make_two_pages_names_asks_between_them() -> None:
    # "home": Home's title, and Dashboard's through `dashboard: home` (seeds/synonyms.yaml),
    # even when a third page outranks Dashboard.
    ranking = [titled("concepts/home", 1.0, "Home"), ev("actions/navigation", 0.6, 8),
               titled("concepts/dashboard", 0.4, "Dashboard")]
    decision = decide(ranking, HOME, T)
    assert isinstance(decision, Clarify) and decision.reason == "query_names_pages"
    assert decision.message == "Do you mean Home or Dashboard?"
    assert [o.doc_slug for o in decision.options] == ["concepts/home", "concepts/dashboard"]


def test_pages_sharing_a_title_up_to_its_plural_are_not_named_by_a_synonym() -> None:
    # logseq-docs has "Property" and "Properties": one name in two forms, not a synonym's doing.
    ranking = [titled("docs/properties", 1.0, "Properties"), titled("docs/property", 0.5, "Property")]
    assert decide(ranking, HOME, T).reason != "query_names_pages"


def test_a_stub_or_weak_page_is_not_offered_as_a_named_page() -> None:
    ranking = [titled("concepts/home", 1.0, "Home"), titled("concepts/dashboard", 0.4, "Dashboard")]
    assert decide(ranking, HOME, T, is_stub=lambda slug: slug == "concepts/dashboard").reason != "query_names_pages"
    weak = [ranking[0], msgspec.structs.replace(ranking[1], raw_score=1.0)]
    assert decide(weak, HOME, T).reason != "query_names_pages"
