"""The calibrated decision: features, the logistic maths, the rule table, the ambiguity rule."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import pytest

from service.decide.calibration import (
    FEATURES,
    MODEL_FORMAT,
    CalibrationError,
    CalibrationModel,
    PhaseModel,
    choose,
    contributions,
    corpus_fingerprint,
    decide_calibrated,
    explain,
    features_of,
    load_model,
    pages_fingerprint,
    probability,
    sigmoid,
)
from service.domain.types import Answer, Clarify, Evidence, NoMatch, NormalizedQuery
from service.flags import DecisionFlags, DecisionPoint

T = DecisionPoint(answer_p=0.7, no_match_p=0.2, ambiguity_ratio=0.9)
Q = NormalizedQuery(raw="remove a widget", tokens=("remove", "widget"), phrase="remove widget")


def ev(slug: str, score: float, header: str = "Page > Intro", index: int = 0, raw: float = 5.0) -> Evidence:
    return Evidence(
        doc_slug=slug, title=slug.split("/")[1].replace("-", " ").title(), category=slug.split("/")[0],
        snippet="s", score=score, content_hash="h", matched_terms=("widget",), source="hybrid",
        header_path=header, chunk_index=index, raw_score=raw, title_or_keyword_hit=True,
    )


def zero_model(intercept: float = 0.0) -> PhaseModel:
    n = len(FEATURES)
    return PhaseModel(intercept=intercept, coef=(0.0,) * n, mean=(0.0,) * n, scale=(1.0,) * n)


def test_sigmoid_is_stable_at_the_extremes() -> None:
    assert sigmoid(0.0) == 0.5
    assert sigmoid(800.0) == 1.0 and sigmoid(-800.0) == 0.0
    assert sigmoid(2.0) == pytest.approx(1 / (1 + math.exp(-2.0)))


def test_probability_is_the_logistic_of_standardised_features() -> None:
    coef = [0.0] * len(FEATURES)
    mean = [0.0] * len(FEATURES)
    scale = [1.0] * len(FEATURES)
    i = FEATURES.index("top_similarity")
    coef[i], mean[i], scale[i] = 2.0, 0.5, 0.1
    model = PhaseModel(intercept=-1.0, coef=tuple(coef), mean=tuple(mean), scale=tuple(scale))
    features = dict.fromkeys(FEATURES, 0.0) | {"top_similarity": 0.7}
    # z = (0.7 - 0.5) / 0.1 = 2 → logit = -1 + 2·2 = 3
    assert probability(model, features) == pytest.approx(sigmoid(3.0))
    assert contributions(model, features)["top_similarity"] == pytest.approx(4.0)
    assert "top_similarity 0.7 (+4.00)" in explain(model, features, probability(model, features))


def test_features_come_from_the_ranking_by_score_and_cover_every_name() -> None:
    unsorted = [ev("widgets/navigator", 0.51), ev("actions/note-actions", 0.99), ev("widgets/recent", 0.69)]
    f = features_of(Q, unsorted)
    assert set(f) == set(FEATURES)
    assert f["top_score"] == 0.99 and f["score_gap"] == pytest.approx(0.30)
    assert f["score_ratio"] == pytest.approx(0.69 / 0.99)
    assert f["distinct_pages"] == pytest.approx(math.log1p(3))
    assert f["top_similarity"] == 0.0  # no semantic leg before phase 3


def test_where_the_first_page_stands_among_whole_pages_is_a_signal() -> None:
    ranking = [ev("widgets/recent", 0.69), ev("actions/note-actions", 0.99)]
    assert features_of(Q, ranking)["whole_page_rank"] == 0.0  # phases 1 and 2: no second ranking
    second = features_of(Q, ranking, whole_pages=("widgets/recent", "actions/note-actions"))
    assert second["whole_page_rank"] == 0.5  # the fused first page is phase 1's second
    first = features_of(Q, ranking, whole_pages=("actions/note-actions",))
    assert first["whole_page_rank"] == 1.0
    absent = features_of(Q, ranking, whole_pages=("widgets/recent",))
    assert absent["whole_page_rank"] == 0.0  # phase 1 does not rank it among its first ten


@pytest.mark.parametrize(
    ("p", "ratio", "expected"),
    [
        (0.1, 0.5, "no_match"),
        (0.9, 0.5, "answer"),
        (0.5, 0.5, "weak"),
        (0.9, 0.95, "ambiguous"),  # two pages nearly level: ask which
        (0.1, 0.95, "no_match"),  # ... unless neither is likely
    ],
)
def test_rule_table(p: float, ratio: float, expected: str) -> None:
    assert choose(p, score_ratio=ratio, has_second=True, point=T) == expected


def test_decision_results_are_sorted_and_options_come_from_the_same_ranking() -> None:
    unsorted = [ev("widgets/navigator", 0.51), ev("actions/note-actions", 0.99), ev("widgets/recent", 0.69)]
    answer = decide_calibrated(unsorted, Q, 0.9, "p=0.9", T)
    assert isinstance(answer, Answer)
    assert [e.score for e in answer.results] == [0.99, 0.69, 0.51]
    assert answer.results[0].match_explain[-1] == "p=0.9"
    weak = decide_calibrated(unsorted, Q, 0.5, "p=0.5", T)
    assert isinstance(weak, Clarify)
    assert [o.doc_slug for o in weak.options] == ["actions/note-actions", "widgets/recent", "widgets/navigator"]
    assert isinstance(decide_calibrated(unsorted, Q, 0.05, "p", T), NoMatch)


def test_two_level_pages_are_asked_about_whatever_their_sections_and_a_third_never_joins() -> None:
    """The same-need and third-contender exceptions did not pay on six corpora (docs/quality/
    cross-corpus.md): two pages as level as `ambiguity_ratio` asks are a question between them."""
    top = ev("widgets/widget-manager", 0.90, "Widget Manager > Removing a widget")
    same_heading = ev("actions/widget-actions", 0.88, "Widget Actions > Removing a widget")
    level = ev("widgets/recent", 0.89, "Recent > Clearing the list")
    asked = decide_calibrated([top, same_heading, level], Q, 0.9, "p", T)
    assert isinstance(asked, Clarify)
    assert [o.doc_slug for o in asked.options] == ["widgets/widget-manager", "widgets/recent"]
    assert asked.message == "Do you mean Widget Manager or Recent?"
    apart = decide_calibrated([top, ev("widgets/quick-links", 0.5)], Q, 0.9, "p", T)
    assert isinstance(apart, Answer) and apart.results[0].doc_slug == "widgets/widget-manager"


def _model_file(tmp_path: Path, **changes: object) -> Path:
    model = CalibrationModel(
        format=MODEL_FORMAT, version="seed-test", corpus="seed", corpus_fingerprint="f" * 64,
        features=FEATURES, phases={"1": zero_model(), "2": zero_model(), "3": zero_model(1.0)},
        pages_fingerprint="e" * 64, answer_p=(0.7,) * 3, no_match_p=(0.2,) * 3, ambiguity_ratio=(0.9,) * 3,
        library="scikit-learn x", query_set="q",
        fitted_at="2026-11-22T00:00:00+00:00",
    )
    model = msgspec.structs.replace(model, **changes)
    path = tmp_path / "calibration.json"
    path.write_bytes(msgspec.json.encode(model))
    return path


def test_model_file_round_trips_and_rejects_other_features(tmp_path: Path) -> None:
    model = load_model(_model_file(tmp_path))
    assert model.version == "seed-test"
    assert probability(model.phases["3"], dict.fromkeys(FEATURES, 0.0)) == pytest.approx(sigmoid(1.0))
    with pytest.raises(CalibrationError, match="other features"):
        load_model(_model_file(tmp_path, features=("top_score",)))
    with pytest.raises(CalibrationError, match="format"):
        load_model(_model_file(tmp_path, format=99))


def test_fingerprint_ignores_order_and_sees_content_changes() -> None:
    a = corpus_fingerprint({"a/x": "1", "b/y": "2"})
    assert a == corpus_fingerprint({"b/y": "2", "a/x": "1"})
    assert a != corpus_fingerprint({"a/x": "1", "b/y": "3"})


def test_multi_intent_on_phase3_uses_the_fused_scale_sorted() -> None:
    from service.decide.decider import multi_intent_on
    from service.domain.types import Option

    keyword = Answer(
        results=(ev("concepts/workspace", 4.05), ev("concepts/widgets", 5.98)), confidence=1.0,
        message="Which one should I go deeper on?", reason="multi_intent",
        options=(Option(doc_slug="concepts/workspace", title="W", category="concepts"),
                 Option(doc_slug="concepts/widgets", title="X", category="concepts")),
    )
    fused = [ev("concepts/widgets", 0.61), ev("concepts/workspace", 0.83), ev("concepts/workspace", 0.4, index=1)]
    on_fused = multi_intent_on(fused, keyword)
    assert [(e.doc_slug, e.score) for e in on_fused.results] == [("concepts/workspace", 0.83), ("concepts/widgets", 0.61)]
    assert on_fused.message == keyword.message and on_fused.options == keyword.options


def _two_needs(first: Evidence, second: Evidence) -> Answer:
    """What the seed rules' multi-intent split gives: each part's strong page, in the parts' order."""
    from service.decide.seed_rules import option_of

    return Answer(results=(first, second), confidence=1.0, message="Which one should I go deeper on?",
                  reason="multi_intent", options=(option_of(first), option_of(second)))


