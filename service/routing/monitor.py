"""Kill switch: rolling per-phase windows of latency and outcome → phase ceiling.

States and transitions: the kill-switch table of docs/operations/flags-and-kill-switch.md,
which this module implements; defaults in the schema (service/flags.py) → ``kill_switch``.

State is a *ceiling* on the phase: ``None`` (closed, no restriction), 2 or 1
(phases dropped) or 0 (retrieval disabled).  A window needs ``min_samples``
before it can trip.  An error-rate trip lowers the ceiling below the failing
phase (``error_action: drop_phase``; phases 1-2 answer from memory) or
disables retrieval (``disable``, the seed plan's literal rule).  A tripped
switch goes half-open after ``cooldown_s``, or, when database errors caused
the trip, as soon as the database answers again (``database_answered``, from
the database supervisor): ``probe_share`` of the requests then run at the
configured phase; once the probed phase has ``min_samples`` healthy samples
the switch closes, a breach re-opens it for another cool-down.  A manual
kill only clears through ``reset()``.

A p95 trip needs a *sustained* breach, as multi-window burn-rate alerting
does: p95 above the limit over the long window (``window_s``) and in every
slice (a sixth) of the last ``short_window_s`` that saw traffic (still
happening, not just a tail), with slow samples at least ``short_window_s``
apart (it has lasted).  Counting samples alone let a burst of seconds trip the
switch: a closed-loop burst supplies its own majority of samples, so only
time slices tell a burst from trouble.
Error-rate trips and half-open probes stay immediate: errors are never
"slow but answered", and a probe only restarts a cool-down already running.

p95 without sorting: for the nearest-rank percentile, ``p95 > T`` holds
exactly when more than 5 % of the samples are slower than ``T``, so each
window keeps a running count of slow samples and the per-request cost is
O(1) amortised.  Exact p50/p95 figures are computed only for reports.

Pure logic: no I/O, no asyncio; time comes from an injectable clock in
milliseconds so tests run the 5-minute logic in milliseconds.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from service.domain.outcome import Route, Tier
from service.flags import Flags, KillSwitchFlags

log = logging.getLogger("service.killswitch")

Clock = Callable[[], float]
"""Milliseconds from an arbitrary origin (monotonic)."""

State = Literal["closed", "tripped", "half_open", "manual"]
EventKind = Literal["trip", "half_open", "recover", "probe_failed", "manual_kill", "reset"]
TripCause = Literal["database", "errors", "latency", "manual"]
"""What tripped the switch: `database` trips probe again as soon as the database answers."""

PHASE_TIERS = {Tier.phase1: 1, Tier.phase2: 2, Tier.phase3: 3}
MAX_EVENTS = 50


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


@dataclass(frozen=True)
class WindowStats:
    samples: int
    errors: int
    slow: int
    """Samples slower than the p95 threshold in force when they were recorded."""
    p50_ms: float | None
    p95_ms: float | None

    @property
    def error_rate(self) -> float:
        return self.errors / self.samples if self.samples else 0.0


@dataclass
class RollingWindow:
    """Samples of one phase within the last `window_ms`: (t, latency, error, slow)."""

    samples: deque[tuple[float, float, bool, bool, bool]] = field(default_factory=deque)
    errors: int = 0
    slow: int = 0
    database_errors: int = 0
    """Errors that were the database's (unreachable, timeout): a subset of `errors`."""
    slow_times: deque[float] = field(default_factory=deque)
    """When the slow samples in the window were recorded (how long a breach has lasted)."""

    def add(self, now: float, latency_ms: float, error: bool, slow: bool, database: bool = False) -> None:
        database = database and error
        self.samples.append((now, latency_ms, error, slow, database))
        self.errors += error
        self.slow += slow
        self.database_errors += database
        if slow:
            self.slow_times.append(now)

    def prune(self, now: float, window_ms: float) -> None:
        cutoff = now - window_ms
        samples = self.samples
        while samples and samples[0][0] < cutoff:
            _, _, error, slow, database = samples.popleft()
            self.errors -= error
            self.slow -= slow
            self.database_errors -= database
        while self.slow_times and self.slow_times[0] < cutoff:
            self.slow_times.popleft()

    @property
    def slow_span_ms(self) -> float:
        """Time between the first and the last slow sample in the window."""
        return self.slow_times[-1] - self.slow_times[0] if self.slow_times else 0.0

    @property
    def breaches_p95(self) -> bool:
        return bool(self.samples) and self.slow / len(self.samples) > 0.05  # ⇔ nearest-rank p95 > T

    def clear(self) -> None:
        self.samples.clear()
        self.slow_times.clear()
        self.errors = self.slow = self.database_errors = 0

    def __len__(self) -> int:
        return len(self.samples)

    def stats(self) -> WindowStats:
        n = len(self.samples)
        if not n:
            return WindowStats(0, 0, 0, None, None)
        latencies = sorted(s[1] for s in self.samples)
        return WindowStats(
            samples=n, errors=self.errors, slow=self.slow,
            p50_ms=round(_nearest_rank(latencies, 0.50), 3),
            p95_ms=round(_nearest_rank(latencies, 0.95), 3),
        )


