"""Golden-file format checks and the Tier-1 glossary."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.golden import GoldenCase, GoldenFileError, check, load_golden, phases_of
from service.normalize.lexicon import Synonyms, build_lexicon
from service.normalize.query import normalize_query
from service.scoring.glossary import Glossary, load_glossary

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
    glossary = Glossary(tuple(load_glossary(SEEDS / "core_concepts.yaml")))
    assert [c.term for c in glossary.concepts] == [
        "Home", "Dashboard", "Workspace", "Entry", "Notes", "Recent", "Widget", "Panel"
    ]
    assert glossary.lookup("workspaces").slug == "concepts/workspace"  # type: ignore[union-attr]
    assert glossary.lookup("calendar") is None


def test_glossary_answers_only_explain_questions_about_core_concepts() -> None:
    glossary = Glossary(tuple(load_glossary(SEEDS / "core_concepts.yaml")))
    lexicon = build_lexicon(titles=[], keywords=[], texts=[], synonyms=Synonyms())
    explain, _ = normalize_query("what is a panel?", lexicon)
    evidence = glossary.answer(explain)
    assert evidence is not None and evidence.source == "cache" and evidence.doc_slug == "concepts/panels"
    lookup, _ = normalize_query("panel", lexicon)
    assert glossary.answer(lookup) is None