def test_an_answer_to_two_needs_offers_the_other_needs_page_too() -> None:
    from service.decide.decider import with_second_need

    # "annotate text and go back to the previous page": p answers with Notes; Navigation is the
    # other part's page, so the user is offered both.
    answer = Answer(results=(ev("concepts/notes", 0.9), ev("concepts/home", 0.7), ev("actions/navigation", 0.6)),
                    confidence=0.8, reason="calibrated_answer")
    multi = _two_needs(ev("concepts/notes", 5.0), ev("actions/navigation", 4.0))
    offered = with_second_need(answer, multi)
    assert [o.doc_slug for o in offered.options] == ["concepts/notes", "actions/navigation"]
    assert offered.reason == "calibrated_two_needs" and offered.results == answer.results
    # A first page that is neither part's: p's answer stands, nothing is added.
    elsewhere = _two_needs(ev("widgets/recent", 5.0), ev("actions/navigation", 4.0))
    assert with_second_need(answer, elsewhere) is answer


def test_two_needs_p_would_not_answer_are_asked_about_when_the_message_ranks_both_first() -> None:
    from service.decide.decider import TWO_NEEDS_DEPTH, two_needs_question

    weak = Clarify(results=(), confidence=0.4, message="Do you mean …?", options=(), reason="calibrated_weak")
    multi = _two_needs(ev("concepts/notes", 5.0), ev("actions/navigation", 4.0))
    ranking = [ev("concepts/notes", 0.9), ev("actions/navigation", 0.8), ev("concepts/home", 0.7)]
    asked = two_needs_question(weak, ranking, multi)
    assert isinstance(asked, Clarify) and asked.reason == "calibrated_two_needs_question"
    assert {o.doc_slug for o in asked.options} == {"concepts/notes", "actions/navigation"}
    assert asked.message.startswith("You asked about two things:")
    # The second need's page below the message's first `TWO_NEEDS_DEPTH` pages: a split on an
    # "and" of one need, most likely; the question stays as p put it.
    buried = [ev("concepts/notes", 0.9), *(ev(f"concepts/other-{i}", 0.8 - i / 100) for i in range(TWO_NEEDS_DEPTH)),
              ev("actions/navigation", 0.5)]
    assert two_needs_question(weak, buried, multi) is weak
    declined = NoMatch(message="none", reason="calibrated_no_match", confidence=0.1)
    assert two_needs_question(declined, buried, multi) is declined
    assert isinstance(two_needs_question(declined, ranking, multi), Clarify)


