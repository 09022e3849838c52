"""Where the calibrated policy asks instead of saying no match, and keeps a two-page
multi-intent answer (issue 18: the seed plan's golden cases under both policies)."""

from __future__ import annotations

import msgspec

from service.decide.calibration import (
    FEATURES,
    PhaseModel,
    choose,
    decide_calibrated,
    decision_signals,
    multi_intent_pages,
    words_found,
)
from service.domain.signals import DecisionSignals
from service.domain.types import Clarify, Evidence, NoMatch, NormalizedQuery
from service.flags import DecisionPoint

T = DecisionPoint(answer_p=0.7, no_match_p=0.2, ambiguity_ratio=1.01)


def ev(slug: str, score: float, *, terms: tuple[str, ...] = ("home",)) -> Evidence:
    return Evidence(
        doc_slug=slug, title=slug.split("/")[1].title(), category=slug.split("/")[0], snippet="s", score=score,
        content_hash="h", matched_terms=terms, source="keyword", header_path=None, chunk_index=0, raw_score=11.0,
        title_or_keyword_hit=True,
    )


def test_words_found_needs_every_word_known_and_on_the_top_page() -> None:
    base = dict.fromkeys(FEATURES, 0.0) | {"tokens": 2.0, "matched_share": 1.0}
    assert words_found(base)
    assert not words_found(base | {"matched_share": 0.5})  # one word is not on the top page
    assert not words_found(base | {"unknown_share": 0.5})  # "send an email": the corpus never says "email"
    assert not words_found(dict.fromkeys(FEATURES, 0.0))  # no words at all


def test_a_low_p_asks_instead_of_no_match_when_the_top_page_holds_every_word() -> None:
    assert choose(0.1, score_ratio=0.9, has_second=True, second_same_need=False, point=T) == "no_match"
    assert choose(0.1, score_ratio=0.9, has_second=True, second_same_need=False, point=T, found=True) == "weak"
    query = NormalizedQuery(raw="breadcrumb tooltip", tokens=("breadcrumb", "tooltip"), phrase="breadcrumb tooltip")
    ranking = [ev("concepts/home", 1.8, terms=("breadcrumb", "tooltip")), ev("actions/navigation", 1.6)]
    assert isinstance(decide_calibrated(ranking, query, 0.1, "p", T), NoMatch)
    asked = decide_calibrated(ranking, query, 0.1, "p", T, found=True)
    assert isinstance(asked, Clarify) and asked.reason == "calibrated_weak"
    assert [o.doc_slug for o in asked.options] == ["concepts/home", "actions/navigation"]


# p = σ(-2 + 4·top_score): 0.88 for a part whose features say sure (top_score 1), 0.12 otherwise
MARKER = PhaseModel(
    intercept=-2.0, coef=tuple(4.0 if f == "top_score" else 0.0 for f in FEATURES),
    mean=(0.0,) * len(FEATURES), scale=(1.0,) * len(FEATURES),
)


def part(ranking: tuple[str, ...], *, sure: bool, reason: str = "confident") -> DecisionSignals:
    features = dict.fromkeys(FEATURES, 0.0) | {"top_score": 1.0 if sure else 0.0}
    return DecisionSignals(features=features, ranking=ranking, keyword_reason=reason)


def test_a_multi_intent_answer_keeps_a_part_level_between_two_pages_behind_a_sure_one() -> None:
    quick_links = part(("widgets/quick-links", "actions/notes"), sure=True)
    open_notes = part(("widgets/navigator", "actions/notes", "widgets/recent"), sure=False, reason="small_gap")
    pages = ["widgets/navigator", "widgets/quick-links"]
    # "open notes + quick links": the topic of "open notes" is clear, its page is not; the sure page leads
    assert multi_intent_pages(MARKER, T, pages, [open_notes, quick_links]) == ("widgets/quick-links", "widgets/navigator")
    # the unsure part is not level between two pages (e.g. no title hit): decide the whole query as one
    weak = part(open_notes.ranking, sure=False, reason="no_title_or_keyword_hit")
    assert multi_intent_pages(MARKER, T, pages, [weak, quick_links]) is None
    # a page outside the level part's two best pages is a guess
    assert multi_intent_pages(MARKER, T, ["widgets/recent", "widgets/quick-links"], [open_notes, quick_links]) is None
    # no part is sure: nothing can lead
    level_links = part(quick_links.ranking, sure=False, reason="low_confidence")
    assert multi_intent_pages(MARKER, T, pages, [open_notes, level_links]) is None
    # both sure: the answer's own order stays
    both = [part(open_notes.ranking, sure=True), quick_links]
    assert multi_intent_pages(MARKER, T, pages, both) == tuple(pages)


