"""Issue 40: a clarification offers a real choice, under either decision policy, at every phase.

Every query of the seed corpus's labelled set (bench/queries/seed.yaml, dev and test) is put to
the real service at phases 1-3 under both policies: no response asks a question with fewer than
two pages to choose from, and a no match that offers no page does not end in a question (small
talk's reply aside). The
seed rules used to ask "I think you mean Markdown. Is that right?" with one page for "markdown"
at phases 1 and 2.
"""

from __future__ import annotations

from typing import Any

import pytest

from service.evaluation.labelled import load_labelled_set
from service.settings import PROJECT_ROOT
from tests.conftest import choice_problem, decision_policy

_, CASES = load_labelled_set(PROJECT_ROOT / "bench" / "queries" / "seed.yaml")


@pytest.mark.parametrize("policy", ["calibrated", "seed_rules"])
async def test_no_question_without_a_choice(service_client: Any, policy: str) -> None:
    problems = []
    async with decision_policy(service_client, policy):
        for case in CASES:
            for phase in (1, 2, 3):
                response = await service_client.post("/retrieve", json={"query": case.query, "phase": phase})
                assert response.status_code == 200, response.text
                problem = choice_problem(response.json())
                if problem is not None:
                    problems.append(f"{case.id} @{phase}: {problem}")
    assert problems == []
