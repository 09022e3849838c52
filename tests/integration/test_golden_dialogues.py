"""The golden dialogues (tests/golden/dialogues*.yaml), replayed over HTTP turn by turn,
and through the in-process replay (`POST /admin/replay`) like the other golden files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from service.golden import Dialogue, load_dialogues
from service.replay import replay_dialogue
from tests.conftest import ADMIN_TOKEN_FOR_TESTS

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden"
DIALOGUE_FILES = sorted(p for p in GOLDEN_DIR.glob("*.yaml") if not p.stem.startswith("logseq"))


def _dialogues() -> list[Any]:
    return [
        pytest.param(d, id=d.id, marks=[pytest.mark.xfail(strict=True, reason=d.known_failure)]
                     if d.known_failure else [])
        for path in DIALOGUE_FILES for d in load_dialogues(path)
    ]


def test_there_are_at_least_forty_dialogues_over_the_seed_corpus() -> None:
    assert len(_dialogues()) >= 40


@pytest.mark.parametrize("dialogue", _dialogues())
async def test_golden_dialogue(service_client: Any, dialogue: Dialogue) -> None:
    async def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        response = await service_client.post("/retrieve", json=body)
        return response.status_code, response.json()

    result = await replay_dialogue(dialogue, post)
    assert result.failures == []


async def test_the_in_process_replay_plays_dialogues_too(service_client: Any) -> None:
    response = await service_client.post(
        "/admin/replay", json={"file": "dialogues"}, headers={"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"},
    )
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["failed"] == 0, [r for r in report["results"] if not r["passed"]]
    assert report["passed"] == len(load_dialogues(GOLDEN_DIR / "dialogues.yaml"))
