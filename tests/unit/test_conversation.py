"""Conversation rules: signed clarifications, replies, carried topics, the screen."""

from __future__ import annotations

import msgspec
import pytest

from service.conversation.clarification import (
    Clarification,
    ClarificationError,
    ClarificationOption,
    issue,
    verify,
)
from service.conversation.replies import resolve
from service.conversation.stage import (
    NOTHING_BETTER,
    Conversation,
    Texts,
    clarification_kind,
    options_of,
    settle,
)
from service.conversation.stage import resolve as resolve_stage
from service.conversation.topic import Screen, Turn, action_stems, resolve_topic, topic_words
from service.decide import clarify
from service.domain.types import Answer, Clarify, Evidence, NoMatch, Option
from service.normalize.lexicon import default_stopwords

KEY = b"k" * 32
HOME = ClarificationOption(doc_slug="concepts/home", title="Home", category="concepts")
DASH = ClarificationOption(doc_slug="concepts/dashboard", title="Dashboard", category="concepts")
MANAGER = ClarificationOption(doc_slug="widgets/widget-manager", title="Widget Manager", category="widgets")
WIDGETS = ClarificationOption(doc_slug="concepts/widgets", title="Widgets", category="concepts")


def _choose(*options: ClarificationOption, kind: str = "choose") -> Clarification:
    return issue(kind=kind, query="home", options=options, key=KEY, now=1_000)  # type: ignore[arg-type]


def _wire(c: Clarification) -> object:
    return msgspec.json.decode(msgspec.json.encode(c))


# -- signing -------------------------------------------------------------------
def test_a_clarification_survives_the_round_trip_through_the_client() -> None:
    c = _choose(HOME, DASH)
    assert verify(_wire(c), key=KEY, now=1_100, max_age_s=600) == c


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        (lambda w: {**w, "query": "delete everything"}, "signature"),
        (lambda w: {**w, "options": [w["options"][1], w["options"][0]]}, "signature"),
        (lambda w: {**w, "signature": "0" * 64}, "signature"),
        (lambda w: {**w, "signature": "é" * 64}, "signature"),  # was a TypeError (a 500)
        (lambda w: {**w, "signature": "\ud800"}, "signature"),  # a lone surrogate, as JSON may carry
        (lambda w: {**w, "v": 2}, "malformed"),
        (lambda w: {**w, "issued_at": w["issued_at"] + 5}, "signature"),
        (lambda w: {k: v for k, v in w.items() if k != "query"}, "malformed"),
        (lambda w: {**w, "extra": 1}, "malformed"),
        (lambda w: {**w, "issued_at": "yesterday"}, "malformed"),
        (lambda w: "not an object", "malformed"),
    ],
)
def test_an_altered_or_malformed_clarification_is_refused_naming_the_problem(tamper, problem) -> None:  # type: ignore[no-untyped-def]
    wire = _wire(_choose(HOME, DASH))
    with pytest.raises(ClarificationError, match=problem):
        verify(tamper(wire), key=KEY, now=1_100, max_age_s=600)


def test_another_key_means_another_service() -> None:
    with pytest.raises(ClarificationError, match="signature"):
        verify(_wire(_choose(HOME, DASH)), key=b"x" * 32, now=1_100, max_age_s=600)


def test_an_expired_clarification_is_refused() -> None:
    with pytest.raises(ClarificationError, match="expired"):
        verify(_wire(_choose(HOME, DASH)), key=KEY, now=1_000 + 601, max_age_s=600)


# -- replies -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "slug"),
    [
        ("Home", "concepts/home"),
        ("home", "concepts/home"),
        ("concepts/home", "concepts/home"),
        ("the dashboard one", "concepts/dashboard"),
        ("Dashboard please", "concepts/dashboard"),
        ("the first one", "concepts/home"),
        ("1", "concepts/home"),
        ("2", "concepts/dashboard"),
        ("second", "concepts/dashboard"),
        ("the last one", "concepts/dashboard"),
        ("dashbord", "concepts/dashboard"),
        ("I mean the home page", "concepts/home"),
    ],
)
def test_a_reply_picks_the_option_it_names(reply: str, slug: str) -> None:
    result = resolve(reply, _choose(HOME, DASH))
    assert result.kind == "chosen"
    assert result.option is not None and result.option.doc_slug == slug


