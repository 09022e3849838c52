"""`eval-decisions --cross-corpus` on a small fixture: each corpus is decided by the fit made
without it, and the table counts what a user would notice."""

from __future__ import annotations

from itertools import count

from service.decide.calibration import FEATURES, MODEL_FORMAT, CalibrationModel, PhaseModel
from service.evaluation.cross_corpus import POLICIES, CorpusRuns, leave_one_out, markdown
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.labelled import LabelledQuery, split_of

_ids = count()


def held_out_id(prefix: str) -> str:
    """The next id of this prefix that the hash puts in the test split."""
    while True:
        case_id = f"{prefix}-{next(_ids):04d}"
        if split_of(case_id) == "test":
            return case_id


def fit_answering(always: bool) -> CalibrationModel:
    """A portable fit whose p is ~1 (answers) or ~0 (declines) for every case."""
    n = len(FEATURES)
    phase = PhaseModel(intercept=8.0 if always else -8.0, coef=(0.0,) * n, mean=(0.0,) * n, scale=(1.0,) * n)
    return CalibrationModel(
        format=MODEL_FORMAT, version=f"fit-{always}", corpus="x", corpus_fingerprint="f", pages_fingerprint="",
        features=FEATURES, phases={"1": phase, "2": phase, "3": phase}, answer_p=(0.7,) * 3,
        no_match_p=(0.3,) * 3, ambiguity_ratio=(1.01,) * 3, library="t", query_set="q", fitted_at="t", portable=True,
    )


def corpus(name: str) -> CorpusRuns:
    """One answerable question whose first page is right, one out-of-domain question; the seed
    rules asked about the first and answered the second."""
    features = dict.fromkeys(FEATURES, 0.0) | {"top_score": 1.0, "tokens": 2.0, "score_ratio": 0.2,
                                                   "top_similarity": 0.6}  # a phase-3 run found near chunks
    question = LabelledQuery(id=held_out_id(name), query="how do I x", kind="question", decision="answer", pages=(f"{name}/x",))
    outside = LabelledQuery(id=held_out_id(name), query="weather", kind="out_of_domain", decision="no_match")
    runs = []
    for phase in (2, 3):
        ranked = (f"{name}/x", f"{name}/y")
        runs.append(CaseRun(case_id=question.id, phase=phase, policy="seed_rules", status="clarify", reason="low_score",
                            shown=ranked, ranked=ranked, options=ranked, features=features,
                            semantic_ranked=(f"{name}/y", f"{name}/z", f"{name}/w")))
        runs.append(CaseRun(case_id=outside.id, phase=phase, policy="seed_rules", status="answer", reason="confident",
                            shown=(f"{name}/y",), ranked=(f"{name}/y",), options=(), features=features))
    return CorpusRuns(name=name, cases=[question, outside], runs=runs)


def test_each_corpus_is_decided_by_the_fit_made_without_it() -> None:
    corpora = [corpus("a"), corpus("b")]
    table = leave_one_out(corpora, {"a": fit_answering(True), "b": fit_answering(False)})
    seed, loco = (table[p] for p in POLICIES)
    # The seed rules' own decisions: a needless question, a wrong answer to the out-of-domain one.
    assert seed["a"]["needless_clarifications"] == 1.0 and seed["a"]["wrong_of_answers"] == 1.0
    assert seed["pooled"]["right_outcome"] == 0.0 and seed["pooled"]["cases"] == 4
    # "a" by the answering fit: the question answered right, the out-of-domain one answered wrong.
    assert loco["a"]["right_outcome"] == 0.5 and loco["a"]["wrong_answers"] == 1 and loco["a"]["answers"] == 2
    # "b" by the declining fit: no match for both (right only for the out-of-domain one).
    assert loco["b"]["ood_no_match"] == 1.0 and loco["b"]["answers"] == 0 and loco["b"]["right_outcome"] == 0.5
    assert loco["pooled"]["right_outcome"] == 0.5 and loco["pooled"]["wrong_of_all"] == 0.25
    # The legs beside the fusion on the question: fused and keyword have the page, semantic does not.
    assert (seed["pooled"]["fused_top3"], seed["pooled"]["keyword_top3"], seed["pooled"]["semantic_top3"]) == (2, 2, 0)
    assert "| pooled |" in markdown(table)


def test_split_totals_count_each_corpus_under_the_fit_made_without_it() -> None:
    from service.evaluation.cross_corpus import split_totals

    corpora = [corpus("a"), corpus("b")]
    totals = split_totals(corpora, {"a": fit_answering(True), "b": fit_answering(False)}, "test")
    # "a" answers both (one right, one out-of-domain answered wrongly); "b" declines both.
    assert totals == {"cases": 4, "right": 2, "wrong": 1, "answers": 2}
    assert split_totals(corpora, {"a": fit_answering(True), "b": fit_answering(True)}, "dev")["cases"] == 0


def test_the_ranking_is_reported_per_kind_of_case() -> None:
    from service.evaluation.cross_corpus import kinds_markdown, per_kind

    kinds = per_kind([corpus("a"), corpus("b")])
    # Only cases with a right page count: the out-of-domain ones have none to rank.
    assert kinds == {"question": {"n": 2, "top1": 1.0, "top3": 1.0}}
    assert "| question | 2 | 100.0 % | 100.0 % |" in kinds_markdown(kinds)


def test_a_message_with_two_needs_counts_when_both_pages_are_given() -> None:
    """Issue 40's measure for two needs in one message: both pages among an answer's first three
    pages, or among a clarification's options; one page, or a no match, does not count."""
    from service.evaluation.cross_corpus import both_needs_shown, identifier_cases

    case = LabelledQuery(id="m", query="a and b", kind="multi_intent", decision="answer", pages=("a", "b"))
    assert both_needs_shown(case, "answer", ("a", "c", "b"), ())
    assert not both_needs_shown(case, "answer", ("a", "c", "d", "b"), ())
    assert both_needs_shown(case, "clarify", ("a",), ("b", "a"))
    assert not both_needs_shown(case, "clarify", ("a", "b"), ("a", "c"))
    assert not both_needs_shown(case, "no_match", (), ("a", "b"))
    # and the identifier cases are counted per corpus by their note, first page right or not
    named = LabelledQuery(id=held_out_id("ids"), query="raise_for_status", kind="keyword", decision="answer",
                          pages=("api",), note="identifier; release question")
    runs = [CaseRun(case_id=named.id, phase=3, policy="seed_rules", status="answer", reason="r", shown=("api",),
                    ranked=("api",), options=(), features={})]
    assert identifier_cases([CorpusRuns(name="c", cases=[named], runs=runs)]) == {"c": {"n": 1, "top1": 1}}
