"""Issue 35 item 3 on a real PostgreSQL: what the console shows is what the service does.

/ready names the configured phase (no token needed); the query log keeps what the user typed
beside what was searched; insights never advise the phase in force; an evidence score a
decision raised is explained to that very number; a favicon.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from service.feedback.insights import triggers
from service.feedback.store import Counts
from service.flags import InsightsFlags
from tests.conftest import ADMIN_TOKEN_FOR_TESTS, decision_policy
from tests.integration.test_feedback_loop import AUTH, running

SHARED_AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"}


async def test_ready_names_the_configured_phase_and_the_one_in_force(service_client: Any) -> None:
    body = (await service_client.get("/ready")).json()
    assert (body["phase"], body["phase_in_force"]) == (3, 3)
    changed = await service_client.put("/admin/flags", json={"name": "phase", "value": 2}, headers=SHARED_AUTH)
    assert changed.status_code == 200, changed.text
    try:
        body = (await service_client.get("/ready")).json()
        assert (body["phase"], body["phase_in_force"]) == (2, 2)
    finally:
        await service_client.delete("/admin/flags/phase", headers=SHARED_AUTH)
    assert (await service_client.get("/ready")).json()["phase"] == 3


async def test_ready_says_how_phase_3_searches_the_vectors(service_client: Any) -> None:
    """The seed corpus is small: exact search (the same neighbours on every replica); with the
    limit set below its chunks, the HNSW index."""
    body = (await service_client.get("/ready")).json()
    assert body["vector_search"] == "exact", body
    limit = {"name": "semantic.exact_search_max_vectors", "value": body["chunks"] - 1}
    changed = await service_client.put("/admin/flags", json=limit, headers=SHARED_AUTH)
    assert changed.status_code == 200, changed.text
    try:
        assert (await service_client.get("/ready")).json()["vector_search"] == "hnsw"
    finally:
        await service_client.delete("/admin/flags/semantic.exact_search_max_vectors", headers=SHARED_AUTH)


async def test_favicon(service_client: Any) -> None:
    for path in ("/favicon.ico", "/console/assets/favicon.svg"):
        response = await service_client.get(path)
        assert response.status_code == 200 and response.headers["content-type"].startswith("image/svg+xml")
        assert response.content.startswith(b"<svg")
    assert b'rel="icon"' in (await service_client.get("/console")).content


def _shown(line: str) -> float | None:
    """The score a line of `match_explain` arrives at ("... = 0.5102", "score shown 0.9867 = ...")."""
    if line.startswith("calibrated p("):
        return None  # the decision's probability (the calibrated policy), not the page's score
    shown = re.match(r"score shown (\d+\.\d+)", line)
    if shown:
        return float(shown[1])
    ends = re.findall(r"= (\d+\.\d+)", line)
    return float(ends[-1]) if ends else None


async def test_every_evidence_score_is_the_number_its_explanation_ends_on(service_client: Any) -> None:
    # A clarification's first page: the seed rules ask about this query (calibrated answers it).
    async with decision_policy(service_client, "seed_rules"):
        asked = (await service_client.post("/retrieve", json={"query": "how do I create a new note"})).json()
    led = [line for line in asked["results"][0]["match_explain"] if line.startswith("ranked first:")]
    assert asked["status"] == "clarify" and led == [
        f"ranked first: the clarification offers this page ({asked['results'][0]['title']})"]
    for query in ("how do I create a new note", "home", "how do I delete a workspace", "explain workspace"):
        for phase in (1, 2, 3):
            body = (await service_client.post("/retrieve", json={"query": query, "phase": phase})).json()
            for result in body["results"]:
                lines = result["match_explain"]
                numbers = [n for n in map(_shown, lines) if n is not None]
                assert numbers, (query, phase, lines)
                assert abs(numbers[-1] - result["score"]) < 1e-3, (query, phase, result["score"], lines)
                # Issue 35: "the question asks about this page (Navigator)" for "how do I create a new note".
                assert not any("the question asks about this page" in line for line in lines), (query, lines)


async def test_the_query_log_keeps_what_was_typed_beside_what_was_searched(db_url: str, fixture_seeds: Path) -> None:
    async with running(db_url, fixture_seeds) as client:
        first = (await client.post("/retrieve", json={"query": "how do I switch workspaces"})).json()
        history = [{"role": "user", "content": "how do I switch workspaces"},
                   {"role": "assistant", "content": "Switching", "doc_slugs": [first["results"][0]["doc_slug"]]}]
        follow = (await client.post("/retrieve", json={"query": "and how do I rename it?", "history": history})).json()
        assert follow["conversation"]["query"] != "and how do I rename it?"
        row = (await client.get(f"/admin/queries/{follow['request_id']}", headers=AUTH)).json()
        assert row["typed"] == "and how do I rename it?"
        assert row["query"] == follow["conversation"]["query"] and row["tokens"]
        plain = (await client.get(f"/admin/queries/{first['request_id']}", headers=AUTH)).json()
        assert plain["typed"] == plain["query"] == "how do I switch workspaces"
        sample = (await client.get("/admin/review", headers=AUTH)).json()
        assert {item["typed"] for item in sample["items"]} >= {"and how do I rename it?"}


async def test_insights_never_advise_the_phase_in_force(db_url: str, fixture_seeds: Path) -> None:
    async with running(db_url, fixture_seeds) as client:  # flags.yaml: phase 3
        body = (await client.get("/admin/insights?window=24h", headers=AUTH)).json()
        assert body["phase_in_force"] == 3, body["phase_in_force"]
        assert all(t["in_force"] and t["advice"] is None for t in body["triggers"]), body["triggers"]
        assert not any("consider phase" in t["text"] for t in body["triggers"])
    # The same low figures at phase 3 and at phase 1: advice only about a phase above the one in force.
    low = Counts(queries=100, keyword_runs=100, keyword_matched=40, questions=100, question_failures=90,
                 question_keyword_runs=100, question_keyword_matched=10, reviews=100, reviews_right=10)
    at3 = triggers(low, InsightsFlags(), phase_in_force=3)
    assert at3[0]["fired"] and not any("consider phase" in t["text"] for t in at3)
    assert at3[0]["text"].endswith(": phase 3 is in force already")
    at2 = triggers(low, InsightsFlags(), phase_in_force=2)
    assert {t["advice"] for t in at2} == {None, "consider phase 3"}
    at1 = triggers(low, InsightsFlags(), phase_in_force=1)
    assert (at1[0]["advice"], at1[3]["advice"]) == ("consider phase 2", "consider phase 3")
