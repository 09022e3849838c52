"""Where the calibrated policy keeps the seed rules (the words settle it), asks instead of saying
no match, and keeps a two-page multi-intent answer (issue 18: golden cases under both policies)."""

from __future__ import annotations

import msgspec
import pytest

from service.decide.calibration import (
    FEATURES,
    PhaseModel,
    choose,
    decide_calibrated,
    decision_signals,
    multi_intent_pages,
    named_pages,
    seed_is_certain,
    words_found,
)
from service.domain.signals import DecisionSignals
from service.domain.types import Clarify, Evidence, NoMatch, NormalizedQuery
from service.flags import DecisionPoint

T = DecisionPoint(answer_p=0.7, no_match_p=0.2, ambiguity_ratio=1.01)


def ev(slug: str, score: float, *, named: bool = False, terms: tuple[str, ...] = ("home",)) -> Evidence:
    return Evidence(
        doc_slug=slug, title=slug.split("/")[1].title(), category=slug.split("/")[0], snippet="s", score=score,
        content_hash="h", matched_terms=terms, source="keyword", header_path=None, chunk_index=0, raw_score=11.0,
        title_or_keyword_hit=True, exact_title_phrase=named,
    )


def test_named_pages_counts_the_named_pages_from_the_top() -> None:
    home, dashboard, widgets = ev("concepts/home", 3.0, named=True), ev("concepts/dashboard", 2.9, named=True), \
        ev("concepts/widgets", 2.8)
    assert named_pages([home, dashboard, widgets]) == 2
    assert named_pages([home, widgets, dashboard]) == 1
    assert named_pages([widgets, home, dashboard]) == 0  # the top page is not named: nothing settles it
    query = NormalizedQuery(raw="home", tokens=("home",), phrase="home")
    assert decision_signals(query, [dashboard, home, widgets]).named_pages == 2


@pytest.mark.parametrize(
    ("reason", "named", "certain"),
    [
        ("out_of_domain", 0, True),
        ("explain_subject_is_title", 0, True),
        ("small_gap", 2, True),  # "home": Home's title and a Dashboard heading, level: ask between them
        ("small_gap", 1, False),  # level but only one page named: p decides
        ("low_confidence", 2, False),  # not level in seed points ("chat panel"): p decides
        ("confident", 1, True),  # "wrkspace": the query is Workspace's title, the seed rules answer
        ("confident", 0, False),
        ("confident", 2, False),  # two pages carry the name: not one page named
        ("no_title_or_keyword_hit", 1, False),
    ],
)
def test_seed_is_certain_where_the_words_name_the_pages(reason: str, named: int, certain: bool) -> None:
    assert seed_is_certain(reason, named) is certain


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


def test_the_fit_replays_the_seed_certain_and_found_rules_as_the_service_applies_them() -> None:
    from service.evaluation.decision_metrics import CaseRun
    from service.evaluation.decisions import replayed_status

    query = NormalizedQuery(raw="home", tokens=("home",), phrase="home")
    ranking = [ev("concepts/home", 3.0, named=True), ev("concepts/dashboard", 2.97, named=True)]
    signals = decision_signals(query, ranking)
    run = CaseRun(
        case_id="c", phase=2, policy="seed_rules", status="clarify", reason="small_gap",
        shown=signals.ranking, ranked=signals.ranking, options=signals.ranking, features=signals.features,
        keyword_reason="small_gap", named_pages=signals.named_pages,
    )
    # "home" is asked as Home or Dashboard whatever p says
    assert replayed_status(run, 0.99, T, None) == ("clarify", signals.ranking, signals.ranking)
    # one page named only: p decides; every word is on the top page, so a low p asks
    alone = msgspec.structs.replace(run, named_pages=1)
    status, _, options = replayed_status(alone, 0.05, T, None)
    decision = decide_calibrated(ranking, query, 0.05, "p", T, found=words_found(signals.features))
    assert (status, options) == ("clarify", signals.ranking) and isinstance(decision, Clarify)
    assert tuple(o.doc_slug for o in decision.options) == options
