"""Greetings and thanks get a reply of their own, never "Are you asking about …?"."""

from __future__ import annotations

import pytest

from service.decide import clarify
from service.flags import Flags
from service.normalize.query import small_talk
from service.pipeline import RetrieveParams
from tests.unit.test_fallback_chain import _pipeline


@pytest.mark.parametrize(("text", "kind"), [
    ("hi there", "greeting"), ("Hello!", "greeting"), ("hey, good morning", "greeting"),
    ("thanks, that helped!", "thanks"), ("thank you so much", "thanks"), ("ok cool", "thanks"), ("lol", "thanks"),
])
def test_greetings_and_thanks_are_small_talk(text: str, kind: str) -> None:
    assert small_talk(text.lower().replace(",", " ").replace("!", " ")) == kind


@pytest.mark.parametrize("text", [
    "hello world", "thanks for the export feature, how do I use it", "how do I change the theme", "great widgets",
    "workspace", "",
])
def test_a_message_about_something_is_not_small_talk(text: str) -> None:
    assert small_talk(text) == ""


@pytest.mark.parametrize("text", ["hi there", "thanks, that helped!"])
async def test_small_talk_is_answered_with_its_own_reply_and_no_page(text: str) -> None:
    pipeline = _pipeline(Flags())
    outcome = await pipeline.run_request(RetrieveParams(query=text))
    assert outcome.status == "no_match" and outcome.reason == "small_talk"
    assert outcome.message in clarify.SMALL_TALK.values() and outcome.results == () and outcome.options == ()


async def test_a_question_after_a_greeting_is_still_searched() -> None:
    outcome = await _pipeline(Flags()).run_request(RetrieveParams(query="hi, explain the workspace canvas"))
    assert outcome.reason != "small_talk" and outcome.results
