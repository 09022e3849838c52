"""The golden queries, replayed over HTTP against the real service at every phase.

Each file runs against the corpus it was written for: `logseq*.yaml` against
the service seeded with tests/corpora/logseq-docs (`logseq_client`), every
other file against the seed corpus (`service_client`). A case whose note reads
`known failure @1,2: why` is expected to fail at those phases, a case with
`known_failure: why` at every phase it runs (strict: a fix shows up as an
unexpected pass).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from service.golden import GoldenCase, check, load_golden, phases_of, request_of
from service.replay import replay_cases

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
_KNOWN_FAILURE = re.compile(r"known failure @([\d,\s]+):\s*(.*)", re.DOTALL)


def _is_logseq(path: Path) -> bool:
    return path.stem.startswith("logseq")


def _marks(case: GoldenCase, phase: int) -> list[pytest.MarkDecorator]:
    # A known failure is the service's fault, not the case's: strict, so a fix shows up.
    if case.known_failure:
        return [pytest.mark.xfail(strict=True, reason=case.known_failure)]
    match = _KNOWN_FAILURE.match(case.note or "")
    if match is None or str(phase) not in re.split(r"[,\s]+", match.group(1)):
        return []
    return [pytest.mark.xfail(strict=True, reason=match.group(2).strip())]


def _cases(logseq: bool) -> list[Any]:
    return [
        pytest.param(case, phase, id=f"{case.id}@phase{phase}", marks=_marks(case, phase))
        for path in sorted(GOLDEN_DIR.glob("*.yaml")) if _is_logseq(path) == logseq
        for case in load_golden(path)
        for phase in phases_of(case)
    ]


@pytest.mark.parametrize(("case", "phase"), _cases(logseq=False))
async def test_golden_case(service_client: Any, case: GoldenCase, phase: int) -> None:
    await _replay_one(service_client, case, phase)


@pytest.mark.parametrize(("case", "phase"), _cases(logseq=True))
async def test_logseq_golden_case(logseq_client: Any, case: GoldenCase, phase: int) -> None:
    await _replay_one(logseq_client, case, phase)


async def _replay_one(service_client: Any, case: GoldenCase, phase: int) -> None:
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