def test_decision_flags_refuse_a_no_match_point_above_the_answer_point() -> None:
    with pytest.raises(msgspec.ValidationError, match="no_match_p"):
        msgspec.convert({"answer_p": [0.8, 0.5, 0.8], "no_match_p": [0.3, 0.6, 0.3]}, DecisionFlags)
    flags = msgspec.convert({"answer_p": [0.8, 0.7, 0.9], "no_match_p": [0.3, 0.3, 0.3],
                             "ambiguity_ratio": [1.0, 1.0, 1.0]}, DecisionFlags)
    assert flags.at(3).answer_p == 0.9 and flags.at(2).answer_p == 0.7
    with pytest.raises(ValueError, match="the fit's"):  # a point left to the fit is not made up
        msgspec.convert({"answer_p": [0.8, 0.7, 0.9]}, DecisionFlags).at(2)


def test_pages_fingerprint_is_the_set_of_slugs() -> None:
    assert pages_fingerprint(["b", "a"]) == pages_fingerprint(["a", "b", "a"])
    assert pages_fingerprint(["a"]) != pages_fingerprint(["a", "c"])


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9])
@pytest.mark.parametrize("second_score", [0.3, 0.95])
@pytest.mark.parametrize("third_score", [None, 0.5, 0.92])
@pytest.mark.parametrize("pinned", [(), ("concepts/home",), ("concepts/dashboard",)])
def test_the_fit_replays_the_rule_the_service_applies(
    p: float, second_score: float, third_score: float | None, pinned: tuple[str, ...],
) -> None:
    """fit-decisions chooses thresholds by replaying recorded signals: it must decide as decide_calibrated."""
    from service.decide.calibration import decision_signals
    from service.decide.decider import replayed_status
    from service.evaluation.decision_metrics import CaseRun

    ranking = [ev("concepts/home", 1.0, "Home > Start"), ev("concepts/dashboard", second_score, "Dashboard > Grid")]
    if third_score is not None:
        ranking.append(ev("concepts/panels", min(third_score, second_score), "Panels > Size"))
    signals = decision_signals(Q, ranking)
    run = CaseRun(case_id="c", phase=2, policy="seed_rules", status="clarify", reason="small_gap", shown=(),
                  ranked=signals.ranking, options=(), features=signals.features, pinned=pinned)
    status, shown, options = replayed_status(run, p, T)
    assert shown == (signals.ranking if status != "no_match" else ())
    decision = decide_calibrated(ranking, Q, p, "p", T, frozenset(pinned))
    assert status == {"Answer": "answer", "Clarify": "clarify", "NoMatch": "no_match"}[type(decision).__name__]
    assert options == tuple(o.doc_slug for o in decision.options)


