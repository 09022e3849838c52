"""The operator loop's pure parts: periods, windows, triggers, golden export, question shape."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest

from service.feedback.export import export_cases
from service.feedback.insights import BadWindow, parse_window, triggers
from service.feedback.records import is_question
from service.feedback.review import period_bounds, seed_of
from service.feedback.store import Counts
from service.flags import InsightsFlags


def test_weeks_start_on_monday_and_any_day_names_its_week() -> None:
    now = datetime(2026, 11, 22, 18, 0, tzinfo=UTC)  # a Sunday
    begin, end = period_bounds("week", now=now)
    assert (begin.date(), end.date()) == (date(2026, 11, 16), date(2026, 11, 23))
    assert period_bounds("week", now=now, start=date(2026, 11, 18)) == (begin, end)
    assert seed_of("week", begin) == "week:2026-11-16"
    day = period_bounds("day", now=now)
    assert (day[0].date(), day[1].date()) == (date(2026, 11, 22), date(2026, 11, 23))


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800), ("24h", 86400), ("7d", 604800)])
def test_windows(text: str, seconds: int) -> None:
    assert parse_window(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "7w", "0d", "07d", "10000d", "-1h", "1.5h"])
def test_bad_windows_are_refused(text: str) -> None:
    with pytest.raises(BadWindow):
        parse_window(text)


def test_keyword_match_trigger_names_the_numbers_behind_it() -> None:
    counts = Counts(queries=100, keyword_runs=100, keyword_matched=64)
    fired = triggers(counts, InsightsFlags())[0]
    assert fired["fired"] is True
    assert fired["text"] == "keyword match rate 64 % < 70 % (64/100): consider phase 2"
    calm = triggers(Counts(queries=100, keyword_runs=100, keyword_matched=90), InsightsFlags())[0]
    assert calm["fired"] is False and calm["text"] == "keyword match rate 90 % ≥ 70 % (90/100)"
    thin = triggers(Counts(queries=5, keyword_runs=5, keyword_matched=0), InsightsFlags())[0]
    assert thin["fired"] is None and "5 samples < 20" in thin["text"]


def _row(rid: str, **extra: Any) -> dict[str, Any]:
    return {"request_id": rid, "query": "switch workspaces", "status": "answer", "phase": 2,
            "results": [{"doc_slug": "concepts/workspace"}], "feedback": [], "review": None, **extra}


def test_export_turns_reviews_and_feedback_into_cases_and_refuses_what_it_cannot_check() -> None:
    review = {"verdict": "should_be", "expected_slug": "actions/navigation", "reviewer": "admin@x", "at": "t"}
    rows = [
        _row("a" * 32, review={**review, "verdict": "right"}),
        _row("b" * 32, review=review),
        _row("c" * 32, feedback=[{"verdict": "not_what_i_meant", "expected_slug": None}]),
        _row("d" * 32, query=None, feedback=[{"verdict": "helpful"}]),
        _row("e" * 32, review={**review, "expected_slug": "concepts/gone"}),
    ]
    result = export_cases(rows, {"concepts/workspace", "actions/navigation"})
    right, should, wrong = result.cases
    assert (right.expect.decision, right.expect.top, right.phases) == ("answer", "concepts/workspace", [2])
    assert should.expect.top == "actions/navigation"
    assert wrong.expect.excludes == ["concepts/workspace"] and "answer" in wrong.expect.decision
    assert [(r.request_id[0], r.reason) for r in result.refused] == [
        ("d", "query text not stored (query_log.store_text is off)"),
        ("e", "page concepts/gone is no longer in the corpus"),
    ]
    assert "# refused eeee" in result.yaml()


@pytest.mark.parametrize(("text", "question"), [
    ("how do I edit quick links", True), ("where are my shortcuts?", True), ("quick links", False),
    ("Is there a trash", True), ("homework", False),
])
def test_question_shape(text: str, question: bool) -> None:
    assert is_question(text) is question
