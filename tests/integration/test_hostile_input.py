"""Hostile input against the real app (shared `service_client`, real corpus).

Table-driven: every row is a request that a careless or malicious client
could send. Each must get a 4xx with a message or a correct 200 answer, and
the stored corpus must be byte-for-byte the same afterwards (content hashes
via `repo.corpus_fingerprint`). Typo correction must stay bounded: tokens
longer than `typo.max_token_length` never reach the fuzzy matcher.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import pytest
from rapidfuzz import process

from service.api.body import MAX_BODY_BYTES, MAX_JSON_DEPTH
from service.api.schemas import MAX_QUERY_CHARS
from service.db import repo
from service.flags import load_flags_file
from service.normalize import query as query_module
from service.settings import PROJECT_ROOT
from service.state import get_state
from tests.conftest import ADMIN_TOKEN_FOR_TESTS, post_beside
from tests.integration.test_golden import DEFAULT_POLICY

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
    same_as: bytes = b""  # instead of decision/top: a 200 must be what this plain request gets
    known_failure: str = ""  # the service is wrong today (strict xfail)
    known_failure_under: dict[str, str] = field(default_factory=dict)  # ... under that decision.policy only

    def known(self) -> str:
        """Why the row fails today under the default policy (the one `service_client` runs)."""
        return self.known_failure or self.known_failure_under.get(DEFAULT_POLICY, "")


def _q(query: str, **extra: Any) -> bytes:
    return json.dumps({"query": query, **extra}).encode()


def _nested(depth: int) -> bytes:
    """`depth` arrays inside the query field (the object around them is one more level)."""
    return b'{"query": ' + b"[" * depth + b"1" + b"]" * depth + b"}"


DEPTH_LIMIT = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"


CASES: list[Hostile] = [
    # size and emptiness
    Hostile("empty query", _q(""), "4xx", fragment="1–500 characters"),
    Hostile("whitespace-only query", _q(" \t\n\u3000 "), "4xx", fragment="1–500 characters"),
    Hostile("control-only query", _q("\x00\x01\x1b\u200b\u202e"), "4xx", fragment="1–500 characters"),
    Hostile("501 characters", _q("a" * (MAX_QUERY_CHARS + 1)), "4xx", fragment="1–500 characters"),
    # Padding and repetition change nothing: the user gets what "home" gets.
    Hostile("500 characters padded", _q("  " + "home " * 100 + "  "), "200", same_as=_q("home")),
    # One limit, on the cleaned query (issue 14 item 9): padding is not counted.
    Hostile("2001 raw characters", _q(" " * 2001 + "home"), "200", same_as=_q("home")),
    Hostile("2001 visible characters", _q("a" * 2001), "4xx", fragment="1–500 characters"),
    Hostile("1 MiB body", _q("a" * 2**20), "4xx", fragment="Request Entity Too Large"),
    Hostile("1 MiB body names the limit", _q("a" * 2**20), "4xx", fragment=f"larger than {MAX_BODY_BYTES} bytes"),
    Hostile("deeply nested JSON", _nested(10_000), "4xx"),
    *(Hostile(f"JSON nested {depth} deep", _nested(depth), "4xx", fragment=DEPTH_LIMIT)
      for depth in (MAX_JSON_DEPTH + 1, 1_000, 2_000, 5_000)),
    # bytes and characters
    Hostile("invalid UTF-8", b'{"query": "caf\xe9 \xff\xfe"}', "4xx"),
    # Characters nobody sees change nothing: control characters and a terminal's colour codes
    # vanish (the README says they are stripped), and so do bidi overrides.
    Hostile("NUL and control characters", _q("work\x00space\x07 \x1b[31mhome"), "200", same_as=_q("workspace home")),
    Hostile("right-to-left override", _q("\u202eecapskrow\u202c explain workspace"), "200",
            same_as=_q("ecapskrow explain workspace")),
    # "What is workspace? Shalom": the words in scripts no page uses can match nothing, and the user
    # asked about Workspace, so they get what "workspace" gets (issue 42 item 6; it used to be
    # declined at phase 3, those three words pulling p under the no-match point).
    Hostile("Arabic and Hebrew", _q("ما هو workspace שלום"), "200", same_as=_q("workspace")),
    Hostile("combining characters", _q("wo\u0301rkspa\u0327ce" + "\u0301" * 200), "200", decision="no_match"),
    Hostile("emoji", _q("🏠 what is home 👩‍👩‍👧‍👦🔥"), "200", decision="answer", top="concepts/home"),
    Hostile("NFKC expansion", _q("\ufdfa" * 30), "4xx", fragment="1–500 characters"),
    # injection-shaped text: plain text to us
    # It names a table the help never mentions (docs_knowledge): a no match saying so.
    Hostile("SQL drop table", _q("'; DROP TABLE docs_knowledge; --"), "200", decision="no_match"),
    # Quotes and comment marks around "home" change nothing a user would see: Home, as for "home"
    # (answered under the default since 2026-11-29; it was asked about between Home and others).
    Hostile("SQL meta-characters", _q("home' OR '1'='1\" ; -- /* */ %_ \\"), "200", decision="answer", top="concepts/home"),
    Hostile("regex meta-characters", _q(r"(a+)+$ .* [^] \d{99999} (?=x) | \\"), "200", decision="no_match"),
    Hostile("format-string", _q("{0} %s %n ${jndi:ldap://x} {{7*7}}"), "200", decision="no_match"),
    # alert(1) is a call, so a name in code, and the help never mentions it.
    Hostile("pasted markup", _q("<script>alert(1)</script>"), "200", decision="no_match"),
    Hostile("printf placeholders", _q("%s %d {} {{x}}"), "200", decision="no_match"),
    Hostile("very long single token", _q("w" * 500), "200", decision="no_match"),
    Hostile("many long tokens", _q(" ".join(["workspaceee" * 4] * 11)), "200", decision="no_match",
            known_failure_under={"seed_rules": "no word of the query is in the corpus (phases 1 and 2: "
                                 "no_match), but phase 3 asks about Workspace Actions from the embedding alone"}),
    # numbers and types
    Hostile("top_k 0", _q("home", top_k=0), "4xx"),
    Hostile("top_k 11", _q("home", top_k=11), "4xx"),
    Hostile("top_k negative", _q("home", top_k=-1), "4xx"),
    Hostile("top_k huge", _q("home", top_k=10**30), "4xx"),
    Hostile("top_k as string", _q("home", top_k="3"), "4xx"),
    Hostile("top_k as integral float", _q("home", top_k=3.0), "200", same_as=_q("home", top_k=3)),  # JSON Schema: 3.0 is an integer
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
    Hostile("truncated JSON", b'{"query": "ho', "4xx", fragment="not complete JSON: it ends early"),
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
    pytest.param(c, id=c.kind, marks=[pytest.mark.xfail(reason=c.known(), strict=True)] if c.known() else [])
    for c in CASES
])
async def test_hostile_retrieve(service_client: Any, fingerprint_before: str, case: Hostile) -> None:
    response = await service_client.post("/retrieve", content=case.body, headers=case.headers or JSON)
    assert response.status_code < 500, response.text
    if case.expect == "200":
        assert case.decision or case.same_as, "a 200 row states the decision a user should get"
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["request_id"] and isinstance(body["results"], list)
        slugs = [r["doc_slug"] for r in body["results"]]
        if case.same_as:
            plain = (await service_client.post("/retrieve", content=case.same_as, headers=JSON)).json()
            assert (body["status"], slugs, body["options"], body["message"]) == (
                plain["status"], [r["doc_slug"] for r in plain["results"]], plain["options"], plain["message"])
            return
        assert (body["status"], slugs[0] if slugs else None) == (case.decision, case.top), body["message"]
        if case.decision == "no_match":  # issue 40: no question it offers nothing to answer
            assert body["message"] and (body["options"] or not body["message"].endswith("?")), body
    elif case.expect == "4xx":
        assert 400 <= response.status_code < 500, response.text
        error = response.json()["error"]
        assert isinstance(error, str) and error
        assert case.fragment in error + json.dumps(response.json().get("detail"), ensure_ascii=False)
    else:  # a JSON body under another content type: answered or refused, never a crash
        assert response.status_code in (200, 415), response.text
        if response.status_code == 200:  # then it is the same question as "home", with the same answer
            body, plain = response.json(), (await service_client.post("/retrieve", json={"query": "home"})).json()
            assert (body["status"], body["results"][0]["doc_slug"]) == (plain["status"], plain["results"][0]["doc_slug"])


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


# --- the sweep: every operation that reads a JSON body, every depth, sizes at the limit ----------

SWEEP_DEPTHS = (10, 100, 500, 1_000, 2_000, 5_000, 10_000)
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"}


@dataclass(frozen=True)
class JsonOperation:
    method: str
    path: str
    admin: bool
    limit: int
    """The operation's body size limit (`request_max_body_size`)."""


