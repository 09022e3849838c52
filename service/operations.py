"""The operator's side of one replica: runtime flags, kill switch, telemetry.

    FlagStore.flags() ──► Pipeline.flags            (file < env < overrides)
    KillSwitch.route(flags) ──► Pipeline         (Route: ceiling / disabled, and why)
    Pipeline tier attempts ──► KillSwitch.record()  (rolling windows per phase)
    KillSwitch events ──► log + Telemetry counter + GET /admin/flags
    Pipeline requests ──► Telemetry (histogram, counters, spans) ──► GET /metrics, OTLP

Made in `create_app` (flags are validated before serving); the store loads
the overrides and starts LISTENing once the pool is up (`lifespan.bootstrap`
calls `AppState.on_pool_ready`), and stops on shutdown.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.domain.outcome import Tier
from service.flag_store import FlagStore
from service.flags import Flags, env_overrides, load_flags_file
from service.routing.monitor import Clock, KillSwitch, KillSwitchEvent, monotonic_ms
from service.telemetry import Telemetry

OPS_KEY = "operations"


@dataclass
class Operations:
    store: FlagStore
    kill_switch: KillSwitch
    telemetry: Telemetry

    def flags(self) -> Flags:
        return self.store.current

    def describe(self) -> dict[str, Any]:
        """The body of `GET /admin/flags` (without the audit rows)."""
        ks = self.kill_switch
        ks.refresh()
        return {
            "flags": self.store.describe(ks.ceiling),
            "overrides": dict(sorted(self.store.overrides.items())),
            "rejected_overrides": self.store.rejected,
            "sync": {
                "listening": self.store.listener_connected,
                "last_sync": self.store.last_sync,
                "syncs": self.store.syncs,
            },
            "kill_switch": {
                "state": ks.state,
                "ceiling": ks.ceiling,
                "cooldown_remaining_s": ks.cooldown_remaining_s(),
                "limits": _builtins(self.flags().kill_switch),
                "windows": {
                    Tier.of_phase(phase).value: {
                        "samples": w.samples, "errors": w.errors, "error_rate": round(w.error_rate, 4),
                        "p50_ms": w.p50_ms, "p95_ms": w.p95_ms,
                    }
                    for phase, w in ks.window_stats().items()
                },
                "events": [_event(e) for e in reversed(ks.events)],
            },
        }


def build_operations(
    flags_file: Path,
    environ: Mapping[str, str] | None = None,
    *,
    clock: Clock = monotonic_ms,
) -> Operations:
    """Validate flags.yaml and the environment now (a bad value raises FlagError)."""
    env = os.environ if environ is None else environ
    store = FlagStore(load_flags_file(flags_file), env_overrides(env))
    telemetry = Telemetry(environ=env)

    def on_event(event: KillSwitchEvent) -> None:
        telemetry.kill_switch_event(event.kind, event.trigger)

    kill_switch = KillSwitch(lambda: store.current.kill_switch, clock=clock, on_event=on_event)
    return Operations(store=store, kill_switch=kill_switch, telemetry=telemetry)


def _builtins(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)


def _event(event: KillSwitchEvent) -> dict[str, Any]:
    window = event.window
    return {
        "kind": event.kind, "trigger": event.trigger, "reason": event.reason,
        "phase": event.phase, "ceiling": event.ceiling, "at": event.wall_time,
        "window": None if window is None else {
            "samples": window.samples, "error_rate": round(window.error_rate, 4),
            "p50_ms": window.p50_ms, "p95_ms": window.p95_ms,
        },
    }