def test_a_category_word_picks_the_only_option_of_that_category() -> None:
    result = resolve("the widgets one", _choose(MANAGER, HOME))
    assert result.option == MANAGER


def test_a_whole_title_wins_over_a_shared_word() -> None:
    assert resolve("widget manager", _choose(WIDGETS, MANAGER)).option == MANAGER


def test_a_reply_naming_all_that_sets_one_option_apart_picks_it() -> None:
    right, left, how_to = (
        ClarificationOption(doc_slug="right-sidebar", title="Right sidebar", category="general"),
        ClarificationOption(doc_slug="left-sidebar", title="Left sidebar", category="general"),
        ClarificationOption(doc_slug="wip-how-to-work-with-the-left-hand-sidebar",
                            title="WIP How to work with the left-hand sidebar", category="general"),
    )
    assert resolve("the left one", _choose(right, left, how_to, kind="weak")).option == left
    assert resolve("the left-hand one", _choose(right, left, how_to, kind="weak")).option == how_to


@pytest.mark.parametrize("reply", ["yes", "Yes, that one", "yep", "correct", "sure"])
def test_yes_confirms_the_single_suggestion(reply: str) -> None:
    result = resolve(reply, _choose(HOME, DASH, kind="confirm"))
    assert (result.kind, result.option) == ("chosen", HOME)


@pytest.mark.parametrize("reply", ["no", "nope", "not that one"])
def test_no_moves_on_to_the_next_suggestion(reply: str) -> None:
    result = resolve(reply, _choose(HOME, DASH, kind="confirm"))
    assert result.kind == "declined"
    assert result.remaining == (DASH,)


@pytest.mark.parametrize(
    "reply",
    ["how do I share a workspace with my team?", "what is an entry", "can I change the font size in notes"],
)
def test_a_new_question_is_not_taken_for_a_choice(reply: str) -> None:
    assert resolve(reply, _choose(HOME, DASH)).kind == "new_question"


# -- topics ----------------------------------------------------------------------
TOPIC_WORDS = {"widget", "widgets", "dashboard", "note", "notes", "workspace", "home"}  # title words


def _has_topic(word: str) -> bool:
    return word in TOPIC_WORDS


HISTORY = (
    Turn(role="user", content="how do I remove a widget from my dashboard"),
    Turn(role="assistant", content="Open Widget Manager…", doc_slugs=("actions/widgets",)),
)


@pytest.mark.parametrize("follow_up", ["and how do I resize it?", "how do I move it", "and on mobile?"])
def test_a_follow_up_without_a_topic_takes_the_last_answered_one(follow_up: str) -> None:
    topic = resolve_topic(follow_up, has_topic=_has_topic, history=HISTORY)
    assert topic.source == "history"
    assert topic.from_turn == 0
    assert "widget" in topic.query
    assert topic.slugs == ("actions/widgets",)


def test_titles_phrased_as_questions_give_no_topic_to_every_question() -> None:
    """Logseq's pages include "How to create a new graph" and "What is indentation and why does
    it matter?": "how", "what", "does" or the how-to's verb must not make "how do I review them?"
    a message with a topic of its own."""
    words = topic_words(
        ["Flashcards", "How to create a new graph", "What is indentation and why does it matter?"],
        stopwords=default_stopwords(),
    )
    assert {"how", "what", "why", "does", "create"}.isdisjoint(words)
    assert {"flashcards", "graph", "indentation"} <= words
    history = (Turn(role="user", content="how do I create a flashcard"),
               Turn(role="assistant", content="Flashcards", doc_slugs=("flashcards",)))
    topic = resolve_topic("how do I review them?", has_topic=words.__contains__, history=history)
    assert (topic.source, topic.query) == ("history", "how do I review flashcard?")


def test_a_message_with_its_own_topic_ignores_history() -> None:
    topic = resolve_topic("how do I rename a workspace", has_topic=_has_topic, history=HISTORY)
    assert (topic.source, topic.query) == ("message", "how do I rename a workspace")


