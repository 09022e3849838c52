"""The golden queries, replayed over HTTP against the real service at every phase."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from service.golden import GoldenCase, check, load_golden, phases_of, request_of
from service.replay import replay_cases

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
CASES = [
    pytest.param(
        case, phase, id=f"{case.id}@phase{phase}",
        # A known failure is the service's fault, not the case's: strict, so a fix shows up.
        marks=[pytest.mark.xfail(reason=case.known_failure, strict=True)] if case.known_failure else [],
    )
    for path in sorted(GOLDEN_DIR.glob("*.yaml"))
    for case in load_golden(path)
    for phase in phases_of(case)
]


@pytest.mark.parametrize(("case", "phase"), CASES)
async def test_golden_case(service_client: Any, case: GoldenCase, phase: int) -> None:
    path, body = request_of(case, phase)
    response = await service_client.post(path, json=body)
    assert response.status_code == 200, response.text
    payload = response.json()
    assert payload["phase"] == phase, payload["fallback_path"]
    assert check(case, payload) == []


async def test_replay_reports_failures_and_passes(service_client: Any) -> None:
    """The replay runner itself: a wrong expectation fails with the reason named."""
    good, bad = (
        GoldenCase(id="ok", query="explain workspace", phases=[1], expect=_expect(top="concepts/workspace")),
        GoldenCase(id="wrong", query="explain workspace", phases=[1], expect=_expect(top="widgets/recent")),
    )

    async def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = await service_client.post("/retrieve", json=body)
        return response.status_code, response.json()

    results = await replay_cases([good, bad], post)
    assert [r.passed for r in results] == [True, False]
    assert "top 'concepts/workspace', expected widgets/recent" in results[1].line()


def _expect(top: str) -> Any:
    from service.golden import Expectation

    return Expectation(decision="answer", top=top)
