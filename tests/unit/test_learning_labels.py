"""Reviewed queries → the corpus's own labelled set (`evaluation/from_review.py`), no I/O: the
golden export's mapping of each verdict, what is refused and why, one case per query text,
and how many more reviews a fit needs."""

from __future__ import annotations

from typing import Any

from service.evaluation.from_review import MIN_CASES, MIN_HELD_OUT, case_id, labelled_from
from service.evaluation.labelled import split_of

PAGES = {"widgets/quick-links", "widgets/recent", "concepts/home", "concepts/dashboard"}


def row(rid: str, query: str | None, status: str, verdict: str, *, top: str | None = "widgets/recent",
        expected: str | None = None, options: tuple[str, ...] = (), at: str = "2026-11-25T10:00:00",
        in_conversation: bool = False, feedback: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "request_id": rid, "query": query, "status": status, "phase": 3, "in_conversation": in_conversation,
        "results": [{"doc_slug": top}] if top else [], "options": [{"doc_slug": s} for s in options],
        "feedback": feedback or [],
        "review": {"verdict": verdict, "expected_slug": expected, "reviewer": "admin@x", "at": at},
    }


def test_each_verdict_gives_the_label_the_golden_export_gives() -> None:
    reviewed = labelled_from([
        row("r1", "where are my shortcuts", "clarify", "should_be", expected="widgets/quick-links"),
        row("r2", "recently opened", "answer", "right"),
        row("r3", "home", "clarify", "right", options=("concepts/home", "concepts/dashboard")),
        row("r4", "quick capture from whatsapp", "answer", "wrong",
            feedback=[{"verdict": "not_what_i_meant", "expected_slug": None}]),
        row("r5", "send an email", "no_match", "right", top=None),
    ], PAGES)
    got = {reviewed.request_of[c.id]: (c.kind, c.decision, c.pages) for c in reviewed.cases}
    assert got == {
        "r1": ("question", "answer", ("widgets/quick-links",)),
        "r2": ("keyword", "answer", ("widgets/recent",)),
        "r3": ("ambiguous", "clarify", ("concepts/home", "concepts/dashboard")),
        "r4": ("out_of_domain", "no_match", ()),  # wrong, naming no page: the answer should not have been given
        "r5": ("out_of_domain", "no_match", ()),
    }
    assert reviewed.refused == []


def test_what_says_nothing_about_the_right_decision_is_refused_with_the_reason() -> None:
    reviewed = labelled_from([
        row("r1", None, "answer", "right"),
        row("r2", "and delete it?", "answer", "right", in_conversation=True),
        row("r3", "widget colours", "clarify", "wrong", options=("widgets/recent", "concepts/home")),
        row("r4", "old page", "answer", "should_be", expected="concepts/gone"),
        row("r5", "is it here", "clarify", "right", options=("widgets/recent",)),
    ], PAGES)
    assert reviewed.cases == []
    reasons = {r.request_id: r.reason for r in reviewed.refused}
    assert "not stored" in reasons["r1"] and "conversation" in reasons["r2"]
    assert "should_be" in reasons["r3"] and "concepts/gone" in reasons["r4"] and "two options" in reasons["r5"]


def test_one_case_per_query_text_the_newest_review_wins() -> None:
    reviewed = labelled_from([
        row("new", "Recently opened?", "answer", "should_be", expected="concepts/home", at="2026-11-25T12:00:00"),
        row("old", "recently  opened", "answer", "right", at="2026-11-25T11:00:00"),
    ], PAGES)
    assert [(reviewed.request_of[c.id], c.pages) for c in reviewed.cases] == [("new", ("concepts/home",))]
    assert [r.request_id for r in reviewed.refused] == ["old"]
    assert case_id("Recently opened?") == case_id("recently opened")


def test_too_few_reviews_say_how_many_more_at_least() -> None:
    queries = [f"query number {i}" for i in range(MIN_CASES - 5)]
    reviewed = labelled_from([row(f"r{i}", q, "answer", "right") for i, q in enumerate(queries)], PAGES)
    held = sum(split_of(case_id(q)) == "test" for q in queries)
    assert len(reviewed.held_out) == held
    more = max(5, MIN_HELD_OUT - held)
    assert f"review at least {more} more" in (reviewed.shortfall() or "")
    enough = [f"query number {i}" for i in range(3 * MIN_CASES)]
    assert labelled_from([row(f"r{i}", q, "answer", "right") for i, q in enumerate(enough)], PAGES).shortfall() is None
