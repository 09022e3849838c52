"""Golden-file format checks and the Tier-1 glossary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.golden import GoldenCase, GoldenFileError, check, load_golden, phases_of
from service.normalize.lexicon import Synonyms, build_lexicon
from service.normalize.query import normalize_query
from service.scoring.tier1_cache import Tier1Cache, load_glossary

SEEDS = Path(__file__).resolve().parents[2] / "seeds"


def _case(**expect: object) -> GoldenCase:
    import msgspec

    return msgspec.convert({"id": "c", "query": "q", "expect": expect}, GoldenCase)


RESPONSE = {
    "status": "answer", "message": "",
    "results": [
        {"doc_slug": "concepts/workspace", "header_path": "Workspace"},
        {"doc_slug": "actions/workspaces", "header_path": None},
    ],
}


def test_check_passes_a_matching_response() -> None:
    case = _case(decision=["answer", "clarify"], top="concepts/workspace", includes=["actions/workspaces"],
                 excludes=["widgets/recent"], min_distinct_docs=2, header_path=True)
    assert check(case, RESPONSE) == []


@pytest.mark.parametrize(
    ("expect", "reason"),
    [
        ({"decision": "clarify"}, "decision 'answer', expected clarify"),
        ({"decision": "answer", "top": "widgets/recent"}, "top 'concepts/workspace', expected widgets/recent"),
        ({"decision": "answer", "includes": ["widgets/recent"]}, "missing widgets/recent"),
        ({"decision": "answer", "excludes": ["actions/workspaces"]}, "unexpected actions/workspaces"),
        ({"decision": "answer", "min_distinct_docs": 3}, "2 distinct documents, expected ≥ 3"),
        ({"decision": "answer", "message": "Which part should I explain?"}, "message ''"),
    ],
)
def test_check_names_each_failure(expect: dict[str, object], reason: str) -> None:
    failures = check(_case(**expect), RESPONSE)
    assert len(failures) == 1 and failures[0].startswith(reason)


def test_a_clarification_must_offer_a_real_choice() -> None:
    """Issue 40: "Are you asking about X?" with one button is not a question worth asking."""
    one = {"status": "clarify", "message": "Are you asking about Workspace?", "results": RESPONSE["results"],
           "options": [{"doc_slug": "concepts/workspace"}]}
    assert check(_case(decision="clarify"), one) == ["a clarification offering 1 option(s), not a choice"]
    two = one | {"options": [{"doc_slug": "concepts/workspace"}, {"doc_slug": "actions/workspaces"}]}
    assert check(_case(decision="clarify"), two) == []


def test_default_phases_are_every_implemented_phase() -> None:
    assert phases_of(_case(decision="answer")) == [1, 2, 3]
    assert phases_of(_case(decision="answer"), only=2) == [2]


def test_malformed_golden_files_are_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cases:\n  - id: a\n    query: q\n    expect: {decision: answer, topp: x}\n")
    with pytest.raises(GoldenFileError, match="topp"):
        load_golden(bad)
    dup = tmp_path / "dup.yaml"
    dup.write_text("cases:\n  - {id: a, query: q, expect: {decision: answer}}\n  - {id: a, query: r, expect: {decision: answer}}\n")
    with pytest.raises(GoldenFileError, match="duplicate case id 'a'"):
        load_golden(dup)


def test_the_glossary_has_the_eight_core_concepts() -> None:
    glossary = Tier1Cache(tuple(load_glossary(SEEDS / "core_concepts.yaml")))
    assert [c.term for c in glossary.concepts] == [
        "Home", "Dashboard", "Workspace", "Entry", "Notes", "Recent", "Widget", "Panel"
    ]
    assert glossary.lookup("workspaces").slug == "concepts/workspace"  # type: ignore[union-attr]
    assert glossary.lookup("calendar") is None


def test_glossary_answers_only_explain_questions_about_core_concepts() -> None:
    glossary = Tier1Cache(tuple(load_glossary(SEEDS / "core_concepts.yaml")))
    lexicon = build_lexicon(titles=[], keywords=[], texts=[], synonyms=Synonyms())
    explain, _ = normalize_query("what is a panel?", lexicon)
    evidence = glossary.answer(explain)
    assert evidence is not None and evidence.source == "cache" and evidence.doc_slug == "concepts/panels"
    lookup, _ = normalize_query("panel", lexicon)
    assert glossary.answer(lookup) is None


def test_request_fields_are_sent_as_written() -> None:
    import msgspec

    from service.golden import request_of

    case = msgspec.convert({"id": "c", "query": "q", "phase": 2, "top_k": 5, "category": "widgets",
                            "expect": {"decision": "answer"}}, GoldenCase)
    assert phases_of(case) == [2]
    assert request_of(case, 2) == ("/retrieve", {"query": "q", "phase": 2, "top_k": 5, "category": "widgets"})
    ctx = msgspec.convert({"id": "c", "query": "q", "ui_context": {"screen": "workspace"},
                           "expect": {"decision": "answer"}}, GoldenCase)
    assert phases_of(ctx) == [3]
    assert request_of(ctx, 3) == ("/context", {"query": "q", "ui_context": {"screen": "workspace"}})


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("{id: c, query: q, expect: {decision: [answer, clarify]}}", "without a `note`"),
        ("{id: c, query: q, phase: 1, phases: [1], expect: {decision: answer}}", "not both"),
        ("{id: c, query: q, phase: 4, expect: {decision: answer}}", "phases must be among"),
        ("{id: c, query: q, ui_context: {screen: x}, top_k: 3, expect: {decision: answer}}", "no `top_k`"),
        ("{id: c, query: q, known_failure: ' ', expect: {decision: answer}}", "must give the reason"),
    ],
)
def test_cases_that_do_not_say_what_a_user_should_get_are_rejected(case: str, problem: str) -> None:
    from service.golden import parse_golden

    with pytest.raises(GoldenFileError, match=re.escape(problem)):
        parse_golden(f"cases:\n  - {case}\n")


def test_known_failures_are_reported_apart_and_strictly() -> None:
    import msgspec

    from service.golden import verdict

    case = msgspec.convert({"id": "c", "query": "q", "known_failure": "wrong today",
                            "expect": {"decision": "answer"}}, GoldenCase)
    assert verdict(case, ["decision 'clarify', expected answer"]) == "XFAIL"
    assert verdict(case, []) == "XPASS"  # fixed: the mark must go
    plain = _case(decision="answer")
    assert (verdict(plain, []), verdict(plain, ["x"])) == ("PASS", "FAIL")