def test_without_history_a_topicless_message_stays_as_it_is() -> None:
    topic = resolve_topic("how do I resize it?", has_topic=_has_topic)
    assert (topic.source, topic.query) == ("message", "how do I resize it?")


def test_this_on_a_screen_means_the_screen() -> None:
    topic = resolve_topic("how do I rename this", has_topic=_has_topic, screen=Screen(screen="workspace"))
    assert topic.source == "screen"
    assert topic.query == "how do I rename workspace"


def test_the_focused_element_is_more_specific_than_the_screen() -> None:
    screen = Screen(screen="dashboard", focused="widget:quick_links")
    topic = resolve_topic("how do I remove this", has_topic=_has_topic, screen=screen)
    assert topic.carried == "widget quick links"


def test_this_tool_is_the_focused_tool() -> None:
    screen = Screen(screen="whiteboard", focused="tool:eraser")
    topic = resolve_topic("how does this tool work", has_topic=lambda w: w in {"tool", "work"}, screen=screen)
    assert (topic.source, topic.query) == ("screen", "how does tool eraser work")


def test_this_kind_of_element_the_screen_does_not_show_is_not_guessed() -> None:
    screen = Screen(screen="whiteboard", focused="shape:circle")
    topic = resolve_topic("how does this tool work", has_topic=lambda w: w in {"tool"}, screen=screen)
    assert topic.source == "message"


def test_the_screen_never_overrides_a_clear_topic() -> None:
    topic = resolve_topic("how do I delete this note", has_topic=_has_topic, screen=Screen(screen="workspace"))
    assert topic.source == "message"


# -- the stage: settling the tiers' decision -------------------------------------------

TEXTS = Texts(no_match="Which part should I explain?", suggest=lambda t: f"I think you mean {t}. Is that right?",
              choose=clarify.choose)


def _evidence(slug: str, section: str = "") -> Evidence:
    return Evidence(doc_slug=slug, title=slug, category="c", snippet="", score=1.0, content_hash="h",
                    matched_terms=(), source="keyword", header_path=section or None)


def _clarify_between(*slugs: str) -> Clarify:
    return Clarify(results=tuple(_evidence(s) for s in slugs), confidence=0.1, message="Do you mean …?",
                   options=tuple(Option(doc_slug=s, title=s.split("/")[-1], category="c") for s in slugs),
                   reason="small_gap")


def test_a_chosen_page_answers_with_its_best_passage_for_the_original_question() -> None:
    asked = issue(kind="choose", query="how do I remove a widget", options=(MANAGER, WIDGETS), key=KEY, now=1)
    resolution = resolve_stage("Widget Manager", Conversation(reply_to=asked), has_topic=_has_topic,
                               foreign=lambda w: False)
    assert resolution.query == "how do I remove a widget"
    best = _evidence(MANAGER.doc_slug, "Widget Manager > Removing a widget")
    decision, _ = settle(_clarify_between("concepts/widgets", MANAGER.doc_slug), resolution,
                         lambda slug: best if slug == MANAGER.doc_slug else None, TEXTS)
    assert isinstance(decision, Answer) and decision.results[0] == best


def test_no_to_the_last_suggestion_gives_up_politely() -> None:
    asked = issue(kind="confirm", query="dock", options=(HOME,), key=KEY, now=1)
    resolution = resolve_stage("no", Conversation(reply_to=asked), has_topic=_has_topic, foreign=lambda w: False)
    decision, _ = settle(_clarify_between("concepts/home"), resolution, lambda slug: None, TEXTS)
    # Issue 35: it says it has nothing better (was the bare "Which part should I explain?").
    assert isinstance(decision, NoMatch) and decision.message == NOTHING_BETTER == TEXTS.nothing_better
    # Issue 40: it does not end in a question it offers nothing to answer.
    assert not decision.message.endswith("?")


# -- issue 35: "no" offers the rest once, then nothing better ---------------------------


@pytest.mark.parametrize("reply", ["no", "nope, neither", "no, not those", "none of these", "neither one",
                                   "not that one", "no thanks", "that's not it", "neither of them"])
