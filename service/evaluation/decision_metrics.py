"""Decision and ranking metrics over labelled cases (pure; `decisions.py` runs the service).

Definitions (the issue's, made exact):
- coverage: answerable cases (right decision `answer`) that were answered;
- wrong-answer rate: answers whose first page (as the response shows it) is not one of the
  case's acceptable pages, over all answers of every kind (an out-of-domain answer is wrong);
- out-of-domain answered: out-of-domain cases answered;
- ambiguous clarified: ambiguous cases answered with a clarification, and with one whose
  options include the case's pages (all of them, or at least two when it lists more);
- decision as labelled (`decision_accuracy`): the status alone matches the label (the confusion
  matrix's diagonal: an answer with a wrong page counts);
- right outcome (`right_outcomes`): the labelled decision, and for an answer the right page
  first, for a clarification the right options (`right_outcome`; what `fit-decisions` maximises);
- top-1, top-3, MRR@10 per kind: the ranking by score (distinct pages), against the case's
  pages; out-of-domain cases have no right page and are left out;
- ranking ceilings (`ranking_ceiling`): what no decision rule can exceed on a given ranking.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from service.evaluation.labelled import KINDS, LabelledQuery

DECISIONS: tuple[str, ...] = ("answer", "clarify", "no_match")


class CaseRun(msgspec.Struct, frozen=True, kw_only=True):
    """What the service did with one case at one phase (the cache's row)."""

    case_id: str
    phase: int
    policy: str
    """seed_rules | calibrated (`decision.policy` the run was made under)"""
    status: str
    """answer | clarify | no_match | disabled"""
    reason: str
    shown: tuple[str, ...]
    """Distinct pages in the order the response lists them."""
    ranked: tuple[str, ...]
    """Distinct pages of the ranking by score, best first (up to 10)."""
    options: tuple[str, ...]
    features: dict[str, float]
    answered_phase: int = 0
    """The phase that produced the response (lower when a tier fell back)."""
    semantic_ranked: tuple[str, ...] = ()
    """Phase 3: the semantic leg's pages alone, best cosine first (`DecisionSignals.semantic_ranking`)."""
    pinned: tuple[str, ...] = ()
    """The pages a name of the query pins down (`DecisionSignals.pinned`): `decider.replayed_status`
    answers with a first page among them as the service does."""
    stubs: tuple[str, ...] = ()
    """The stub pages among `ranked` (`Document.stub`): an answer led by one gives way to a page
    with content (`decider.content_first`), and the replay must know which they are."""


def top_is_right(case: LabelledQuery, pages: Sequence[str]) -> bool:
    return bool(pages) and pages[0] in case.pages


def clarification_is_right(case: LabelledQuery, options: Sequence[str]) -> bool:
    need = min(len(case.pages), 2)
    return sum(page in options for page in case.pages) >= need


def right_outcome(case: LabelledQuery, status: str, shown: Sequence[str], options: Sequence[str]) -> bool:
    """The labelled decision, and for an answer the right page first, for a clarification the right options."""
    if status != case.decision:
        return False
    if status == "answer":
        return top_is_right(case, shown)
    if status == "clarify":
        return clarification_is_right(case, options)
    return True


def reciprocal_rank(case: LabelledQuery, ranked: Sequence[str], k: int = 10) -> float:
    for i, page in enumerate(ranked[:k], start=1):
        if page in case.pages:
            return 1.0 / i
    return 0.0


def _share(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


@dataclass(frozen=True)
class DecisionReport:
    cases: int
    confusion: dict[str, dict[str, int]]
    """right decision → what the service did → count."""
    coverage: float | None
    answers: int
    wrong_answers: int
    wrong_rate: float | None
    ood_answered: float | None
    ambiguous_clarified: float | None
    ambiguous_right_options: float | None
    decision_accuracy: float | None
    right_outcomes: float | None
    per_kind: dict[str, dict[str, float | int | None]]

    def as_dict(self) -> dict[str, object]:
        return {
            "cases": self.cases, "confusion": self.confusion, "coverage": self.coverage,
            "answers": self.answers, "wrong_answers": self.wrong_answers, "wrong_rate": self.wrong_rate,
            "ood_answered": self.ood_answered, "ambiguous_clarified": self.ambiguous_clarified,
            "ambiguous_right_options": self.ambiguous_right_options,
            "decision_accuracy": self.decision_accuracy, "right_outcomes": self.right_outcomes,
            "per_kind": self.per_kind,
        }


def report(pairs: Iterable[tuple[LabelledQuery, CaseRun]]) -> DecisionReport:
    pairs = list(pairs)
    confusion = {want: dict.fromkeys((*DECISIONS, "disabled"), 0) for want in DECISIONS}
    answerable = covered = answers = wrong = ood = ood_answered = 0
    amb = amb_clarified = amb_right = correct = right = 0
    for case, run in pairs:
        confusion[case.decision][run.status] = confusion[case.decision].get(run.status, 0) + 1
        correct += run.status == case.decision
        right += right_outcome(case, run.status, run.shown, run.options)
        if run.status == "answer":
            answers += 1
            wrong += not top_is_right(case, run.shown)
        if case.decision == "answer":
            answerable += 1
            covered += run.status == "answer"
        if case.kind == "out_of_domain":
            ood += 1
            ood_answered += run.status == "answer"
        if case.kind == "ambiguous":
            amb += 1
            if run.status == "clarify":
                amb_clarified += 1
                amb_right += clarification_is_right(case, run.options)
    return DecisionReport(
        cases=len(pairs), confusion=confusion, coverage=_share(covered, answerable),
        answers=answers, wrong_answers=wrong, wrong_rate=_share(wrong, answers),
        ood_answered=_share(ood_answered, ood), ambiguous_clarified=_share(amb_clarified, amb),
        ambiguous_right_options=_share(amb_right, amb), decision_accuracy=_share(correct, len(pairs)),
        right_outcomes=_share(right, len(pairs)), per_kind=per_kind(pairs),
    )


def per_kind(pairs: Sequence[tuple[LabelledQuery, CaseRun]]) -> dict[str, dict[str, float | int | None]]:
    """top-1, top-3 and MRR@10 of the ranking by score, per kind and for all ranked kinds."""
    sums: Counter[tuple[str, str]] = Counter()
    for case, run in pairs:
        if not case.pages:
            continue
        for kind in (case.kind, "all"):
            sums[(kind, "n")] += 1
            sums[(kind, "top1")] += top_is_right(case, run.ranked)
            sums[(kind, "top3")] += any(page in case.pages for page in run.ranked[:3])
            sums[(kind, "mrr")] += reciprocal_rank(case, run.ranked)  # type: ignore[assignment]
    out: dict[str, dict[str, float | int | None]] = {}
    for kind in (*KINDS, "all"):
        n = int(sums[(kind, "n")])
        if n == 0:
            continue
        out[kind] = {
            "n": n,
            "top1": round(sums[(kind, "top1")] / n, 4),
            "top3": round(sums[(kind, "top3")] / n, 4),
            "mrr@10": round(sums[(kind, "mrr")] / n, 4),
        }
    return out


@dataclass(frozen=True)
class RankingCeiling:
    """The most any decision rule can reach when it may only answer with, or offer, the ranking's
    first pages: it answers exactly the answerable cases whose first page is right, then as many
    others as `max_wrong` allows; it asks between the ranking's two (three) best pages."""

    coverage: float | None
    ambiguous_in_top2: float | None
    ambiguous_in_top3: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {"coverage": self.coverage, "ambiguous_in_top2": self.ambiguous_in_top2,
                "ambiguous_in_top3": self.ambiguous_in_top3}


def ranking_ceiling(pairs: Iterable[tuple[LabelledQuery, CaseRun]], max_wrong: float) -> RankingCeiling:
    answerable = right_first = ambiguous = in_top2 = in_top3 = 0
    for case, run in pairs:
        if case.decision == "answer":
            answerable += 1
            right_first += top_is_right(case, run.ranked)
        if case.kind == "ambiguous":
            ambiguous += 1
            in_top2 += clarification_is_right(case, run.ranked[:2])
            in_top3 += clarification_is_right(case, run.ranked[:3])
    # w wrong answers beside r right ones keep w / (r + w) <= max_wrong.
    wrong_allowed = int(max_wrong * right_first / (1.0 - max_wrong) + 1e-9)
    covered = right_first + min(wrong_allowed, answerable - right_first)
    return RankingCeiling(coverage=_share(covered, answerable), ambiguous_in_top2=_share(in_top2, ambiguous),
                          ambiguous_in_top3=_share(in_top3, ambiguous))


@dataclass(frozen=True)
class CurvePoint:
    threshold: float
    coverage: float
    risk: float
    answers: int


def risk_coverage(points: Sequence[tuple[float, bool, bool]]) -> list[CurvePoint]:
    """Answer iff score ≥ threshold, for every distinct score as threshold (high → low).

    `points` are (score, answerable, top page right): coverage and risk as in `report`.
    """
    answerable = sum(1 for _, a, _ in points if a)
    curve: list[CurvePoint] = []
    ordered = sorted(points, key=lambda p: -p[0])
    answered = covered = wrong = 0
    i = 0
    while i < len(ordered):
        threshold = ordered[i][0]
        while i < len(ordered) and ordered[i][0] == threshold:
            _, is_answerable, right = ordered[i]
            answered += 1
            covered += is_answerable
            wrong += not right
            i += 1
        curve.append(CurvePoint(
            threshold=threshold, coverage=covered / answerable if answerable else 0.0,
            risk=wrong / answered, answers=answered,
        ))
    return curve


def best_threshold(curve: Sequence[CurvePoint], max_risk: float) -> CurvePoint | None:
    """The lowest threshold (most coverage) whose risk stays within `max_risk`."""
    ok = [p for p in curve if p.risk <= max_risk]
    return min(ok, key=lambda p: p.threshold) if ok else None
