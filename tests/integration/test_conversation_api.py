"""Conversations over HTTP (issue 20): replies to clarifications, carried topics, the screen.

Everything goes through POST /retrieve (and /context) of the real app on the seed
corpus; the second-replica tests start another app on the same database, so a
clarification issued by one replica is answered, or refused, by the other.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from service.api.conversation import CLOCK_KEY
from service.state import get_state
from tests.conftest import (
    ADMIN_TOKEN_FOR_TESTS,
    PROJECT_ROOT,
    app_settings,
    decision_policy,
    wait_until_ready,
)

Json = dict[str, Any]


async def _ask(client: Any, query: str, **fields: Any) -> Json:
    response = await client.post("/retrieve", json={"query": query, **fields})
    assert response.status_code == 200, response.text
    payload: Json = response.json()
    return payload


def _answer_turns(query: str, payload: Json) -> list[Json]:
    slugs = list(dict.fromkeys(r["doc_slug"] for r in payload["results"]))
    return [{"role": "user", "content": query},
            {"role": "assistant", "content": payload["message"] or "answered", "doc_slugs": slugs}]


def _top(payload: Json) -> tuple[str, str]:
    first = payload["results"][0]
    return first["doc_slug"], first.get("header_path") or ""


@pytest.fixture
async def seed_plan_client(service_client: Any) -> AsyncIterator[Any]:
    """The shared app under the seed rules, for the tests about replying to the seed plan's
    question "home" (Home, or Dashboard through the synonym): the default (calibrated) answers
    "home" with Home at once, since the synonym question did not pay on six corpora
    (docs/quality/cross-corpus.md), so it has no question to reply to."""
    async with decision_policy(service_client, "seed_rules"):
        yield service_client


# -- clarification in every response -------------------------------------------
async def test_every_response_has_a_clarification_field_set_exactly_when_it_asks(seed_plan_client: Any) -> None:
    answer = await _ask(seed_plan_client, "explain workspace")
    assert answer["status"] == "answer" and answer["clarification"] is None
    asked = await _ask(seed_plan_client, "home")
    assert asked["status"] == "clarify"
    clarification = asked["clarification"]
    assert clarification["query"] == "home"
    assert [o["doc_slug"] for o in clarification["options"]] == [o["doc_slug"] for o in asked["options"]]
    assert clarification["kind"] == "choose" and len(clarification["signature"]) == 64


# -- every kind of reply ---------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "slug"),
    [
        ("Home", "concepts/home"),                     # the option's title
        ("concepts/home", "concepts/home"),            # its slug
        ("the dashboard one", "concepts/dashboard"),   # a title inside the reply
        ("the first one", "concepts/home"),            # an ordinal
        ("2", "concepts/dashboard"),
        ("second", "concepts/dashboard"),
    ],
)
async def test_a_reply_to_a_clarification_answers_with_the_chosen_page(
    seed_plan_client: Any, reply: str, slug: str
) -> None:
    asked = await _ask(seed_plan_client, "home")
    answered = await _ask(seed_plan_client, reply, reply_to=asked["clarification"])
    assert answered["status"] == "answer"
    assert answered["results"][0]["doc_slug"] == slug
    assert answered["clarification"] is None
    assert answered["conversation"]["topic"] == "reply"
    assert answered["conversation"]["chosen"] == slug


async def test_the_readmes_clarification_example_holds_under_the_default(service_client: Any) -> None:
    # README "A first query" and docs/mcp.md show this exchange to a new user, under the default.
    asked = await _ask(service_client, "links")
    assert asked["status"] == "clarify"
    assert asked["message"] == "Do you mean Links Overview (widgets), Quick Links (widgets) or Notes (concepts)?"
    assert [o["title"] for o in asked["options"]] == ["Links Overview", "Quick Links", "Notes"]
    answered = await _ask(service_client, "the quick links one", reply_to=asked["clarification"])
    assert answered["status"] == "answer"
    assert answered["results"][0]["doc_slug"] == "widgets/quick-links"


async def test_the_chosen_page_answers_the_original_question_with_its_best_section(service_client: Any) -> None:
    # About replying to a question: under the seed rules, which ask it. Since issue 40's word stems
    # the default gives no match with the closest pages for this query (golden dialogue
    # remove-widget-pick-widget-manager says so).
    async with decision_policy(service_client, "seed_rules"):
        asked = await _ask(service_client, "how do I remove a widget")
        assert asked["status"] == "clarify"
        assert "widgets/widget-manager" in [o["doc_slug"] for o in asked["options"]]
        answered = await _ask(service_client, "Widget Manager", reply_to=asked["clarification"])
        assert _top(answered) == ("widgets/widget-manager", "Widget Manager > Removing a widget")
        assert answered["conversation"]["query"] == "how do I remove a widget"


async def test_a_category_word_picks_the_only_option_of_that_category(service_client: Any) -> None:
    # The seed rules offer one page per category here (calibrated offers two widgets pages).
    async with decision_policy(service_client, "seed_rules"):
        asked = await _ask(service_client, "how do I remove a widget")
        categories = {o["category"]: o["doc_slug"] for o in asked["options"]}
        assert len(categories) == len(asked["options"]), "needs options of distinct categories"
        category, slug = next(iter(categories.items()))
        answered = await _ask(service_client, f"the {category} one", reply_to=asked["clarification"])
    assert answered["results"][0]["doc_slug"] == slug


async def test_yes_takes_the_suggestion_and_no_offers_the_rest_once_then_gives_up(service_client: Any) -> None:
    """Issue 35 item 5: "no" to a clarification offers the remaining pages once, together, and a
    second "no" says there is nothing better, instead of walking on page by page. The seed rules
    ask "Are you asking about Dock?" for "dock" (the calibrated policy answers it at once)."""
    async with decision_policy(service_client, "seed_rules"):
        await _no_offers_the_rest_once(service_client)


async def _no_offers_the_rest_once(service_client: Any) -> None:
    asked = await _ask(service_client, "dock")
    clarification = asked["clarification"]
    assert clarification["kind"] in ("weak", "confirm")
    first, rest = clarification["options"][0], clarification["options"][1:]
    assert rest, clarification

    yes = await _ask(service_client, "yes", reply_to=clarification)
    assert (yes["status"], yes["results"][0]["doc_slug"]) == ("answer", first["doc_slug"])

    no = await _ask(service_client, "no", reply_to=clarification)
    assert no["status"] == "clarify"
    assert {o["doc_slug"] for o in no["clarification"]["options"]} == {o["doc_slug"] for o in rest}
    assert first["doc_slug"] not in {o["doc_slug"] for o in no["clarification"]["options"]}
    assert no["clarification"]["query"] == "dock"

    again = await _ask(service_client, "no", reply_to=no["clarification"])
    assert again["status"] == "no_match"
    assert again["message"] == "I have nothing better to suggest. Tell me the name of the feature or page and I will look again."


async def test_a_reply_that_is_a_new_question_is_answered_as_one(seed_plan_client: Any) -> None:
    asked = await _ask(seed_plan_client, "home")
    answered = await _ask(seed_plan_client, "how do I rename a workspace", reply_to=asked["clarification"])
    assert _top(answered) == ("actions/workspaces", "Workspace Actions > Renaming a workspace")
    assert answered["conversation"]["reply"] == "new question"


async def test_context_takes_the_same_conversation_fields(seed_plan_client: Any) -> None:
    asked = (await seed_plan_client.post("/context", json={"query": "home"})).json()
    assert asked["status"] == "clarify" and asked["clarification"] is not None
    response = await seed_plan_client.post("/context", json={"query": "2", "reply_to": asked["clarification"]})
    assert response.status_code == 200, response.text
    payload = response.json()
    assert payload["status"] == "answer"
    docs = next(s for s in payload["sections"] if s["citations"])
    assert docs["citations"][0]["doc_slug"] == "concepts/dashboard"


# -- topics carried, and not ---------------------------------------------------------
async def test_a_follow_up_without_a_topic_carries_the_last_answered_one(service_client: Any) -> None:
    first = "how do I rename a workspace"
    answered = await _ask(service_client, first)
    follow = await _ask(service_client, "and how do I delete it?", history=_answer_turns(first, answered))
    assert _top(follow) == ("actions/workspaces", "Workspace Actions > Deleting a workspace")
    assert follow["conversation"]["topic"] == "history"
    assert follow["conversation"]["from_turn"] == 0
    assert "workspace" in follow["conversation"]["query"]


async def test_the_latest_answered_turn_is_the_one_carried(service_client: Any) -> None:
    history = [
        *_answer_turns("how do I rename a workspace", await _ask(service_client, "how do I rename a workspace")),
        *_answer_turns("how do I rename a note", await _ask(service_client, "how do I rename a note")),
    ]
    follow = await _ask(service_client, "and how do I delete it?", history=history)
    assert follow["conversation"]["from_turn"] == 2
    assert _top(follow)[0] == "actions/notes"


async def test_the_query_log_keeps_the_conversation_fields(service_client: Any) -> None:
    history = _answer_turns("how do I rename a workspace", await _ask(service_client, "how do I rename a workspace"))
    follow = await _ask(service_client, "and how do I delete it?", history=history, ui_context={"screen": "workspace"})
    logged = (await service_client.get(f"/admin/queries/{follow['request_id']}",
                                       headers={"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"})).json()
    assert logged["conversation"]["history_turns"] == 2
    assert logged["conversation"]["ui_context"]["screen"] == "workspace"


async def test_a_message_with_its_own_topic_ignores_history(service_client: Any) -> None:
    history = _answer_turns("how do I rename a workspace", await _ask(service_client, "how do I rename a workspace"))
    own = await _ask(service_client, "how do I delete a note", history=history)
    alone = await _ask(service_client, "how do I delete a note")
    assert own["conversation"]["topic"] == "message" and own["conversation"]["from_turn"] is None
    assert _top(own) == _top(alone)


async def test_a_message_about_something_the_docs_never_mention_is_not_a_follow_up(service_client: Any) -> None:
    history = _answer_turns("how do I rename a workspace", await _ask(service_client, "how do I rename a workspace"))
    payload = await _ask(service_client, "send an email to my boss", history=history)
    assert payload["conversation"]["topic"] == "message"
    assert payload["status"] == "no_match"


# -- the screen ----------------------------------------------------------------
async def test_this_on_a_workspace_screen_means_the_workspace(service_client: Any) -> None:
    payload = await _ask(service_client, "how do I rename this", ui_context={"screen": "workspace"})
    assert _top(payload) == ("actions/workspaces", "Workspace Actions > Renaming a workspace")
    assert payload["conversation"]["topic"] == "screen"
    assert payload["conversation"]["screen"] == "workspace"


async def test_this_widget_means_the_focused_widget(service_client: Any) -> None:
    screen = {"screen": "dashboard", "focused": "widget:quick_links", "visible_widgets": ["quick_links", "recent"]}
    payload = await _ask(service_client, "how do I remove this widget", ui_context=screen)
    assert payload["results"][0]["doc_slug"] == "widgets/quick-links"


async def test_the_screen_breaks_a_near_tie(seed_plan_client: Any) -> None:
    alone = await _ask(seed_plan_client, "home")
    assert alone["status"] == "clarify"
    on_dashboard = await _ask(seed_plan_client, "home", ui_context={"screen": "dashboard"})
    assert (on_dashboard["status"], on_dashboard["results"][0]["doc_slug"]) == ("answer", "concepts/dashboard")
    assert on_dashboard["conversation"]["screen"] == "dashboard"
    elsewhere = await _ask(seed_plan_client, "home", ui_context={"screen": "settings"})
    assert elsewhere["status"] == "clarify"


async def test_the_screen_never_overrides_a_clear_topic(service_client: Any) -> None:
    alone = await _ask(service_client, "how do I rename a note")
    on_workspace = await _ask(service_client, "how do I rename a note", ui_context={"screen": "workspace"})
    assert _top(on_workspace) == _top(alone) == ("actions/notes", "Note Actions > Renaming a note")
    assert on_workspace["conversation"]["topic"] == "message"


# -- bad input --------------------------------------------------------------------
def _turn(role: str = "user", content: str = "hi") -> Json:
    return {"role": role, "content": content}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"history": [_turn()] * 11}, "history"),
        ({"history": [_turn(role="system")]}, "history"),
        ({"history": [_turn(content="x" * 2001)]}, "history"),
        ({"history": [{"role": "user", "content": "hi", "mood": "happy"}]}, "mood"),
        ({"ui_context": {"screen": "workspace", "colour": "blue"}}, "colour"),
        ({"ui_context": {"entry": "Thesis"}}, "screen"),
        ({"reply_to": "home"}, "reply_to"),
        ({"reply_to": {"kind": "choose"}}, "reply_to"),
    ],
)
async def test_bad_conversation_fields_are_a_400_naming_the_field(service_client: Any, body: Json, field: str) -> None:
    response = await service_client.post("/retrieve", json={"query": "home", **body})
    assert response.status_code == 400, response.text
    error = response.json()
    assert field in error["error"] or any(field in d.get("field", "") for d in error["detail"])


# -- two replicas -------------------------------------------------------------------
@pytest.fixture(scope="module")
async def replica(service_client: Any) -> AsyncIterator[Any]:
    """A second app on the first one's database (keys shared only through PostgreSQL)."""
    from litestar.testing import AsyncTestClient

    from service.app import create_app

    url = get_state(service_client.app.state).settings.database_url
    app = create_app(app_settings(url, PROJECT_ROOT / "seeds"))
    async with AsyncTestClient(app=app, timeout=60) as client:
        await wait_until_ready(client, semantic=False)
        yield client


