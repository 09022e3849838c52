"""Hostile input against the real app (shared `service_client`, real corpus).

Table-driven: every row is a request that a careless or malicious client
could send. Each must get a 4xx with a message or a correct 200 answer, and
the stored corpus must be byte-for-byte the same afterwards (content hashes
via `repo.corpus_fingerprint`). Typo correction must stay bounded: tokens
longer than `typo.max_token_length` never reach the fuzzy matcher.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest
from rapidfuzz import process

from service.api.schemas import MAX_QUERY_CHARS
from service.db import repo
from service.flags import load_flags_file
from service.normalize import query as query_module
from service.settings import PROJECT_ROOT
from service.state import get_state

JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Hostile:
    kind: str
    body: bytes
    expect: str  # "4xx" or "200"
    headers: dict[str, str] | None = None
    fragment: str = ""  # must appear in the 4xx error message
    decision: str = ""  # a 200's decision, as a user reading the query would expect it
    top: str | None = None  # the first result's page; None: no results at all
    known_failure: str = ""  # the service is wrong today (strict xfail)


def _q(query: str, **extra: Any) -> bytes:
    return json.dumps({"query": query, **extra}).encode()


def _nested(depth: int) -> bytes:
    return b'{"query": ' + b"[" * depth + b"1" + b"]" * depth + b"}"


CASES: list[Hostile] = [
    # size and emptiness
    Hostile("empty query", _q(""), "4xx", fragment="1–500 characters"),
    Hostile("whitespace-only query", _q(" \t\n\u3000 "), "4xx", fragment="1–500 characters"),
    Hostile("control-only query", _q("\x00\x01\x1b\u200b\u202e"), "4xx", fragment="1–500 characters"),
    Hostile("501 characters", _q("a" * (MAX_QUERY_CHARS + 1)), "4xx", fragment="1–500 characters"),
    Hostile("500 characters padded", _q("  " + "home " * 100 + "  "), "200", decision="clarify", top="concepts/home"),
    # One limit, on the cleaned query (issue 14 item 9): padding is not counted.
    Hostile("2001 raw characters", _q(" " * 2001 + "home"), "200", decision="clarify", top="concepts/home"),
    Hostile("2001 visible characters", _q("a" * 2001), "4xx", fragment="1–500 characters"),
    Hostile("1 MiB body", _q("a" * 2**20), "4xx", fragment="Request Entity Too Large"),
    Hostile("deeply nested JSON", _nested(10_000), "4xx"),
    # bytes and characters
    Hostile("invalid UTF-8", b'{"query": "caf\xe9 \xff\xfe"}', "4xx"),
    Hostile("NUL and control characters", _q("work\x00space\x07 \x1b[31mhome"), "200",
            decision="clarify", top="concepts/workspace",
            known_failure="the NUL splits work|space into two words (the README says control characters "
            "are stripped), and the service then asks about Notes"),
    Hostile("right-to-left override", _q("\u202eecapskrow\u202c explain workspace"), "200",
            decision="clarify", top="concepts/workspace"),
    Hostile("Arabic and Hebrew", _q("ما هو workspace שלום"), "200", decision="clarify", top="concepts/workspace",
            known_failure="phases 1 and 2 ask about Workspace (as for \"workspace shalom\"); phase 3 "
            "turns that into no_match"),
    Hostile("combining characters", _q("wo\u0301rkspa\u0327ce" + "\u0301" * 200), "200", decision="no_match"),
    Hostile("emoji", _q("🏠 what is home 👩‍👩‍👧‍👦🔥"), "200", decision="answer", top="concepts/home"),
    Hostile("NFKC expansion", _q("\ufdfa" * 30), "4xx", fragment="1–500 characters"),
    # injection-shaped text: plain text to us
    Hostile("SQL drop table", _q("'; DROP TABLE docs_knowledge; --"), "200", decision="no_match"),
    Hostile("SQL meta-characters", _q("home' OR '1'='1\" ; -- /* */ %_ \\"), "200", decision="clarify", top="concepts/home"),
    Hostile("regex meta-characters", _q(r"(a+)+$ .* [^] \d{99999} (?=x) | \\"), "200", decision="no_match"),
    Hostile("format-string", _q("{0} %s %n ${jndi:ldap://x} {{7*7}}"), "200", decision="no_match"),
    Hostile("very long single token", _q("w" * 500), "200", decision="no_match"),
    Hostile("many long tokens", _q(" ".join(["workspaceee" * 4] * 11)), "200", decision="no_match",
            known_failure="no word of the query is in the corpus (phases 1 and 2: no_match), but phase 3 "
            "asks about Workspace Actions from the embedding alone"),
    # numbers and types
    Hostile("top_k 0", _q("home", top_k=0), "4xx"),
    Hostile("top_k 11", _q("home", top_k=11), "4xx"),
    Hostile("top_k negative", _q("home", top_k=-1), "4xx"),
    Hostile("top_k huge", _q("home", top_k=10**30), "4xx"),
    Hostile("top_k as string", _q("home", top_k="3"), "4xx"),
    Hostile("top_k as integral float", _q("home", top_k=3.0), "200", decision="clarify", top="concepts/home"),  # JSON Schema: 3.0 is an integer
    Hostile("top_k as fraction", _q("home", top_k=2.5), "4xx"),
    Hostile("phase 0", _q("home", phase=0), "4xx"),
    Hostile("phase 4", _q("home", phase=4), "4xx"),
    Hostile("phase as bool", _q("home", phase=True), "4xx"),
    Hostile("unknown category", _q("home", category="calendars"), "4xx", fragment="concepts"),
    Hostile("query as number", b'{"query": 42}', "4xx"),
    Hostile("query as list", b'{"query": ["home"]}', "4xx"),
    Hostile("query null", b'{"query": null}', "4xx"),
    Hostile("missing query", b'{"top_k": 3}', "4xx"),
    Hostile("unknown field", _q("home", admin=True), "4xx", fragment="unknown field"),
    Hostile("duplicate keys", b'{"query": "home", "query": "x"}', "200", decision="no_match"),  # the last one wins
    # framing
    Hostile("non-JSON body", b"query=home", "4xx"),
    Hostile("empty body", b"", "4xx"),
    Hostile("JSON array body", b'["home"]', "4xx"),
    Hostile("JSON string body", b'"home"', "4xx"),
    Hostile("truncated JSON", b'{"query": "ho', "4xx"),
    Hostile("trailing garbage", b'{"query": "home"} xyz', "4xx"),
    Hostile("wrong content type", _q("home"), "200-or-415", headers={"Content-Type": "text/plain"}),
    Hostile("form content type", b"query=home", "4xx",
            headers={"Content-Type": "application/x-www-form-urlencoded"}),
]


async def _fingerprint(service_client: Any) -> str:
    """Content hashes of the stored corpus, read over a connection of our own
    (the app's pool lives on the test client's event loop)."""
    conn = await asyncpg.connect(get_state(service_client.app.state).settings.database_url)
    try:
        return await repo.corpus_fingerprint(conn)  # type: ignore[arg-type]
    finally:
        await conn.close()


@pytest.fixture(scope="module")
async def fingerprint_before(service_client: Any) -> str:
    return await _fingerprint(service_client)


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.kind, marks=[pytest.mark.xfail(reason=c.known_failure, strict=True)] if c.known_failure else [])
    for c in CASES
])
async def test_hostile_retrieve(service_client: Any, fingerprint_before: str, case: Hostile) -> None:
    response = await service_client.post("/retrieve", content=case.body, headers=case.headers or JSON)
    assert response.status_code < 500, response.text
    if case.expect == "200":
        assert case.decision, "a 200 row states the decision a user should get"
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["request_id"] and isinstance(body["results"], list)
        slugs = [r["doc_slug"] for r in body["results"]]
        assert (body["status"], slugs[0] if slugs else None) == (case.decision, case.top), body["message"]
        if case.decision == "no_match":
            assert body["message"] == "Which part should I explain?"
    elif case.expect == "4xx":
        assert 400 <= response.status_code < 500, response.text
        error = response.json()["error"]
        assert isinstance(error, str) and error
        assert case.fragment in error + json.dumps(response.json().get("detail"), ensure_ascii=False)
    else:  # a JSON body under another content type: answered or refused, never a crash
        assert response.status_code in (200, 415), response.text
        if response.status_code == 200:  # then it is the same question as "home"
            body = response.json()
            assert body["status"] == "clarify" and body["results"][0]["doc_slug"] == "concepts/home"


async def test_hostile_context(service_client: Any) -> None:
    """/context shares the query rules and adds list/size limits of its own."""
    for body in (
        {"query": " "}, {"query": "home", "recent_messages": [{"role": "user", "content": "x"}] * 6},
        {"query": "home", "budget": {"total": 0}}, {"query": "home", "ui_context": {"screen": "'; DROP"}},
        {"query": "home", "widget_states": [{"widget": "w", "summary": "s" * 501}]},
    ):
        response = await service_client.post("/context", json=body)
        assert response.status_code == 400, response.text
        assert response.json()["error"]
    response = await service_client.post("/context", content=b"x" * (40 * 1024), headers=JSON)
    assert response.status_code == 413


async def test_corpus_unchanged_after_hostile_input(service_client: Any, fingerprint_before: str) -> None:
    """Runs after the table (file order): nothing above wrote to the corpus."""
    assert await _fingerprint(service_client) == fingerprint_before
    ready = (await service_client.get("/ready")).json()
    assert ready["ready"] is True and ready["documents"] > 0


async def test_long_tokens_never_reach_the_fuzzy_matcher(
    service_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The typo corrector's work is bounded by length, not by luck: count its calls."""
    calls: list[str] = []

    def counted(real: Any) -> Any:
        def counting(token: str, *args: Any, **kwargs: Any) -> Any:
            calls.append(token)
            return real(token, *args, **kwargs)
        return counting

    # Both matchers: the ratio rule's extractOne and the edit rule's extract.
    monkeypatch.setattr(query_module.process, "extractOne", counted(process.extractOne))
    monkeypatch.setattr(query_module.process, "extract", counted(process.extract))
    limit = load_flags_file(PROJECT_ROOT / "flags.yaml").typo.max_token_length
    long_token = "q" * 499
    response = await service_client.post("/retrieve", json={"query": long_token, "phase": 1})
    assert response.status_code == 200
    assert all(len(t) <= limit for t in calls), [len(t) for t in calls]
    assert long_token not in calls

    # A query of many distinct in-bounds unknown tokens: at most one matcher
    # call per token per choice list, per normalisation pass.
    calls.clear()
    words = [f"zq{i:02d}xv" for i in range(70)]  # 70 unknown 6-letter tokens, 489 characters
    response = await service_client.post("/retrieve", json={"query": " ".join(words), "phase": 1})
    assert response.status_code == 200
    # Per token and pass (query + multi-intent): 2 ratio lists + 1 edit search.
    assert len(calls) <= len(words) * 3 * 2, len(calls)