def test_every_usual_form_of_no_declines_and_names_nothing_else(reply: str) -> None:
    assert resolve(reply, _choose(HOME, DASH)).kind == "declined"
    assert resolve(reply, _choose(HOME, DASH, kind="weak")).kind == "declined"


@pytest.mark.parametrize("reply", ["no, I mean the widget manager", "not home but how do I rename a note"])
def test_a_no_that_says_something_else_is_not_a_bare_decline(reply: str) -> None:
    assert resolve(reply, _choose(HOME, DASH)).kind != "declined"


def test_no_offers_the_remaining_pages_once_then_nothing_better() -> None:
    weak = issue(kind="weak", query="dock", options=(WIDGETS, HOME, DASH), key=KEY, now=1)
    first = resolve_stage("no", Conversation(reply_to=weak), has_topic=_has_topic, foreign=lambda w: False)
    offered, _ = settle(_clarify_between("concepts/widgets"), first, _evidence, TEXTS)
    assert isinstance(offered, Clarify)
    assert [o.doc_slug for o in offered.options] == ["concepts/home", "concepts/dashboard"]
    assert offered.message == "Do you mean Home or Dashboard?"  # one category: not repeated
    assert [e.doc_slug for e in offered.results] == ["concepts/home", "concepts/dashboard"]
    # The offer is one question between both: "no" to it has nothing left to offer.
    again = issue(kind=clarification_kind(offered), query="dock", options=options_of(offered), key=KEY, now=1)
    assert again.kind == "choose"
    second = resolve_stage("nope", Conversation(reply_to=again), has_topic=_has_topic, foreign=lambda w: False)
    decision, _ = settle(offered, second, _evidence, TEXTS)
    assert isinstance(decision, NoMatch) and decision.message == NOTHING_BETTER


def test_one_remaining_page_is_suggested_alone() -> None:
    confirm = issue(kind="confirm", query="dock", options=(HOME, DASH), key=KEY, now=1)
    resolution = resolve_stage("no", Conversation(reply_to=confirm), has_topic=_has_topic, foreign=lambda w: False)
    decision, _ = settle(_clarify_between("concepts/home"), resolution, _evidence, TEXTS)
    assert isinstance(decision, Clarify) and decision.message == "I think you mean Dashboard. Is that right?"


# -- issue 35: a follow-up naming an action searches within the carried topic first ------


DELETED = (
    Turn(role="user", content="how do I delete a workspace"),
    Turn(role="assistant", content="Workspace Actions > Deleting a workspace", doc_slugs=("actions/workspaces",)),
)


def test_an_idiom_of_an_action_is_read_as_the_verb_the_corpus_uses() -> None:
    topic = resolve_topic("can I get it back afterwards?", has_topic=_has_topic, history=DELETED,
                          foreign=lambda w: w in {"recover", "undelete"})
    assert topic.source == "history" and topic.query == "can I restore workspace afterwards?"
    assert topic.actions == ("restor",) and topic.rewritten == "'get it back' as 'restore'"
    # A word the corpus never uses, of the same action.
    recovered = resolve_topic("and can I recover it?", has_topic=_has_topic, history=DELETED,
                              foreign=lambda w: w == "recover")
    assert recovered.query == "can I restore workspace?" and recovered.actions == ("restor",)
    # A corpus that says "recover" keeps the user's word.
    kept = resolve_topic("and can I recover it?", has_topic=_has_topic, history=DELETED, foreign=lambda w: False)
    assert kept.query == "can I recover workspace?"


def test_action_stems_meet_across_word_forms() -> None:
    assert action_stems("Restoring a deleted workspace") == ["restor", "", "delet", "workspac"]
    assert action_stems("restore")[0] == action_stems("restored")[0] == "restor"
    assert action_stems("pinning")[0] == action_stems("pin")[0] == action_stems("pinned")[0]
    assert action_stems("how do I delete it") == ["", "", "", "delet", ""]


