"""Replay verdicts: a case the kill switch or the flags answered below its phase is not a wrong answer."""

from __future__ import annotations

from typing import Any

from service.golden import Expectation, GoldenCase
from service.replay import Summary, verdict_of

CASE = GoldenCase(id="ws", query="explain workspace", expect=Expectation(decision="answer", top="concepts/workspace"))


def payload(phase: int, *steps: tuple[str, str], status: str = "answer", top: str = "concepts/workspace") -> dict[str, Any]:
    return {
        "status": status, "message": "", "options": [], "confidence": 0.9, "phase": phase,
        "results": [] if status == "disabled" else [{"doc_slug": top, "title": "t", "category": "concepts"}],
        "fallback_path": [{"tier": t, "reason": r} for t, r in steps],
    }


def test_answered_at_its_phase_passes_or_fails_on_the_expectation() -> None:
    assert verdict_of(CASE, 3, 200, payload(3)).verdict == "pass"
    wrong = verdict_of(CASE, 3, 200, payload(3, top="widgets/recent"))
    assert wrong.verdict == "fail" and wrong.line().startswith("FAIL [phase 3] ws")


def test_kill_switch_and_flag_caps_are_named_not_failed() -> None:
    tripped = verdict_of(CASE, 3, 200, payload(2, ("phase3", "kill switch: p95 612 ms > 500 ms over 300 s")))
    assert (tripped.verdict, tripped.detail) == ("kill switch active", "kill switch: p95 612 ms > 500 ms over 300 s")
    capped = verdict_of(CASE, 3, 200, payload(1, ("phase3", "flags: phase 1"), ("phase2", "flags: phase 1")))
    assert (capped.verdict, capped.detail) == ("capped by flags", "capped by flags at phase 1")
    killed = verdict_of(CASE, 1, 200, payload(0, ("phase1", "kill switch: manual kill (drill)"), status="disabled"))
    assert killed.verdict == "kill switch active" and killed.line().startswith("SKIP [phase 1] ws")
    summary = Summary([tripped, capped, killed, verdict_of(CASE, 1, 200, payload(1))])
    assert (summary.passed, summary.failed, summary.skipped) == (1, 0, 3)
    assert summary.line().startswith("1 passed, 0 failed, 3 not evaluated at their phase")


def test_a_tier_failure_below_the_phase_is_still_a_failure() -> None:
    fell = verdict_of(CASE, 3, 200, payload(2, ("phase3", "ConnectionError: connection refused")))
    assert fell.verdict == "fail" and "answered by phase 2" in fell.failures[-1]