async def _table(service_client: Any, sql: str) -> list[Any]:
    conn = await asyncpg.connect(get_state(service_client.app.state).settings.database_url)
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


async def test_a_clarification_from_one_replica_is_answered_by_another(service_client: Any, replica: Any) -> None:
    # A question the default asks at phase 2 (Workspace, Workspace Actions or Navigation Actions).
    asked = await _ask(service_client, "workspace", phase=2)
    answered = await _ask(replica, "Workspace Actions", phase=2, reply_to=asked["clarification"])
    assert answered["results"][0]["doc_slug"] == "actions/workspaces"
    assert len(await _table(service_client, "select name from conversation_keys")) == 1


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        (lambda c: {**c, "query": "delete everything"}, "signature"),
        (lambda c: {**c, "options": c["options"][::-1]}, "signature"),
        (lambda c: {**c, "signature": "0" * 64}, "signature"),
        (lambda c: {**c, "v": 99}, "`reply_to.v`: Invalid enum value 99"),  # the schema's constant 1
    ],
)
async def test_a_forged_reply_to_is_a_400_on_the_other_replica(
    service_client: Any, replica: Any, tamper: Any, problem: str
) -> None:
    asked = await _ask(service_client, "workspace", phase=2)
    before = await _table(service_client, "select name, secret from conversation_keys")
    response = await replica.post("/retrieve", json={"query": "2", "reply_to": tamper(asked["clarification"])})
    assert response.status_code == 400, response.text
    assert problem in response.json()["error"] and "reply_to" in response.json()["error"]
    assert await _table(service_client, "select name, secret from conversation_keys") == before


async def test_an_expired_reply_to_is_a_400_on_the_other_replica(service_client: Any, replica: Any) -> None:
    asked = await _ask(service_client, "workspace", phase=2)
    ttl = get_state(replica.app.state).flags.conversation.reply_ttl_s
    replica.app.state[CLOCK_KEY] = lambda: time.time() + ttl + 5
    try:
        response = await replica.post("/retrieve", json={"query": "2", "reply_to": asked["clarification"]})
    finally:
        del replica.app.state[CLOCK_KEY]
    assert response.status_code == 400, response.text
    assert "expired" in response.json()["error"]
    fresh = await replica.post("/retrieve", json={"query": "2", "reply_to": asked["clarification"]})
    assert fresh.status_code == 200
