"""The phase a request starts from: the caller's cap, the flags and the kill switch's verdict."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from service.domain.outcome import FallbackStep, Route, Tier
from service.flags import Flags

Router = Callable[[Flags], Route]
"""The kill switch's verdict on the flags in force (`routing.monitor.KillSwitch.route`)."""


class PhaseRecorder(Protocol):
    """Receives one (phase, latency, error) sample per tier attempt (the kill-switch monitor)."""

    def record(self, tier: Tier, latency_ms: float, error: bool, database: bool = False) -> None: ...


def starting_phase(caller: int, flags: Flags, route: Route | None) -> tuple[int, tuple[FallbackStep, ...]]:
    """The phase to start from, and a step naming why for every phase skipped below
    the caller's: the flags (`phase`, `enabled`) or the kill switch (`route.reason`)."""
    configured = flags.phase if flags.enabled else 0
    allowed = configured if route is None else min(route.phase, configured)
    phase = min(caller, allowed)
    steps: list[FallbackStep] = []
    for skipped in range(caller, phase, -1):
        if skipped > configured:
            why = f"flags: phase {flags.phase}" if flags.enabled else "flags: retrieval disabled"
        else:
            why = (route.reason if route is not None else None) or "kill switch"
        steps.append(FallbackStep(tier=Tier.of_phase(skipped), reason=why))
    return phase, tuple(steps)
