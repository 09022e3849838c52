"""Normalisation rules of the seed plan: stopwords, synonyms, stemming, typos, intent."""

from __future__ import annotations

import pytest

from service.flags import TypoFlags
from service.normalize.lexicon import Synonyms, build_lexicon, english_words
from service.normalize.query import correct_typo, detect_intent, normalize_query
from service.normalize.text import (
    apply_phrase_synonyms,
    clean,
    lowercase_words,
    rewrite_for_embedding,
    stem_plural,
)

SYNONYMS = Synonyms(
    phrases={"keyboard shortcuts": "keyboard hotkeys"},
    words={"shortcuts": "quick links", "homepage": "home", "dashboard": "home"},
)
LEXICON = build_lexicon(
    titles=["Workspace", "Quick Links", "Home", "Notes", "Entry"],
    keywords=["entries", "canvas"],
    texts=["A workspace groups notes on a canvas. Boxes and searches and entries."],
    synonyms=SYNONYMS,
)


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("widgets", "widget"),
        ("entries", "entries"),  # known term (a keyword): never stemmed
        ("categories", "category"),  # ies → y
        ("boxes", "box"),  # es after a sibilant
        ("searches", "search"),
        ("notes", "note"),  # plain s (not known in this call)
        ("bus", "bus"),  # under 4 characters
        ("gas", "gas"),
        ("access", "access"),  # ss is not a plural
        ("status", "status"),
        ("analysis", "analysis"),
        ("links", "link"),
    ],
)
def test_conservative_stemming(token: str, expected: str) -> None:
    assert stem_plural(token, frozenset({"entries"})) == expected


def test_known_terms_are_not_stemmed() -> None:
    assert stem_plural("notes", LEXICON.known_terms) == "notes"
    assert stem_plural("links", LEXICON.known_terms) == "links"


def test_known_terms_are_the_corpus_own() -> None:
    """One product's concepts are not words of every corpus: a build tool's docs never say
    "widget" or "dashboard", so neither is known there, in its vocabulary or a typo's target."""
    build_tool = build_lexicon(
        titles=["Config", "Plugins", "Dev server"], keywords=["vite.config.js"],
        texts=["Plugins extend the dev server. A config file names the plugins."], synonyms=Synonyms(),
    )
    assert not {"widget", "dashboard", "home", "workspace", "panel"} & (build_tool.known_terms | build_tool.vocabulary)
    assert correct_typo("dashbord", build_tool, TypoFlags()) is None
    assert stem_plural("widgets", build_tool.known_terms) == "widget"


def test_clean_strips_control_characters_and_trims() -> None:
    # Controls vanish inside a word as format characters do; tabs and newlines still separate words.
    assert clean("  work\x00space\u202e\n\tnotes  ") == "workspace notes"
    assert clean("work\x07space\x1b[31m home\x1b[0m") == "workspace home"  # terminal colours pasted


def test_lowercase_words_strips_punctuation_and_apostrophes() -> None:
    assert lowercase_words("What's Quick-Links?!") == "whats quick links"


def test_phrase_synonyms_prefer_the_longest_phrase() -> None:
    text, used = apply_phrase_synonyms("my keyboard shortcuts", {"keyboard shortcuts": "keyboard hotkeys", "shortcuts": "x"})
    assert text == "my keyboard hotkeys"
    assert used == ["keyboard shortcuts → keyboard hotkeys"]


@pytest.mark.parametrize(
    ("raw", "tokens"),
    [
        ("what is the workspace", ("workspace",)),
        ("shortcuts", ("quick", "links")),
        ("homepage", ("home",)),
        ("Dashboard!", ("home",)),
        ("my keyboard shortcuts", ("keyboard", "hotkey")),
        ("how do I do it", ()),
        ("the thing", ()),
        ("docs", ("doc",)),  # no docs → notes rewrite (ambiguous with documentation)
    ],
)
def test_query_tokens(raw: str, tokens: tuple[str, ...]) -> None:
    query, _ = normalize_query(raw, LEXICON)
    assert query.tokens == tokens


def test_typo_is_corrected_to_a_known_term_and_reported() -> None:
    query, _ = normalize_query("wrkspace", LEXICON)
    assert query.tokens == ("workspace",)
    assert [(c.original, c.corrected) for c in query.corrections] == [("wrkspace", "workspace")]


def test_short_and_known_tokens_are_never_corrected() -> None:
    settings = TypoFlags()
    assert correct_typo("wrk", LEXICON, settings) is None  # under 4 characters
    assert correct_typo("workspace", LEXICON, settings) is None  # already in the vocabulary
    assert correct_typo("zzzzzzzz", LEXICON, settings) is None  # nothing close enough


# A corpus about queries, search and a dark theme; `english` is a stand-in word list.
EDITS_LEXICON = build_lexicon(
    titles=["Queries", "Search", "Dark Mode", "Drag and drop", "Home"],
    keywords=["custom theme", "entries"],
    texts=["Search the graph. Queries filter tasks. Drag a block. Dark mode and a custom theme. "
           "Drag again, drag once more. Dock a panel. Move a block, then another block. A black theme."],
    synonyms=Synonyms(),
    english=frozenset({"home", "search", "dark", "mode", "ready", "read", "entire"}),
)


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("serach", "search"),  # two letters swapped: one edit, but a ratio of 83
        ("hmoe", "home"),  # a swap in a short word
        ("custon", "custom"),  # one letter changed
        ("qeuries", "queries"),  # a title word: the stemmer's "qeury" is not near it, the word as typed is
        ("taks", "task"),  # the stemmer's cut ("tak") is too short; corrected as typed
        ("entires", "entries"),  # the stemmer's cut is an English word ("entire"); corrected as typed
    ],
)
def test_a_misspelt_word_one_edit_away_is_corrected(typed: str, meant: str) -> None:
    query, _ = normalize_query(typed, EDITS_LEXICON)
    assert query.tokens == (meant,)
    assert [c.original for c in query.corrections] == [typed]  # reported as the user typed it