def test_a_portable_fit_ignores_the_corpus_scaled_signals_and_decides_with_its_own_points() -> None:
    """`fit-decisions --portable`: the BM25F scale and the page count (which grow with a corpus)
    get weight 0, so p is the same whatever they are; a portable fit brings its own points."""
    import random

    from service.decide.calibration import CORPUS_SCALED
    from service.decide.calibration_fit import fit_phase

    rng = random.Random(7)
    rows, labels = [], []
    for _ in range(200):
        right = rng.random() < 0.5
        row = {name: rng.random() for name in FEATURES}
        row["matched_share"] = rng.uniform(0.6, 1.0) if right else rng.uniform(0.0, 0.5)
        row["top_score"] = rng.uniform(5, 40) if right else rng.uniform(0, 10)  # would be learnt if allowed
        rows.append(row)
        labels.append(int(right))
    full = fit_phase(rows, labels)
    portable = fit_phase(rows, labels, excluded=CORPUS_SCALED)
    weight = dict(zip(FEATURES, portable.coef, strict=True))
    assert all(weight[name] == 0.0 for name in CORPUS_SCALED)
    assert dict(zip(FEATURES, full.coef, strict=True))["top_score"] != 0.0
    assert weight["matched_share"] > 1.0
    row = dict(rows[0])
    p = probability(portable, row)
    for name in CORPUS_SCALED:
        row[name] = 1e6  # another corpus's scale
    assert probability(portable, row) == p

    own_points = DecisionFlags(answer_p=(0.5, 0.5, 0.5), no_match_p=(0.1, 0.1, 0.1), ambiguity_ratio=(1.0, 1.0, 1.0))
    model = CalibrationModel(
        format=MODEL_FORMAT, version="portable-x", corpus="a+b", corpus_fingerprint="f", pages_fingerprint="",
        features=FEATURES, phases={"1": portable, "2": portable, "3": portable}, answer_p=(0.9, 0.8, 0.7),
        no_match_p=(0.3, 0.2, 0.1), ambiguity_ratio=(0.95, 0.9, 0.85), library="test", query_set="q",
        fitted_at="now", portable=True,
    )
    assert model.fits(pages_fingerprint(["any/page"])) and model.fits("")
    # Every fit decides with its own points unless a flag overrides one (the flag wins).
    assert model.points(DecisionFlags()).at(2) == DecisionPoint(
        answer_p=0.8, no_match_p=0.2, ambiguity_ratio=0.9, closest_matches_min_p=DecisionFlags().closest_matches_min_p)
    assert model.points(own_points) == own_points
    only_answer = msgspec.structs.replace(DecisionFlags(), answer_p=(0.6, 0.6, 0.6))
    assert model.points(only_answer).at(2) == DecisionPoint(
        answer_p=0.6, no_match_p=0.2, ambiguity_ratio=0.9, closest_matches_min_p=DecisionFlags().closest_matches_min_p)
    own = msgspec.structs.replace(model, portable=False, pages_fingerprint=pages_fingerprint(["a/x"]))
    assert own.points(DecisionFlags()).at(3) == DecisionPoint(
        answer_p=0.7, no_match_p=0.1, ambiguity_ratio=0.85, nothing_similar_below=DecisionFlags().nothing_similar_below,
        closest_matches_min_p=DecisionFlags().closest_matches_min_p)
    assert own.fits(pages_fingerprint(["a/x"])) and not own.fits(pages_fingerprint(["b/y"]))