def _json_operations(app: Any) -> list[JsonOperation]:
    """Every operation of the app whose handler takes a body (`data`), read from the app
    itself so a new endpoint is swept without editing this test."""
    found = []
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if "data" not in handler.parsed_fn_signature.parameters:
                continue
            path = re.sub(r"\{[^}]*\}", "hostile-id", route.path)
            for method in sorted(handler.http_methods):
                found.append(JsonOperation(method, path, bool(handler.resolve_guards()),
                                           handler.resolve_request_max_body_size()))
    return found


def _deep_bodies(depth: int) -> Iterator[tuple[str, bytes]]:
    yield "arrays", b"[" * depth + b"]" * depth
    yield "objects", b'{"a":' * depth + b"1" + b"}" * depth
    yield "query field", _nested(depth)


def _sized(size: int) -> bytes:
    """A JSON object of exactly `size` bytes (one long string field)."""
    body = _q("")
    return _q("a" * (size - len(body)))


@pytest.fixture
async def feedback_unthrottled(service_client: Any) -> AsyncIterator[None]:
    """/feedback is rate-limited per client (30 a minute): lifted while the sweep runs, then put
    back and its count cleared, so the shared app's later /feedback calls are not throttled."""
    raised = await service_client.put("/admin/flags", json={"feedback.rate_limit_per_minute": 100_000},
                                      headers=AUTH)
    assert raised.status_code == 200, raised.text
    try:
        yield
    finally:
        response = await service_client.delete("/admin/flags/feedback.rate_limit_per_minute", headers=AUTH)
        assert response.status_code in (200, 204), response.text
        store = service_client.app.stores.get("feedback_rate_limit")
        service_client.blocking_portal.call(store.delete_all)


