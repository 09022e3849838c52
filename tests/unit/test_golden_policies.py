"""Known failures per decision policy, and dialogues pinned to one: what the replay applies."""

from __future__ import annotations

from typing import Any

import pytest

from service.golden import (
    GoldenFileError,
    dialogue_known_failure,
    known_failure_at,
    parse_golden_file,
)
from service.replay import Summary, replay_dialogues, verdict_of

CASES = """
cases:
  - id: everywhere
    query: q
    known_failure: wrong under both
    expect: {decision: answer}
  - id: phased-note
    query: q
    note: "known failure @1,2: wrong at phases 1 and 2"
    expect: {decision: answer}
  - id: calibrated-only
    query: q
    known_failure_under: {calibrated: "@3: asks instead", seed_rules: "answers the wrong page"}
    expect: {decision: answer}
"""


def test_a_policy_s_known_failure_applies_under_that_policy_and_at_its_phases_only() -> None:
    everywhere, phased, calibrated = parse_golden_file(CASES, "c.yaml").cases
    assert known_failure_at(everywhere, 1, "calibrated") == "wrong under both"
    assert [known_failure_at(phased, p, "seed_rules") for p in (1, 2, 3)] == [
        "wrong at phases 1 and 2", "wrong at phases 1 and 2", None]
    assert [known_failure_at(calibrated, p, "calibrated") for p in (1, 2, 3)] == [
        None, None, "calibrated: asks instead"]
    assert known_failure_at(calibrated, 1, "seed_rules") == "seed_rules: answers the wrong page"
    assert known_failure_at(calibrated, 3, None) is None  # policy unknown: only the marks of both


def test_the_verdict_follows_the_policy_in_force() -> None:
    calibrated = parse_golden_file(CASES, "c.yaml").cases[2]
    asked = {"status": "clarify", "message": "?", "results": [], "phase": 3}
    assert verdict_of(calibrated, 3, 200, asked, "calibrated").outcome == "XFAIL"
    assert verdict_of(calibrated, 3, 200, asked, None).outcome == "FAIL"
    answered = {"status": "answer", "message": "", "results": [{"doc_slug": "a"}], "phase": 3}
    assert verdict_of(calibrated, 3, 200, answered, "calibrated").outcome == "XPASS"  # fixed: drop it


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("cases: [{id: c, query: q, known_failure_under: {calibrated: ' '}, expect: {decision: answer}}]",
         "must give the reason"),
        ("cases: [{id: c, query: q, known_failure_under: {calibrated: '@3: '}, expect: {decision: answer}}]",
         "must give the reason"),
        ("cases: [{id: c, query: q, known_failure_under: {bayes: why}, expect: {decision: answer}}]",
         "unknown policy 'bayes'"),
        ("cases: [{id: c, query: q, phase: 1, known_failure_under: {calibrated: '@3: x'}, "
         "expect: {decision: answer}}]", "does not run at"),
        ("dialogues: [{id: d, known_failure_under: {calibrated: ''}, turns: [{say: hi, expect: {decision: answer}}]}]",
         "must give the reason"),
        ("dialogues: [{id: d, policy: seed_rules, turns: [{say: hi, expect: {decision: answer}}]}]",
         "without a `note`"),
        ("dialogues: [{id: d, policy: bayes, note: n, turns: [{say: hi, expect: {decision: answer}}]}]",
         "unknown policy"),
        ("dialogues: [{id: d, policy: seed_rules, note: n, known_failure_under: {calibrated: x}, "
         "turns: [{say: hi, expect: {decision: answer}}]}]", "never runs under"),
    ],
)
def test_policy_marks_without_a_reason_or_a_known_policy_are_rejected(text: str, problem: str) -> None:
    with pytest.raises(GoldenFileError, match=problem):
        parse_golden_file(text, "g.yaml")


DIALOGUES = """
dialogues:
  - id: free
    known_failure_under: {calibrated: answers at once}
    turns: [{say: dock, expect: {decision: clarify}}]
  - id: pinned
    policy: seed_rules
    note: about replying to the seed rules' question
    turns: [{say: dock, expect: {decision: clarify}}]
"""


async def test_a_pinned_dialogue_plays_under_its_policy_or_is_not_evaluated() -> None:
    free, pinned = parse_golden_file(DIALOGUES, "d.yaml").dialogues
    assert dialogue_known_failure(free, "calibrated") == "calibrated: answers at once"
    assert dialogue_known_failure(pinned, "calibrated") is None  # played under seed_rules
    seen: list[str] = []

    def poster(policy: str) -> Any:
        async def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            seen.append(policy)
            status = "clarify" if policy == "seed_rules" else "answer"
            return 200, {"status": status, "message": "", "results": [{"doc_slug": "dock"}], "phase": 3}
        return post

    results = await replay_dialogues([free, pinned], poster("calibrated"), policy="calibrated", pinned=poster)
    assert [r.outcome for r in results] == ["XFAIL", "PASS"]
    assert seen == ["calibrated", "seed_rules"]
    unplayable = await replay_dialogues([pinned], poster("calibrated"), policy="calibrated")
    assert [r.outcome for r in unplayable] == ["SKIP"]
    assert "pinned to seed_rules" in Summary(unplayable).line()