def test_english_words_and_distant_words_are_left_alone() -> None:
    settings = TypoFlags()
    assert correct_typo("mead", EDITS_LEXICON, settings) is None  # no corpus word shares its first letter
    assert correct_typo("ready", EDITS_LEXICON, settings) is None  # an English word, one edit from "read"
    assert correct_typo("srch", EDITS_LEXICON, settings) is None  # two edits in a short word
    assert correct_typo("serach", EDITS_LEXICON, TypoFlags(max_edits=0)) is None  # the rule switched off


def test_on_a_tie_the_word_the_corpus_uses_most_wins() -> None:
    # "blick" is one changed letter from "block" and from "black"; the corpus says "block" more.
    fix = correct_typo("blick", EDITS_LEXICON, TypoFlags())
    assert fix is not None and fix.corrected == "block"


def test_a_four_letter_word_is_only_corrected_for_swapped_letters() -> None:
    # "drak" is a swap from "dark" and a changed letter from "drag" (which the corpus says more).
    fix = correct_typo("drak", EDITS_LEXICON, TypoFlags())
    assert fix is not None and fix.corrected == "dark"
    assert correct_typo("docs", EDITS_LEXICON, TypoFlags()) is None  # one changed letter from "dock"


def test_a_misspelt_synonym_is_respelt_before_the_synonym_rules_run() -> None:
    # "keybaord" is no corpus word: the phrase rule's own words are correction targets, and the
    # phrase rule applies to the corrected text, not "shortcuts -> quick links".
    query, notes = normalize_query("keybaord shortcuts", LEXICON)
    assert query.tokens == ("keyboard", "hotkey")
    assert [c.original for c in query.corrections] == ["keybaord"]
    assert notes == ["synonym: keyboard shortcuts → keyboard hotkeys"]
    query, _ = normalize_query("homepgae", LEXICON)  # a word rule's misspelt source
    assert query.tokens == ("home",)


def test_the_packaged_model_supplies_the_english_word_list() -> None:
    words = english_words()
    assert {"search", "flight", "calendar"} <= words
    assert not {"serach", "qeuries", "hmoe"} & words


def test_the_embedding_reads_the_corrected_words() -> None:
    text = rewrite_for_embedding("Serach my notes", {}, {}, {"serach": "search"})
    assert text == "search my notes"


def test_very_long_tokens_are_not_fuzzed() -> None:
    long_token = "workspace" * 1000
    assert correct_typo(long_token, LEXICON, TypoFlags(max_token_length=32)) is None


@pytest.mark.parametrize(
    ("text", "intent", "subject"),
    [
        ("what is home", "explain", "home"),
        ("what are the widgets", "explain", "widgets"),
        ("explain workspace", "explain", "workspace"),
        ("tell me about panels", "explain", "panels"),
        ("how does quick capture work", "explain", "quick capture"),
        ("open my notes", "navigate", ""),
        ("where are my shortcuts", "navigate", ""),
        ("workspace", "lookup", ""),
    ],
)
def test_intent_detection(text: str, intent: str, subject: str) -> None:
    assert detect_intent(text) == (intent, subject)


@pytest.mark.parametrize(
    ("raw", "parts"),
    [
        ("workspace and widgets", (("workspace",), ("widget",))),
        ("open notes + quick links", (("open", "notes"), ("quick", "links"))),
        ("home & notes", (("home",), ("notes",))),
        ("home, workspace", (("home",), ("workspace",))),
    ],
)
def test_multi_intent_split(raw: str, parts: tuple[tuple[str, ...], ...]) -> None:
    query, _ = normalize_query(raw, LEXICON)
    assert query.is_multi_intent
    assert query.parts == parts


def test_single_intent_when_one_side_is_empty() -> None:
    query, _ = normalize_query("workspace and the", LEXICON)
    assert not query.is_multi_intent


def test_words_in_a_script_the_corpus_does_not_use_are_left_out_unless_they_are_all_the_query() -> None:
    from service.normalize.lexicon import build_lexicon
    from service.normalize.query import normalize_query
    from service.normalize.text import script_of, without_scripts

    assert (script_of("workspace"), script_of("שלום"), script_of("ما"), script_of("中文"), script_of("42")) == (
        "LATIN", "HEBREW", "ARABIC", "CJK", None)
    assert without_scripts("ما هو workspace 2 שלום", frozenset({"LATIN"})) == ("workspace 2", ["ما", "هو", "שלום"])
    lexicon = build_lexicon(titles=["Workspace"], keywords=[], texts=["A workspace holds your panels."],
                            synonyms=Synonyms())
    assert lexicon.scripts == frozenset({"LATIN"})
    mixed, notes = normalize_query("ما هو workspace שלום", lexicon)
    plain, _ = normalize_query("workspace", lexicon)
    assert mixed.tokens == plain.tokens == ("workspace",) and mixed.unknown_tokens == ()
    assert mixed.semantic_text == "workspace" and mixed.raw == "ما هو workspace שלום"  # logged as typed
    assert any("left out ما هو שלום" in note for note in notes)
    # Nothing in the corpus's script: the query is kept whole (its words are unknown: no match).
    foreign, _ = normalize_query("ما هو", lexicon)
    assert foreign.tokens and foreign.semantic_text == "" and set(foreign.unknown_tokens) == set(foreign.tokens)
