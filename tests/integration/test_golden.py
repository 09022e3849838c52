"""The golden queries, replayed over HTTP against the real service at every phase.

Each file runs against the corpus it was written for: `logseq*.yaml` against
the service seeded with tests/corpora/logseq-docs (`logseq_client`), every
other file against the seed corpus (`service_client`). A case whose note reads
`known failure @1,2: why` is expected to fail at those phases, a case with
`known_failure: why` at every phase it runs, and one with
`known_failure_under: {calibrated: "@3: why"}` only under that decision policy
(strict: a fix shows up as an unexpected pass). The seed corpus's cases run under
both policies, Logseq's under the default.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from service.golden import GoldenCase, check, known_failure_at, load_golden, phases_of, request_of
from service.replay import replay_cases
from tests.conftest import choice_problem, golden_files


def _marks(case: GoldenCase, phase: int, policy: str) -> list[pytest.MarkDecorator]:
    # A known failure is the service's fault, not the case's: strict, so a fix shows up.
    reason = known_failure_at(case, phase, policy)
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


def _cases(logseq: bool, policy: str) -> list[Any]:
    return [
        pytest.param(case, phase, id=f"{case.id}@phase{phase}", marks=_marks(case, phase, policy))
        for path in golden_files(logseq)
        for case in load_golden(path)
        for phase in phases_of(case)
    ]


def _policies() -> tuple[str, str]:
    """(the decision policy in force by default, the other one): the goldens must pass under both."""
    from service.flags import load_flags
    from service.settings import PROJECT_ROOT

    default = load_flags(PROJECT_ROOT / "flags.yaml").decision.policy
    return default, "seed_rules" if default == "calibrated" else "calibrated"


DEFAULT_POLICY, OTHER_POLICY = _policies()

@pytest.mark.parametrize(("case", "phase"), _cases(logseq=False, policy=DEFAULT_POLICY))
async def test_golden_case(service_client: Any, case: GoldenCase, phase: int) -> None:
    await _replay_one(service_client, case, phase)


@pytest.mark.parametrize(("case", "phase"), _cases(logseq=True, policy=DEFAULT_POLICY))
async def test_logseq_golden_case(logseq_client: Any, case: GoldenCase, phase: int) -> None:
    await _replay_one(logseq_client, case, phase)


@pytest.fixture
async def other_policy(service_client: Any) -> AsyncIterator[str]:
    """The shared app under the other `decision.policy` for one test (runtime override, then removed)."""
    from tests.conftest import decision_policy

    async with decision_policy(service_client, OTHER_POLICY):
        yield OTHER_POLICY


@pytest.mark.parametrize(("case", "phase"), _cases(logseq=False, policy=OTHER_POLICY))
async def test_golden_case_under_the_other_policy(
    service_client: Any, other_policy: str, case: GoldenCase, phase: int
) -> None:
    """decision.policy is selectable: the seed corpus's acceptance cases hold under both rules."""
    ready = (await service_client.get("/ready")).json()
    assert ready["decision_policy"] == other_policy, ready
    await _replay_one(service_client, case, phase)


async def test_ready_names_the_fitted_decision_model_only_under_calibrated(service_client: Any) -> None:
    """Issue 33 item 5: the fit is reported where the policy in force uses it, nowhere else."""
    from tests.conftest import decision_policy

    async with decision_policy(service_client, "calibrated"):
        ready = (await service_client.get("/ready")).json()
    assert ready["decision_policy"] == "calibrated", ready
    assert ready["calibration"].startswith("seed-"), ready
    assert ready["calibration_fit"] == "this corpus's own fit" and ready["calibration_note"] is None, ready
    assert ready["calibration_error"] is None
    async with decision_policy(service_client, "seed_rules"):
        ready = (await service_client.get("/ready")).json()
    assert ready["decision_policy"] == "seed_rules", ready
    assert ready["calibration"] is None and ready["calibration_error"] is None, ready


async def _replay_one(service_client: Any, case: GoldenCase, phase: int) -> None:
    path, body = request_of(case, phase)
    response = await service_client.post(path, json=body)
    assert response.status_code == 200, response.text
    payload = response.json()
    assert payload["phase"] == phase, payload["fallback_path"]
    assert check(case, payload) == []
    # Issue 40: a question offers a real choice, and a no match never asks one it offers nothing for.
    assert choice_problem(payload) is None


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
