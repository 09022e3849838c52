"""The golden dialogues (tests/golden/*.yaml, `dialogues:`), replayed over HTTP turn by turn,
and through the in-process replay (`POST /admin/replay`) like the other golden files.

Each file runs against the corpus it was written for, as in test_golden.py: `logseq*.yaml`
against the service seeded with tests/corpora/logseq-docs (`logseq_client`), every other file
against the seed corpus (`service_client`). A dialogue's known failures under the policy it is
played with (`known_failure`, `known_failure_under`) are strict xfails. The seed corpus's dialogues
are played under both decision policies, Logseq's under the default (their client is expensive);
a dialogue pinned to a policy (`policy:`) is played under that one only.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from service.golden import Dialogue, dialogue_known_failure, load_dialogues
from service.replay import replay_dialogue
from tests.conftest import ADMIN_TOKEN_FOR_TESTS, GOLDEN_DIR, decision_policy, golden_files
from tests.integration.test_golden import DEFAULT_POLICY, OTHER_POLICY


def _dialogues(logseq: bool, policy: str = DEFAULT_POLICY, pinned_too: bool = True) -> list[Any]:
    """The dialogues played with `policy` in force (a pinned one under its pin; `pinned_too`
    False leaves out the pinned ones), each with its known failure there."""
    params = []
    for path in golden_files(logseq):
        for d in load_dialogues(path):
            if not pinned_too and d.policy is not None:
                continue
            reason = dialogue_known_failure(d, policy)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(d, id=d.id, marks=marks))
    return params


def test_there_are_at_least_forty_dialogues_over_the_seed_corpus() -> None:
    assert len(_dialogues(logseq=False)) >= 40


def test_there_are_at_least_forty_dialogues_over_logseq_docs() -> None:
    assert len(_dialogues(logseq=True)) >= 40


async def _play(client: Any, dialogue: Dialogue) -> None:
    async def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = await client.post("/retrieve", json=body)
        return response.status_code, response.json()

    # A pinned dialogue is about its policy's behaviour: played under it whatever is in force.
    pin = decision_policy(client, dialogue.policy) if dialogue.policy else contextlib.nullcontext()
    async with pin:
        result = await replay_dialogue(dialogue, post)
    assert result.failures == []


@pytest.mark.parametrize("dialogue", _dialogues(logseq=False))
async def test_golden_dialogue(service_client: Any, dialogue: Dialogue) -> None:
    await _play(service_client, dialogue)


@pytest.fixture
async def other_policy(service_client: Any) -> AsyncIterator[str]:
    """The shared app under the other `decision.policy` for one test (runtime override, then removed)."""
    async with decision_policy(service_client, OTHER_POLICY):
        yield OTHER_POLICY


@pytest.mark.parametrize("dialogue", _dialogues(logseq=False, policy=OTHER_POLICY, pinned_too=False))
async def test_golden_dialogue_under_the_other_policy(
    service_client: Any, other_policy: str, dialogue: Dialogue
) -> None:
    """decision.policy is selectable: the seed corpus's dialogues hold under both rules."""
    assert (await service_client.get("/ready")).json()["decision_policy"] == other_policy
    await _play(service_client, dialogue)


@pytest.mark.parametrize("dialogue", _dialogues(logseq=True))
async def test_logseq_golden_dialogue(logseq_client: Any, dialogue: Dialogue) -> None:
    await _play(logseq_client, dialogue)


async def _replay_in_process(client: Any, name: str) -> None:
    """The file through `POST /admin/replay`: known failures still fail, everything else passes."""
    response = await client.post(
        "/admin/replay", json={"file": name}, headers={"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"},
    )
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["failed"] == 0, [r for r in report["results"] if r["outcome"] not in ("PASS", "XFAIL")]
    dialogues = load_dialogues(GOLDEN_DIR / f"{name}.yaml")
    # The app runs the default policy; a pinned dialogue is played under its pin there too.
    known = sum(dialogue_known_failure(d, DEFAULT_POLICY) is not None for d in dialogues)
    assert (report["passed"], report["known_failures"]) == (len(dialogues) - known, known)


async def test_the_in_process_replay_plays_dialogues_too(service_client: Any) -> None:
    await _replay_in_process(service_client, "dialogues")


async def test_the_in_process_replay_plays_the_logseq_dialogues(logseq_client: Any) -> None:
    await _replay_in_process(logseq_client, "logseq-dialogues")