def test_under_calibrated_a_page_s_title_is_one_signal_not_an_answer_of_its_own() -> None:
    """The named-page rule did not pay on six corpora and is gone from the calibrated policy: the
    seed rules answered "Dashboard" with the page of that title however unsure, the calibrated
    replay decides it by p like any query (here: too unsure, so no match, offering the closest
    pages)."""
    from service.decide.calibration import decision_signals
    from service.decide.decider import replayed_status
    from service.evaluation.decision_metrics import CaseRun

    query = NormalizedQuery(raw="Dashboard", tokens=("dashboard",), phrase="dashboard")
    ranking = [ev("concepts/home", 1.0, "Home > Start"), ev("concepts/dashboard", 0.95, "Dashboard > Grid")]
    signals = decision_signals(query, ranking)
    run = CaseRun(case_id="c", phase=1, policy="seed_rules", status="answer", reason="query_is_title",
                  shown=("concepts/dashboard", "concepts/home"), ranked=signals.ranking, options=(),
                  features=signals.features)
    assert replayed_status(run, 0.05, T) == ("no_match", (), ("concepts/home", "concepts/dashboard"))
    assert replayed_status(run, 0.95, T) == ("clarify", signals.ranking, signals.ranking[:2])  # level: asks


@pytest.mark.parametrize(("top_similarity", "expected"), [(0.09, "no_match"), (0.6, "answer")])
def test_at_phase_3_nothing_near_the_query_is_a_no_match_however_sure_p_is(
    top_similarity: float, expected: str,
) -> None:
    """A format string matches stray words ('{0} %s' -> '0', 's') with a confident p; when no chunk
    is near it (decision.nothing_similar_below) the service declines, saying plainly it found
    nothing, and the fit's replay does the same; at phases 1-2 there is no cosine to judge."""
    from service.decide.decider import NOTHING_SIMILAR, _calibrated, replayed_status
    from service.evaluation.decision_metrics import CaseRun

    ranking = [ev("concepts/home", 1.0, "Home > Start")]
    phase3 = DecisionPoint(answer_p=0.7, no_match_p=0.2, ambiguity_ratio=0.9,
                           nothing_similar_below=DecisionFlags().nothing_similar_below)
    features = dict.fromkeys(FEATURES, 0.0) | {"top_score": 1.0, "tokens": 1.0, "top_similarity": top_similarity}
    run = CaseRun(case_id="c", phase=3, policy="seed_rules", status="answer", reason="r", shown=(),
                  ranked=("concepts/home",), options=(), features=features)
    assert replayed_status(run, 0.99, phase3)[0] == expected
    assert replayed_status(run, 0.99, T)[0] == "answer"  # phases 1-2: no floor
    flags = msgspec.structs.replace(DecisionFlags(), answer_p=(0.7,) * 3, no_match_p=(0.2,) * 3,
                                    ambiguity_ratio=(0.9,) * 3)
    sure = CalibrationModel(
        format=2, version="v", corpus="c", corpus_fingerprint="f", pages_fingerprint="", features=FEATURES,
        phases={str(n): PhaseModel(intercept=5.0, coef=(0.0,) * len(FEATURES), mean=(0.0,) * len(FEATURES),
                                   scale=(1.0,) * len(FEATURES)) for n in (1, 2, 3)},
        answer_p=(0.7,) * 3, no_match_p=(0.2,) * 3, ambiguity_ratio=(0.9,) * 3, library="t", query_set="q",
        fitted_at="now")
    decision = _calibrated(sure, flags, 3, Q, ranking, features)
    assert (type(decision).__name__, decision.reason == NOTHING_SIMILAR) == (
        ("NoMatch", True) if expected == "no_match" else ("Answer", False))
    if expected == "no_match":
        assert not decision.options and not decision.message.endswith("?")


