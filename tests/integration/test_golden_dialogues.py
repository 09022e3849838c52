"""The golden dialogues (tests/golden/*.yaml, `dialogues:`), replayed over HTTP turn by turn,
and through the in-process replay (`POST /admin/replay`) like the other golden files.

Each file runs against the corpus it was written for, as in test_golden.py: `logseq*.yaml`
against the service seeded with tests/corpora/logseq-docs (`logseq_client`), every other file
against the seed corpus (`service_client`). A dialogue marked `known_failure` is a strict xfail.
"""

from __future__ import annotations

from typing import Any

import pytest

from service.golden import Dialogue, load_dialogues
from service.replay import replay_dialogue
from tests.conftest import ADMIN_TOKEN_FOR_TESTS, GOLDEN_DIR, golden_files


def _dialogues(logseq: bool) -> list[Any]:
    return [
        pytest.param(d, id=d.id, marks=[pytest.mark.xfail(strict=True, reason=d.known_failure)]
                     if d.known_failure else [])
        for path in golden_files(logseq)
        for d in load_dialogues(path)
    ]


def test_there_are_at_least_forty_dialogues_over_the_seed_corpus() -> None:
    assert len(_dialogues(logseq=False)) >= 40


def test_there_are_at_least_forty_dialogues_over_logseq_docs() -> None:
    assert len(_dialogues(logseq=True)) >= 40


async def _play(client: Any, dialogue: Dialogue) -> None:
    async def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = await client.post("/retrieve", json=body)
        return response.status_code, response.json()

    result = await replay_dialogue(dialogue, post)
    assert result.failures == []


@pytest.mark.parametrize("dialogue", _dialogues(logseq=False))
async def test_golden_dialogue(service_client: Any, dialogue: Dialogue) -> None:
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
    known = sum(d.known_failure is not None for d in dialogues)
    assert (report["passed"], report["known_failures"]) == (len(dialogues) - known, known)


async def test_the_in_process_replay_plays_dialogues_too(service_client: Any) -> None:
    await _replay_in_process(service_client, "dialogues")


async def test_the_in_process_replay_plays_the_logseq_dialogues(logseq_client: Any) -> None:
    await _replay_in_process(logseq_client, "logseq-dialogues")
