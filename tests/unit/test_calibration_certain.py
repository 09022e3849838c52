"""Where the calibrated policy keeps a two-page multi-intent answer, and that the fit
replays its decision as the service makes it (issue 18: the seed plan's golden cases under both policies)."""

from __future__ import annotations

import msgspec

from service.decide.calibration import (
    FEATURES,
    PhaseModel,
    decide_calibrated,
    decision_signals,
    multi_intent_pages,
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


def test_the_fit_replays_the_decision_as_the_service_applies_it() -> None:
    from service.evaluation.decision_metrics import CaseRun
    from service.evaluation.decisions import replayed_status

    query = NormalizedQuery(raw="home", tokens=("home",), phrase="home")
    ranking = [ev("concepts/home", 3.0), ev("concepts/dashboard", 2.97)]
    signals = decision_signals(query, ranking)
    run = CaseRun(
        case_id="c", phase=2, policy="seed_rules", status="clarify", reason="small_gap",
        shown=signals.ranking, ranked=signals.ranking, options=signals.ranking, features=signals.features,
        keyword_reason="small_gap",
    )
    # a low p is no match, in the fit's replay as in the service
    assert replayed_status(run, 0.05, T, None) == ("no_match", (), ())
    assert isinstance(decide_calibrated(ranking, query, 0.05, "p", T), NoMatch)
    # a middling p with two level pages asks between them, in both
    level = DecisionPoint(answer_p=0.7, no_match_p=0.2, ambiguity_ratio=0.9)
    status, _, options = replayed_status(run, 0.5, level, None)
    decision = decide_calibrated(ranking, query, 0.5, "p", level)
    assert (status, options) == ("clarify", signals.ranking[:2]) and isinstance(decision, Clarify)
    assert tuple(o.doc_slug for o in decision.options) == options


def test_the_pipeline_puts_the_sure_page_first_in_answer_and_options() -> None:
    from service.decide.calibration import CalibrationModel
    from service.domain.types import Answer, Option
    from service.flags import Flags
    from service.pipeline import sure_first

    calibration = CalibrationModel(
        format=2, version="v", corpus="seed", corpus_fingerprint="f", pages_fingerprint="p", features=FEATURES,
        phases={"1": MARKER, "2": MARKER, "3": MARKER}, answer_p=(0.7,) * 3, no_match_p=(0.2,) * 3,
        ambiguity_ratio=(1.01,) * 3, library="x", query_set="q", fitted_at="t",
    )
    navigator, links = ev("widgets/navigator", 1.6), ev("widgets/quick-links", 7.2)
    multi = Answer(
        results=(navigator, links), confidence=1.0, message="Which one should I go deeper on?", reason="multi_intent",
        options=tuple(Option(doc_slug=e.doc_slug, title=e.title, category=e.category) for e in (navigator, links)),
    )
    signals = DecisionSignals(features=dict.fromkeys(FEATURES, 0.0), ranking=(), parts=(
        part(("widgets/navigator", "actions/notes"), sure=False, reason="small_gap"),
        part(("widgets/quick-links",), sure=True),
    ))
    flags = Flags()
    ordered = sure_first(calibration, flags, 2, multi, signals)
    assert ordered is not None
    assert [e.doc_slug for e in ordered.results] == ["widgets/quick-links", "widgets/navigator"]
    assert [o.doc_slug for o in ordered.options] == ["widgets/quick-links", "widgets/navigator"]
    assert ordered.message == multi.message
    unsure = msgspec.structs.replace(signals, parts=(signals.parts[0], part(("widgets/quick-links",), sure=False)))
    assert sure_first(calibration, flags, 2, multi, unsure) is None  # decided as one query instead