@pytest.mark.parametrize(("p", "offered"), [(0.3, ("a/near", "b/next")), (0.01, ())])
def test_a_no_match_offers_its_closest_pages_only_when_p_says_they_may_help(p: float, offered: tuple[str, ...]) -> None:
    """"What is the capital of France" on a framework's docs: p is near 0 and the closest pages
    ("Component v-model") are noise, so the reply is the plain no match; an unsure in-domain
    question (p 0.3, under the no-match point) still gets them. The replay decides the same."""
    from service.decide.calibration import decide_calibrated
    from service.decide.decider import replayed_status
    from service.evaluation.decision_metrics import CaseRun

    point = DecisionPoint(answer_p=0.7, no_match_p=0.5, ambiguity_ratio=0.9,
                          closest_matches_min_p=DecisionFlags().closest_matches_min_p)
    decision = decide_calibrated([ev("a/near", 1.0), ev("b/next", 0.5)], Q, p, "why", point)
    assert type(decision).__name__ == "NoMatch"
    assert tuple(o.doc_slug for o in decision.options) == offered
    assert ("closest matches" in decision.message.lower()) == bool(offered)
    features = dict.fromkeys(FEATURES, 0.0) | {"top_score": 1.0, "tokens": 2.0, "score_ratio": 0.5,
                                               "top_similarity": 0.4}
    run = CaseRun(case_id="c", phase=3, policy="seed_rules", status="answer", reason="r", shown=(),
                  ranked=("a/near", "b/next"), options=(), features=features)
    assert replayed_status(run, p, point) == ("no_match", (), offered)


def test_held_out_p_is_not_over_confident_where_the_fit_memorises_its_dev_cases() -> None:
    """`fit-decisions` picks answer_p where dev keeps wrong answers <= 3 %.  On its own training
    cases a model's p is over-confident (here: labels that no signal predicts, which a model with
    23 inputs and 60 cases still "learns"), so the points come from p of cases each model never saw."""
    import random

    from service.decide.calibration_fit import FOLDS, REPEATS, cross_fitted, fit_phase, fold_of

    rng = random.Random(11)
    keys = [f"case-{i}" for i in range(60)]
    rows = [{name: rng.gauss(0.0, 1.0) for name in FEATURES} for _ in keys]
    labels = [int(rng.random() < 0.5) for _ in keys]

    def brier(p: list[float]) -> float:
        return sum((pi - y) ** 2 for pi, y in zip(p, labels, strict=True)) / len(labels)

    seen = fit_phase(rows, labels)
    in_sample = brier([probability(seen, row) for row in rows])
    repeats = cross_fitted(keys, rows, labels)
    assert len(repeats) == REPEATS and all(set(held) == set(keys) for held in repeats)
    held_out = [brier([held[key] for key in keys]) for held in repeats]
    assert in_sample < 0.2 < min(held_out)  # memorised vs no better than a coin (0.25)
    # The folds are a hash of the case: a refit on the same cases folds them the same way.
    assert [fold_of(key, 0) for key in keys] == [fold_of(key, 0) for key in keys]
    assert {fold_of(key, 0) for key in keys} == set(range(FOLDS))
    assert cross_fitted(keys, rows, labels) == repeats