def test_the_carried_page_answers_with_the_section_that_names_the_action() -> None:
    resolution = resolve_stage("can I get it back afterwards?", Conversation(history=DELETED), has_topic=_has_topic,
                               foreign=lambda w: False)
    deleting = _evidence("actions/workspaces", "Workspace Actions > Deleting a workspace")
    restoring = _evidence("actions/workspaces", "Workspace Actions > Deleting a workspace > Restoring a deleted workspace")
    tie = Clarify(results=(_evidence("concepts/home", "Home > Getting back to Home"), deleting, restoring),
                  confidence=0.1, message="Do you mean …?", reason="small_gap",
                  options=(Option(doc_slug="concepts/home", title="Home", category="c"),
                           Option(doc_slug="concepts/widgets", title="Widgets", category="c")))
    decision, settled = settle(tie, resolution, lambda slug: None, TEXTS)
    assert isinstance(decision, Answer) and decision.results[0] == restoring
    assert settled.trace.chosen == "actions/workspaces"
    assert any("names the action" in note for note in settled.trace.notes)


def test_a_section_starting_with_the_action_beats_one_that_only_mentions_it() -> None:
    renamed = (*DELETED[:1], Turn(role="assistant", content="Renaming", doc_slugs=("actions/workspaces",)))
    resolution = resolve_stage("and delete it?", Conversation(history=renamed), has_topic=_has_topic,
                               foreign=lambda w: False)
    restoring = _evidence("actions/workspaces", "Workspace Actions > Deleting a workspace > Restoring a deleted workspace")
    deleting = _evidence("actions/workspaces", "Workspace Actions > Deleting a workspace")
    decision, _ = settle(Answer(results=(restoring, deleting), confidence=0.4), resolution, lambda s: None, TEXTS)
    assert decision.results[0] == deleting


def test_a_carried_page_without_the_action_leaves_the_tiers_decision() -> None:
    resolution = resolve_stage("and how do I pin it?", Conversation(history=DELETED), has_topic=_has_topic,
                               foreign=lambda w: False)
    answer = Answer(results=(_evidence("concepts/notes", "Notes > Pinning notes"),
                             _evidence("actions/workspaces", "Workspace Actions > Deleting a workspace")),
                    confidence=0.6)
    assert settle(answer, resolution, lambda slug: None, TEXTS)[0] is answer


def test_the_screen_breaks_a_tie_only_when_it_names_one_option() -> None:
    tie = _clarify_between("concepts/home", "concepts/dashboard")
    on_dashboard = resolve_stage("home", Conversation(screen=Screen(screen="dashboard")), has_topic=_has_topic,
                                 foreign=lambda w: False)
    decision, resolution = settle(tie, on_dashboard, _evidence, TEXTS)
    assert isinstance(decision, Answer) and decision.results[0].doc_slug == "concepts/dashboard"
    assert resolution.trace.screen == "dashboard"
    elsewhere = resolve_stage("home", Conversation(screen=Screen(screen="settings")), has_topic=_has_topic,
                              foreign=lambda w: False)
    assert settle(tie, elsewhere, _evidence, TEXTS)[0] is tie


def test_a_confident_answer_is_never_changed_by_the_screen() -> None:
    answer = Answer(results=(_evidence("actions/notes"),), confidence=0.9)
    resolution = resolve_stage("how do I rename a note", Conversation(screen=Screen(screen="workspace")),
                               has_topic=_has_topic, foreign=lambda w: False)
    assert settle(answer, resolution, _evidence, TEXTS)[0] is answer


def test_a_message_about_something_the_corpus_never_mentions_is_not_a_follow_up() -> None:
    topic = resolve_topic("send an email", has_topic=_has_topic, history=HISTORY, foreign=lambda w: w == "email")
    assert topic.source == "message"


def test_a_choice_between_pages_carries_the_question_it_answered() -> None:
    history = (
        Turn(role="user", content="how do I create a note"),
        Turn(role="assistant", content="Do you mean Note Actions (actions) or Navigator (widgets)?"),
        Turn(role="user", content="Note Actions"),
        Turn(role="assistant", content="Creating a note", doc_slugs=("actions/notes",)),
    )
    topic = resolve_topic("and how do I pin it?", has_topic=lambda w: w in TOPIC_WORDS | {"actions"}, history=history)
    assert (topic.from_turn, topic.carried) == (0, "note")
