"""Model threads sized to the cores this process may use, one left to the event loop."""

from __future__ import annotations

import os

import pytest

from service.embedding import base
from service.flags import EmbeddingFlags


@pytest.mark.parametrize(("cores", "expected"), [({0}, 1), ({0, 1}, 1), (set(range(8)), 7)])
def test_auto_threads_leave_one_core_to_the_event_loop(monkeypatch: pytest.MonkeyPatch,
                                                       cores: set[int], expected: int) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: cores, raising=False)
    assert base.available_cores() == len(cores)
    assert base.model_threads() == expected


def test_affinity_not_the_machine_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    # A process pinned to 2 of 64 cores (taskset, a container's cpuset) must not
    # start 63 model threads on them.
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {3, 4}, raising=False)
    assert base.model_threads() == 1


def test_a_configured_count_wins_and_the_default_is_auto() -> None:
    assert base.model_threads(3) == 3
    assert EmbeddingFlags().threads == 0