def test_a_p_and_its_grid_cell_compare_alike_with_every_threshold_the_fit_tries() -> None:
    """The fit replays each repeat's p once per grid cell (`grid_replay.cell`): that is only the
    same fit if no threshold it tries tells p from its cell."""
    import random

    from service.decide.calibration_fit import ANSWER_GRID, NO_MATCH_GRID
    from service.evaluation.grid_replay import cell

    grid = (*ANSWER_GRID, *NO_MATCH_GRID)
    rng = random.Random(7)
    for p in [rng.random() for _ in range(2000)] + list(grid) + [0.0, 1.0]:
        lowered = cell(p, grid)
        assert all((p >= t) == (lowered >= t) and (p < t) == (lowered < t) for t in grid), p


def test_a_stub_never_answers_when_a_page_with_content_covers_the_query() -> None:
    """Logseq's "Right sidebar" page holds only `type:: [[UI Element]]`: when it leads an answer
    and "How to work with the right-hand sidebar" is among the first pages, that page answers."""
    from service.decide.decider import content_first

    stub = ev("ui/right-sidebar", 1.0, "Right sidebar")
    content = ev("ui/how-to-work-with-the-right-hand-sidebar", 0.8, "How to work with the right-hand sidebar")
    other = ev("ui/left-sidebar", 0.5, "Left sidebar")
    stubs = {"ui/right-sidebar"}.__contains__
    answer = Answer(results=(stub, content, other), confidence=0.9, reason="calibrated")
    first = content_first(answer, stubs)
    assert [e.doc_slug for e in first.results] == [content.doc_slug, other.doc_slug]
    only_stub = Answer(results=(stub,), confidence=0.9, reason="calibrated")
    assert content_first(only_stub, stubs) == only_stub  # nothing better to give
    led_by_content = Answer(results=(content, stub), confidence=0.9, reason="calibrated")
    assert content_first(led_by_content, stubs) == led_by_content
    asked = Clarify(results=(stub, content), confidence=0.5, message="?", options=(), reason="calibrated_ambiguous")
    assert content_first(asked, stubs) == asked  # a question offers what the user can pick from


def test_the_fit_s_replay_lets_a_stub_give_way_as_the_service_does() -> None:
    from service.decide.decider import replayed_status
    from service.evaluation.decision_metrics import CaseRun

    features = dict.fromkeys(FEATURES, 0.0) | {"top_score": 1.0, "tokens": 1.0, "top_similarity": 0.6}
    ranked = ("ui/right-sidebar", "ui/left-sidebar", "ui/how-to-work-with-the-right-hand-sidebar", "ui/search")
    run = CaseRun(case_id="c", phase=3, policy="seed_rules", status="answer", reason="r", shown=ranked,
                  ranked=ranked, options=(), features=features, stubs=("ui/right-sidebar", "ui/left-sidebar"))
    status, shown, _ = replayed_status(run, 0.99, T)
    assert (status, shown) == ("answer", ("ui/how-to-work-with-the-right-hand-sidebar", "ui/search"))
    recorded_before_stubs = msgspec.structs.replace(run, stubs=())
    assert replayed_status(recorded_before_stubs, 0.99, T)[1] == ranked


