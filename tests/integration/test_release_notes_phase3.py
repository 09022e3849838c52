"""Phase 3 on MkDocs' docs: the release notes answer release questions only (issue 34 item 6).

The real app, seeded into PostgreSQL and embedded once per session (`mkdocs_client`), answers
every case of bench/queries/mkdocs.yaml over HTTP at phase 3 under both decision policies: no
case that is not about a release gets the 110 KB release notes as its answer or first option
(the page prior multiplies into the fusion's page prior, scoring/hybrid.py), and the release
questions still reach it. Phases 1 and 2: tests/unit/test_release_notes.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from service.evaluation.labelled import load_query_set
from tests.conftest import decision_policy

LABELLED = Path(__file__).resolve().parents[2] / "bench" / "queries" / "mkdocs.yaml"
RELEASE_NOTES = "about/release-notes"


def _first(body: dict[str, Any]) -> str | None:
    pages = body["results"] if body["status"] == "answer" else body["options"] if body["status"] == "clarify" else []
    return pages[0]["doc_slug"] if pages else None


@pytest.mark.parametrize("policy", ["seed_rules", "calibrated"])
async def test_at_phase_3_only_release_questions_get_the_release_notes(mkdocs_client: Any, policy: str) -> None:
    crowded, reached, phases = [], [], set()
    async with decision_policy(mkdocs_client, policy):
        for case in load_query_set(LABELLED):
            response = await mkdocs_client.post("/retrieve", json={"query": case.query, "phase": 3, "top_k": 5})
            assert response.status_code == 200, response.text
            body = response.json()
            phases.add(body["phase"])
            pages = [r["doc_slug"] for r in body["results"]] + [o["doc_slug"] for o in body["options"]]
            if case.note == "release question":
                reached.append(RELEASE_NOTES in pages)
            elif _first(body) == RELEASE_NOTES:
                crowded.append((case.id, case.query, body["status"]))
    assert 3 in phases, "phase 3 never answered: the check would be phase 2's"
    assert crowded == []
    assert len(reached) >= 3 and sum(reached) >= len(reached) - 1