SLICES = 6
"""Slices of the short window, each judged on its own."""


@dataclass
class SlicedWindow:
    """The last `short_window_s` as time slices of [index, samples, slow]: a slice
    is judged on its own, so a burst's many samples cannot outvote the rest."""

    slices: deque[list[int]] = field(default_factory=deque)
    slice_ms: float = 0.0

    def add(self, now: float, slow: bool, short_ms: float) -> None:
        slice_ms = short_ms / SLICES
        if slice_ms != self.slice_ms:  # the flag changed: old slices have another width
            self.slices.clear()
            self.slice_ms = slice_ms
        index = int(now // slice_ms)
        cutoff = int((now - short_ms) // slice_ms)
        while self.slices and self.slices[0][0] <= cutoff:
            self.slices.popleft()
        if self.slices and self.slices[-1][0] == index:
            self.slices[-1][1] += 1
            self.slices[-1][2] += slow
        else:
            self.slices.append([index, 1, int(slow)])

    def every_slice_breaches(self) -> bool:
        """p95 above the limit in every slice with traffic (⇔ > 5 % slow)."""
        return bool(self.slices) and all(slow / n > 0.05 for _, n, slow in self.slices)

    def clear(self) -> None:
        self.slices.clear()


def _figure(breach: Breach, cfg: KillSwitchFlags, phase: int) -> str:
    """The window figure that tripped, e.g. `p95 612 ms > 500 ms over 300 s (phase 3)`."""
    stats = breach.stats
    if breach.kind == "error_rate":
        figure = f"error rate {stats.error_rate:.1%} > {cfg.error_rate:.1%}"
    else:
        figure = f"p95 {stats.p95_ms:g} ms > {cfg.p95_ms:g} ms"
    return f"{figure} over {cfg.window_s:g} s (phase {phase}, {stats.samples} samples)"


def _nearest_rank(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (the definition the trigger uses)."""
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


@dataclass(frozen=True)
class KillSwitchEvent:
    kind: EventKind
    at_ms: float
    """Clock time (ms) of the event; `wall_time` is for humans."""
    wall_time: float
    reason: str
    trigger: str
    """A short, fixed label for metrics: error_rate, p95, p95_still_breached, cooldown,
    probe_ok, probe_breached, manual, configured."""
    phase: int | None
    """The phase whose window caused the event (None for manual actions)."""
    ceiling: int | None
    """The ceiling after the event: None = no restriction, 0 = disabled."""
    window: WindowStats | None = None


@dataclass(frozen=True)
class Breach:
    kind: Literal["error_rate", "p95"]
    stats: WindowStats


class KillSwitch:
    """Per-phase windows + the trip / half-open / recover state machine.

    `record()` is the pipeline's recorder; `effective_phase()` is its router
    input (flags + kill switch → the phase to start from, 0 = disabled).
    """

    def __init__(
        self,
        settings: Callable[[], KillSwitchFlags],
        *,
        clock: Clock = monotonic_ms,
        on_event: Callable[[KillSwitchEvent], None] | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.on_event = on_event
        self.windows: dict[int, RollingWindow] = {p: RollingWindow() for p in (1, 2, 3)}
        self.short_windows: dict[int, SlicedWindow] = {p: SlicedWindow() for p in (1, 2, 3)}
        """The last `short_window_s` of each phase: is a p95 breach still happening?"""
        self.held = 0
        """p95 breaches of the long window not (yet) sustained, so no trip (for reports)."""
        self.ceiling: int | None = None
        self.manual = False
        self.half_open = False
        self.drops = 0
        """p95 drops since the switch was last closed (a second breach disables)."""
        self.tripped_at: float | None = None
        self.trip_reason: str | None = None
        """Why the ceiling is in force, with the figure that tripped it (for `fallback_path`)."""
        self.trip_cause: TripCause | None = None
        self.events: deque[KillSwitchEvent] = deque(maxlen=MAX_EVENTS)
        self._probe_credit = 0.0

    # -- state --------------------------------------------------------------
    @property
    def state(self) -> State:
        if self.manual:
            return "manual"
        if self.ceiling is None:
            return "closed"
        return "half_open" if self.half_open else "tripped"

    def effective_phase(self, flags: Flags) -> int:
        """The phase a request starts from: 0 when retrieval is disabled.

        While half-open, every 1/probe_share-th request is a probe and runs at
        the configured phase (deterministic, so tests and operators can
        reason about it).
        """
        if not flags.enabled:
            return 0
        ceiling = self.ceiling
        if ceiling is None:
            return flags.phase
        self._maybe_half_open()
        if self.half_open:
            if flags.phase <= ceiling:  # the configured phase is already below the cap
                self._recover(None, "configured phase is within the kill-switch ceiling",
                              "configured")
                return flags.phase
            self._probe_credit += self.settings().probe_share
            if self._probe_credit >= 1.0:
                self._probe_credit -= 1.0
                return flags.phase
        return min(ceiling, flags.phase)

    def route(self, flags: Flags) -> Route:
        """`effective_phase` plus, when it is below the configured phase, why."""
        phase = self.effective_phase(flags)
        if phase >= flags.phase or not flags.enabled:
            return Route(phase=phase)
        return Route(phase=phase, reason=f"kill switch: {self.trip_reason or self.state}")

    # -- samples ------------------------------------------------------------
    def record(self, tier: Tier, latency_ms: float, error: bool, database: bool = False) -> None:
        """One tier attempt: its latency and whether it failed (timeout, DB, exception);
        `database`: the failure was the database's (unreachable, timeout)."""
        phase = PHASE_TIERS.get(tier)
        if phase is None:
            return
        cfg = self.settings()
        now = self.clock()
        window = self.windows[phase]
        window.prune(now, cfg.window_s * 1000.0)
        window.add(now, latency_ms, error, latency_ms > cfg.p95_ms, database)
        if cfg.short_window_s > 0:
            self.short_windows[phase].add(now, latency_ms > cfg.p95_ms, cfg.short_window_s * 1000.0)
        if self.manual:
            return
        breach = self._breach(window, cfg)
        ceiling = self.ceiling
        if ceiling is not None and (phase > ceiling or ceiling == 0):
            # A probe sample (only probes run above the ceiling).
            if not self.half_open:
                return  # a request that started before the trip; ignore
            if breach is not None:
                self._reopen(phase, breach)
            elif len(window) >= cfg.min_samples:
                self._recover(phase, "probed phase healthy", "probe_ok")
            return
        if breach is None:
            return
        if breach.kind == "p95" and not self._sustained(phase, cfg):
            self.held += 1
            return
        if breach.kind == "error_rate":
            # drop_phase: only the failing phase (and those above) are taken out; the
            # phases below answer from memory. disable: the seed plan's literal rule.
            ceiling = phase - 1 if cfg.error_action == "drop_phase" else 0
            cause: TripCause = "database" if 2 * window.database_errors >= window.errors else "errors"
            rate = f"{100 * breach.stats.error_rate:.1f} % > {100 * cfg.error_rate:g} %"
            self._trip(ceiling, phase, f"error rate {rate} over {cfg.window_s:g} s", "error_rate",
                       breach, cause)
        elif self.drops >= 1:
            self._trip(0, phase, f"p95 still above {cfg.p95_ms:g} ms after dropping a phase",
                       "p95_still_breached", breach, "latency")
        elif phase <= 1:
            self._trip(0, phase, f"p95 above {cfg.p95_ms:g} ms on phase 1", "p95", breach, "latency")
        else:
            self.drops += 1
            self._trip(phase - 1, phase, f"p95 above {cfg.p95_ms:g} ms: phase {phase} dropped",
                       "p95", breach, "latency")

    @staticmethod
    def _breach(window: RollingWindow, cfg: KillSwitchFlags) -> Breach | None:
        n = len(window)
        if n < cfg.min_samples:
            return None
        if window.errors / n > cfg.error_rate:
            return Breach("error_rate", window.stats())
        if window.breaches_p95:
            return Breach("p95", window.stats())
        return None

    def _sustained(self, phase: int, cfg: KillSwitchFlags) -> bool:
        """The long window's p95 breach also holds in every recent slice and has
        lasted the short window (slow samples that far apart)."""
        short_ms = cfg.short_window_s * 1000.0
        if short_ms <= 0:
            return True
        return (self.short_windows[phase].every_slice_breaches()
                and self.windows[phase].slow_span_ms >= short_ms)

    # -- transitions --------------------------------------------------------
    def _maybe_half_open(self) -> None:
        if self.manual or self.half_open or self.ceiling is None or self.tripped_at is None:
            return
        now = self.clock()
        if now - self.tripped_at >= self.settings().cooldown_s * 1000.0:
            self._half_open("cool-down over: probing with a share of traffic", "cooldown")

    def _half_open(self, reason: str, trigger: str) -> None:
        self.half_open = True
        self._probe_credit = 0.0
        self._clear_windows()
        self._emit("half_open", None, reason, trigger, None)

    def _trip(self, ceiling: int, phase: int, reason: str, trigger: str, breach: Breach,
              cause: TripCause) -> None:
        self.ceiling = ceiling if self.ceiling is None else min(ceiling, self.ceiling)
        self.tripped_at = self.clock()
        self.trip_reason = _figure(breach, self.settings(), phase) + (
            " after dropping a phase" if trigger == "p95_still_breached" else "")
        self.trip_cause = cause
        self.half_open = False
        self._clear_windows()
        self._emit("trip", phase, reason, trigger, breach.stats)

    def _reopen(self, phase: int, breach: Breach) -> None:
        window = self.windows[phase]
        database = breach.kind == "error_rate" and 2 * window.database_errors >= window.errors
        self.trip_cause = "database" if database else ("errors" if breach.kind == "error_rate" else "latency")
        self.half_open = False
        self.tripped_at = self.clock()
        self.trip_reason = f"probe of phase {phase} failed: {_figure(breach, self.settings(), phase)}"
        self._clear_windows()
        self._emit("probe_failed", phase, f"probe breached ({breach.kind}); cool-down restarts",
                   "probe_breached", breach.stats)

    def _recover(self, phase: int | None, reason: str, trigger: str) -> None:
        self.ceiling = None
        self.half_open = False
        self.drops = 0
        self.tripped_at = None
        self.trip_reason = None
        self.trip_cause = None
        stats = self.windows[phase].stats() if phase is not None else None
        self._clear_windows()
        self._emit("recover", phase, reason, trigger, stats)

    def kill(self, reason: str = "manual override") -> KillSwitchEvent:
        """`POST /admin/kill`: disable retrieval now, until `reset()`."""
        self.manual = True
        self.ceiling = 0
        self.half_open = False
        self.tripped_at = self.clock()
        self.trip_reason = f"manual kill ({reason})"
        self.trip_cause = "manual"
        return self._emit("manual_kill", None, reason, "manual", None)

    def reset(self, reason: str = "manual reset") -> KillSwitchEvent:
        """`POST /admin/reset`: clear every trip (and a manual kill) now."""
        self.manual = False
        self.ceiling = None
        self.half_open = False
        self.drops = 0
        self.tripped_at = None
        self.trip_reason = None
        self.trip_cause = None
        self._clear_windows()
        return self._emit("reset", None, reason, "manual", None)

    def _clear_windows(self) -> None:
        # Samples from before a transition say nothing about the new state.
        for window in self.windows.values():
            window.clear()
        for sliced in self.short_windows.values():
            sliced.clear()

    def _emit(self, kind: EventKind, phase: int | None, reason: str, trigger: str,
              stats: WindowStats | None) -> KillSwitchEvent:
        event = KillSwitchEvent(kind=kind, at_ms=self.clock(), wall_time=time.time(), reason=reason,
                                trigger=trigger, phase=phase, ceiling=self.ceiling, window=stats)
        self.events.append(event)
        level = logging.INFO if kind in ("recover", "reset", "half_open") else logging.WARNING
        log.log(level, "kill switch %s: %s (phase %s, ceiling %s)", kind, reason, phase,
                "none" if self.ceiling is None else self.ceiling)
        if self.on_event is not None:
            self.on_event(event)
        return event

    def database_answered(self) -> None:
        """The database supervisor's probe succeeded: a trip the database's errors
        caused probes now instead of after the cool-down (latency trips wait)."""
        if self.manual or self.half_open or self.ceiling is None or self.trip_cause != "database":
            return
        self._half_open("the database answers again: probing with a share of traffic",
                        "database_back")

    # -- reporting ----------------------------------------------------------
    def refresh(self) -> None:
        """Apply a cool-down that ended while no request came (for reports)."""
        self._maybe_half_open()

    def window_stats(self) -> dict[int, WindowStats]:
        cfg = self.settings()
        now = self.clock()
        out: dict[int, WindowStats] = {}
        for phase, window in self.windows.items():
            window.prune(now, cfg.window_s * 1000.0)
            out[phase] = window.stats()
        return out

    def cooldown_remaining_s(self) -> float | None:
        if self.ceiling is None or self.manual or self.half_open or self.tripped_at is None:
            return None
        left = self.settings().cooldown_s - (self.clock() - self.tripped_at) / 1000.0
        return max(0.0, round(left, 3))