def test_a_first_page_a_name_of_the_query_pins_down_is_answered() -> None:
    """`storesDirs`, shown on one page: p (fitted on every kind of query) would ask between that page
    and the next; the name says which page is meant. Not below `NAME_PIN_MIN_P`, and only for the
    first page: a pinned second page does not overturn p's ranking."""
    from service.decide.calibration import NAME_PIN_MIN_P

    ranking = [ev("ssr/nuxt", 1.0), ev("core-concepts/plugins", 0.95)]
    point = DecisionPoint(answer_p=0.86, no_match_p=0.4, ambiguity_ratio=0.9)
    assert isinstance(decide_calibrated(ranking, Q, 0.7, "p", point), Clarify)  # p alone asks
    pinned = decide_calibrated(ranking, Q, 0.7, "p", point, frozenset({"ssr/nuxt"}))
    assert isinstance(pinned, Answer) and pinned.reason == "calibrated_name_pins_page"
    assert pinned.results[0].doc_slug == "ssr/nuxt"
    assert isinstance(decide_calibrated(ranking, Q, NAME_PIN_MIN_P - 0.01, "p", point, frozenset({"ssr/nuxt"})),
                      Clarify)
    assert isinstance(decide_calibrated(ranking, Q, 0.7, "p", point, frozenset({"core-concepts/plugins"})), Clarify)


@pytest.mark.parametrize(("tokens", "p", "expected"), [
    (("graph", "view"), 0.82, "answer"),  # a short query names its subject
    (("graph", "view"), 0.78, "clarify"),
    (("open", "graph", "view"), 0.82, "clarify"),  # three words: the fit's own point
    (("graph",), 0.9, "answer"),
])
def test_a_short_query_is_answered_from_its_own_point(tokens: tuple[str, ...], p: float, expected: str) -> None:
    """"graph view", "defineConfig": p, fitted on every kind of query, under-rates a query of one or
    two words whose first page is right; such a query is answered from `SHORT_QUERY_ANSWER_P` when
    the fit's own answer point is higher. The fits' replay decides the same."""
    from service.decide.calibration import SHORT_QUERY_ANSWER_P, decision_signals
    from service.decide.decider import replayed_status
    from service.evaluation.decision_metrics import CaseRun

    assert SHORT_QUERY_ANSWER_P == 0.8
    query = NormalizedQuery(raw=" ".join(tokens), tokens=tokens, phrase=" ".join(tokens))
    ranking = [ev("concepts/graph-view", 1.0), ev("concepts/graph", 0.5)]
    point = DecisionPoint(answer_p=0.86, no_match_p=0.4, ambiguity_ratio=0.9)
    decision = decide_calibrated(ranking, query, p, "p", point)
    assert {"Answer": "answer", "Clarify": "clarify", "NoMatch": "no_match"}[type(decision).__name__] == expected
    signals = decision_signals(query, ranking)
    run = CaseRun(case_id="c", phase=3, policy="seed_rules", status="clarify", reason="r", shown=(),
                  ranked=signals.ranking, options=(), features=signals.features)
    assert replayed_status(run, p, point)[0] == expected


def test_a_question_names_a_category_only_where_it_tells_the_pages_apart() -> None:
    """A corpus without folders files every page under one category (`general`): "Do you mean
    Managing Dependencies (general), Commands (general) or …" repeats a word that helps no one
    pick. Where the categories differ they stay, as the seed plan words its question."""
    from service.decide import clarify

    assert clarify.ambiguous(ev("general/managing-dependencies", 1.0), ev("general/cli", 0.9),
                             ev("general/dependency-specification", 0.8)) == \
        "Do you mean Managing Dependencies, Cli or Dependency Specification?"
    assert clarify.ambiguous(ev("widgets/quick-links", 1.0), ev("concepts/notes", 0.9)) == \
        "Do you mean Quick Links (widgets) or Notes (concepts)?"
    assert clarify.two_needs(ev("general/cli", 1.0), ev("general/libraries", 0.9)) == \
        "You asked about two things: Cli and Libraries. Which one first?"
    assert clarify.closest_matches([ev("general/cli", 0.4)]) == \
        "I couldn't find a page that answers that. The closest matches are Cli."


def test_another_fold_assignment_folds_the_cases_otherwise() -> None:
    from service.decide.calibration_fit import FOLDS, fold_of

    keys = [f"case-{i}" for i in range(200)]
    shipped = [fold_of(key, 0) for key in keys]
    assert shipped == [fold_of(key, 0, salt="") for key in keys]  # the shipped fits' folds are unchanged
    other = [fold_of(key, 0, salt="s1:") for key in keys]
    assert other != shipped and sorted(set(other)) == list(range(FOLDS))