def test_the_fit_replays_the_found_rule_as_the_service_applies_it() -> None:
    from service.decide.decider import replayed_status
    from service.evaluation.decision_metrics import CaseRun

    # "go home": every word on the top page, but not the page's whole title (the named-page rule)
    query = NormalizedQuery(raw="go home", tokens=("home",), phrase="home")
    ranking = [ev("concepts/home", 3.0), ev("concepts/dashboard", 2.97)]
    signals = decision_signals(query, ranking)
    run = CaseRun(
        case_id="c", phase=2, policy="seed_rules", status="clarify", reason="small_gap",
        shown=signals.ranking, ranked=signals.ranking, options=signals.ranking, features=signals.features,
        keyword_reason="small_gap",
    )
    # every word is on the top page: a low p asks, in the fit's replay as in the service
    status, _, options = replayed_status(run, 0.05, T, None)
    decision = decide_calibrated(ranking, query, 0.05, "p", T, found=words_found(signals.features))
    assert (status, options) == ("clarify", signals.ranking) and isinstance(decision, Clarify)
    assert tuple(o.doc_slug for o in decision.options) == options
    missing = msgspec.structs.replace(run, features=signals.features | {"matched_share": 0.5})
    assert replayed_status(missing, 0.05, T, None) == ("no_match", (), ())


def test_the_sure_page_leads_the_options_while_the_results_keep_their_scores_order() -> None:
    from service.decide.calibration import CalibrationModel
    from service.decide.decider import sure_first
    from service.domain.types import Answer, Option
    from service.flags import Flags

    calibration = CalibrationModel(
        format=2, version="v", corpus="seed", corpus_fingerprint="f", pages_fingerprint="p", features=FEATURES,
        phases={"1": MARKER, "2": MARKER, "3": MARKER}, answer_p=(0.7,) * 3, no_match_p=(0.2,) * 3,
        ambiguity_ratio=(1.01,) * 3, library="x", query_set="q", fitted_at="t",
    )
    # The level part's page scores higher than the sure part's page.
    navigator, links = ev("widgets/navigator", 7.2), ev("widgets/quick-links", 1.6)
    multi = Answer(
        results=(navigator, links), confidence=1.0, message="Which one should I go deeper on?", reason="multi_intent",
        options=tuple(Option(doc_slug=e.doc_slug, title=e.title, category=e.category) for e in (navigator, links)),
    )
    signals = DecisionSignals(features=dict.fromkeys(FEATURES, 0.0), ranking=(), parts=(
        part(("widgets/navigator", "actions/notes"), sure=False, reason="small_gap"),
        part(("widgets/quick-links",), sure=True),
    ))
    flags = msgspec.structs.replace(Flags(), decision=calibration.points(Flags().decision))
    ordered = sure_first(calibration, flags.decision, 2, multi, signals)
    assert ordered is not None
    assert [e.doc_slug for e in ordered.results] == ["widgets/navigator", "widgets/quick-links"]
    assert [o.doc_slug for o in ordered.options] == ["widgets/quick-links", "widgets/navigator"]
    assert ordered.message == multi.message
    unsure = msgspec.structs.replace(signals, parts=(signals.parts[0], part(("widgets/quick-links",), sure=False)))
    assert sure_first(calibration, flags.decision, 2, multi, unsure) is None  # decided as one query instead


def test_the_fit_replays_the_question_between_pages_a_synonym_names_as_the_seed_rules_ask_it() -> None:
    from service.decide.decider import replayed_status
    from service.evaluation.decision_metrics import CaseRun

    # "home" at phase 3: Home's title, and Dashboard's through `dashboard: home`; however sure p is
    features = dict.fromkeys(FEATURES, 0.0) | {"top_score": 1.0, "tokens": 1.0, "matched_share": 1.0}
    ranked = ("concepts/home", "actions/navigation", "concepts/dashboard")
    run = CaseRun(
        case_id="c", phase=3, policy="seed_rules", status="clarify", reason="query_names_pages", shown=ranked,
        ranked=ranked, options=("concepts/home", "concepts/dashboard"), features=features,
        keyword_reason="query_names_pages",
    )
    assert replayed_status(run, 0.99, T, None) == ("clarify", ranked, ("concepts/home", "concepts/dashboard"))