async def test_every_json_operation_survives_depth_and_size(
    service_client: Any, fingerprint_before: str, feedback_unthrottled: None
) -> None:
    """Issue 33: depths 10 … 10,000 and sizes around each limit, on every JSON operation, with and
    without the admin token: never a 5xx; a body over the size limit is a 413 naming that limit; a
    body within it but nested deeper than MAX_JSON_DEPTH is a 400 naming the depth limit."""
    operations = _json_operations(service_client.app)
    paths = {op.path for op in operations}
    assert {"/retrieve", "/context", "/feedback", "/admin/flags"} <= paths, paths
    failures: list[str] = []
    sent = 0
    for op in operations:
        for token in (False, True):
            headers = {**JSON, **(AUTH if token else {})}
            cases = [(f"{shape} {depth} deep", body, depth)
                     for depth in SWEEP_DEPTHS for shape, body in _deep_bodies(depth)]
            cases += [(f"{size} bytes", _sized(size), 2) for size in (op.limit - 1, op.limit, op.limit + 1)]
            for label, body, depth in cases:
                response = await service_client.request(op.method, op.path, content=body, headers=headers)
                sent += 1
                status, text = response.status_code, response.text
                if op.admin and not token:
                    expected, fragment = 401, ""  # the guard answers before the body is read
                elif len(body) > op.limit:
                    expected, fragment = 413, f"larger than {op.limit} bytes"
                elif depth > MAX_JSON_DEPTH:
                    expected, fragment = 400, DEPTH_LIMIT
                else:
                    expected, fragment = 0, ""  # within both limits: any answer but a 5xx
                wrong = status >= 500 or (expected and status != expected) or fragment not in text
                if wrong:
                    failures.append(f"{op.method} {op.path} token={token} {label}: {status} {text[:160]}")
    assert not failures, f"{len(failures)} of {sent}:\n" + "\n".join(failures[:20])


async def test_chunked_body_over_the_limit_is_413(service_client: Any) -> None:
    """No Content-Length to refuse on: the limit applies to the bytes as they arrive."""

    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_BODY_BYTES // 1024 + 1):
            yield b" " * 1024

    # A generator body goes out chunked; the test transport streams only sync ones.
    response = await post_beside(service_client, "/retrieve", content=chunks(), headers=JSON)
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert response.status_code == 413, response.text
    assert f"larger than {MAX_BODY_BYTES} bytes" in response.json()["error"]


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
