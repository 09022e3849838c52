"""POST /context through the app on a real PostgreSQL (fixture seeds)."""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.ingest.tokens import get_token_counter
from service.settings import PROJECT_ROOT, Settings
from tests.conftest import quiet_flags_file, wait_until_ready

Client = AsyncTestClient[Litestar]


def _app(db_url: str, seeds: Path) -> Litestar:
    return create_app(Settings(
        database_url=db_url, seeds_dir=seeds, migrations_dir=PROJECT_ROOT / "migrations",
        flags_file=quiet_flags_file(), db_connect_timeout=10,
    ))


async def _wait_ready(client: Client) -> None:
    await wait_until_ready(client, semantic=False)


@pytest.fixture
async def client(db_url: str, fixture_seeds: Path) -> AsyncIterator[Client]:
    # The fixture corpus has no glossary; the real one feeds the "Core concepts" section.
    shutil.copy(PROJECT_ROOT / "seeds" / "core_concepts.yaml", fixture_seeds / "core_concepts.yaml")
    async with AsyncTestClient(app=_app(db_url, fixture_seeds)) as c:
        await _wait_ready(c)
        yield c


UI = {"screen": "dashboard", "entry": "Home", "open_panels": ["Navigator"]}
WIDGETS = [{"widget": "Quick Links", "summary": "4 links: Inbox, Thesis, Chapter 3, Sources."}]
MESSAGES = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}]


async def test_context_for_shortcuts_cites_the_quick_links_chunk(client: Client) -> None:
    response = await client.post("/context", json={
        "query": "where are my shortcuts?", "ui_context": UI, "widget_states": WIDGETS, "recent_messages": MESSAGES,
    })
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "answer" and body["request_id"]
    assert [s["name"] for s in body["sections"]] == [
        "Core concepts", "Relevant documentation", "UI context", "Widget states", "Recent messages",
    ]
    docs = body["sections"][1]
    top = docs["citations"][0]
    assert top["doc_slug"] == "widgets/quick-links"
    assert top["header_path"] and top["header_path"].startswith("Quick Links")
    assert top["label"].startswith("Quick Links") and top["chunk_index"] is not None
    assert "shortcuts to the entries and workspaces" in docs["text"]
    counter = get_token_counter()
    for section in body["sections"]:
        assert section["tokens"] == counter.count(section["text"]) <= section["budget"]
    assert body["total_tokens"] == counter.count(body["text"]) <= body["total_budget"] == 3000
    assert "Screen: dashboard" in body["text"] and "assistant: Hello! How can I help?" in body["text"]
    assert "- Home: Home is your main entry dashboard" in body["text"]
    assert "all-MiniLM-L6-v2" in body["tokenizer"]
    assert body["dropped"] == []


async def test_context_without_a_match_has_the_clarification_and_no_documentation(client: Client) -> None:
    response = await client.post("/context", json={"query": "zebra pancakes"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] in {"no_match", "clarify"}
    docs = body["sections"][1]
    assert docs["citations"] == [] and body["message"] in docs["text"]
    assert body["sections"][0]["text"].startswith("## Core concepts")


async def test_budget_overrides_apply_per_request(client: Client) -> None:
    response = await client.post("/context", json={
        "query": "where are my shortcuts?", "recent_messages": MESSAGES * 2,
        "budget": {"retrieved_docs": 40, "recent_messages": 20, "max_chunks_per_doc": 1},
    })
    assert response.status_code == 200, response.text
    body = response.json()
    budgets = {s["name"]: (s["tokens"], s["budget"]) for s in body["sections"]}
    assert budgets["Relevant documentation"][1] == 40 and budgets["Recent messages"][1] == 20
    assert all(tokens <= budget for tokens, budget in budgets.values())
    assert {d["reason"] for d in body["dropped"]} >= {"section_budget"}
    assert any(d["item"].startswith("message 1 of 4") for d in body["dropped"])


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({"query": "shortcuts", "recent_messages": MESSAGES * 3}, "length <= 5"),
        ({"query": "shortcuts", "extra": 1}, "extra"),
        ({"query": "   "}, "query must be 1"),
        ({"query": "shortcuts", "budget": {"total": 0}}, ">= 1"),
        ({"query": "shortcuts", "recent_messages": [{"role": "system", "content": "x"}]}, "role"),
        ({"query": "shortcuts", "ui_context": {"screen": "Dash Board!"}}, "screen"),
        ({"query": "shortcuts", "widget_states": [{"widget": "w", "summary": "s" * 501}]}, "summary"),
    ],
)
async def test_invalid_requests_are_400(client: Client, payload: dict[str, Any], fragment: str) -> None:
    response = await client.post("/context", json=payload)
    assert response.status_code == 400, response.text
    assert fragment in response.text


# --- issue 35: never less than the answer -----------------------------------------------------


async def test_a_documentation_budget_too_small_for_the_passage_cuts_it_and_keeps_it_first(client: Client) -> None:
    full = (await client.post("/context", json={"query": "where are my shortcuts?"})).json()
    answered = full["sections"][1]["citations"][0]
    response = await client.post("/context", json={"query": "where are my shortcuts?", "budget": {"retrieved_docs": 40}})
    assert response.status_code == 200, response.text
    body = response.json()
    docs = body["sections"][1]
    assert [c["doc_slug"] for c in docs["citations"]] == [answered["doc_slug"]]
    assert docs["citations"][0]["label"] == answered["label"] and docs["citations"][0]["trimmed"]
    assert 0 < docs["tokens"] <= 40 and docs["tokens"] == get_token_counter().count(docs["text"])
    # The text kept is the start of the answering passage, as it stands in the full context.
    kept = docs["text"].split("\n", 2)[2].removesuffix("…")
    assert len(kept.split()) >= 8 and kept in full["sections"][1]["text"]
    assert not any(d["action"] == "dropped" and answered["label"] in d["item"] for d in body["dropped"])


async def test_a_budget_too_small_for_anything_is_a_400_naming_the_minimum(client: Client) -> None:
    response = await client.post("/context", json={"query": "where are my shortcuts?", "budget": {"total": 10}})
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["detail"][0]["field"] == "budget.total"
    minimum = int(re.search(r"below (\d+) tokens", error["error"])[1])  # type: ignore[index]
    assert minimum > 10 and f"give at least {minimum}" in error["error"] and "Quick Links" in error["error"]
    # The minimum it names is enough: the answer's citation and first words, nothing else.
    at_minimum = await client.post("/context", json={"query": "where are my shortcuts?",
                                                     "budget": {"total": minimum, "retrieved_docs": minimum}})
    assert at_minimum.status_code == 200, at_minimum.text
    body = at_minimum.json()
    assert body["total_tokens"] <= minimum and body["sections"][1]["citations"][0]["doc_slug"] == "widgets/quick-links"
    below = await client.post("/context", json={"query": "where are my shortcuts?", "budget": {"retrieved_docs": minimum - 1}})
    assert below.status_code == 400 and below.json()["detail"][0]["field"] == "budget.retrieved_docs"
