"""The golden dialogue format: what a turn sends, and files that do not say what a user should get."""

from __future__ import annotations

import pytest

from service.golden import (
    GoldenFileError,
    endpoint_of,
    parse_golden_file,
    turn_request,
    turns_after,
)

DIALOGUE = """
dialogues:
  - id: d
    ui_context: {screen: workspace}
    turns:
      - say: home
        expect: {decision: clarify}
      - say: "2"
        expect: {decision: answer, topic: reply, section: Layouts}
      - say: and how do I rename it?
        reply: false
        expect: {decision: answer}
"""


def test_each_turn_sends_the_history_the_screen_and_the_clarification_it_answers() -> None:
    dialogue = parse_golden_file(DIALOGUE).dialogues[0]
    first = turn_request(dialogue, 0, [], None)
    assert first == {"query": "home", "phase": 3, "ui_context": {"screen": "workspace"}}
    asked = {"status": "clarify", "message": "Do you mean …?", "results": [{"doc_slug": "concepts/home"}]}
    history = turns_after("home", asked)
    assert history == [{"role": "user", "content": "home"}, {"role": "assistant", "content": "Do you mean …?"}]
    second = turn_request(dialogue, 1, history, {"v": 1})
    assert second["reply_to"] == {"v": 1} and second["history"] == history
    assert endpoint_of(second) == "/retrieve"
    assert "reply_to" not in turn_request(dialogue, 2, history, {"v": 1})


def test_an_answer_turn_remembers_the_pages_it_answered_with() -> None:
    answered = {"status": "answer", "message": "", "results": [
        {"doc_slug": "a/b", "header_path": "B > One"}, {"doc_slug": "a/b"}, {"doc_slug": "c/d"}]}
    assert turns_after("q", answered)[1] == {"role": "assistant", "content": "B > One", "doc_slugs": ["a/b", "c/d"]}


def test_history_is_cut_to_the_last_ten_turns() -> None:
    dialogue = parse_golden_file(DIALOGUE).dialogues[0]
    history = [{"role": "user", "content": str(n)} for n in range(14)]
    assert turn_request(dialogue, 1, history, None)["history"] == history[-10:]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("dialogues: [{id: d, turns: []}]", "at least one turn"),
        ("dialogues: [{id: d, turns: [{say: hi, reply: true, expect: {decision: answer}}]}]", "first turn"),
        ("dialogues: [{id: d, turns: [{say: hi, expect: {decision: answer, topic: moon}}]}]", "topic"),
        ("dialogues: [{id: d, turns: [{say: hi, expect: {decision: [answer, clarify]}}]}]", "note"),
        ("dialogues: [{id: d, turns: [{say: hi, expect: {decision: answer}}]}, "
         "{id: d, turns: [{say: hi, expect: {decision: answer}}]}]", "duplicate"),
        ("dialogues: [{id: d, turns: [{say: hi, expect: {decision: answer}, mood: 1}]}]", "mood"),
    ],
)
def test_malformed_dialogues_are_rejected_naming_the_problem(text: str, problem: str) -> None:
    with pytest.raises(GoldenFileError, match=problem):
        parse_golden_file(text, "d.yaml")
