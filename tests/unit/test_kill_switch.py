"""The kill-switch state machine with a fake clock (5-minute windows in microseconds)."""

from __future__ import annotations

import random

import pytest

from service.flags import Flags, KillSwitchFlags
from service.routing.monitor import KillSwitch, RollingWindow, _nearest_rank

DEFAULTS = KillSwitchFlags()  # the seed plan's table: 500 ms, 5 min, 5 %, 20 samples, 10 min
FLAGS = Flags()  # phase 3, enabled


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds * 1000.0


def make(cfg: KillSwitchFlags = DEFAULTS) -> tuple[KillSwitch, FakeClock, list[str]]:
    clock = FakeClock()
    events: list[str] = []
    ks = KillSwitch(lambda: cfg, clock=clock, on_event=lambda e: events.append(f"{e.kind}:{e.trigger}"))
    return ks, clock, events


# One slow sample every 4 s: 20 samples span 76 s, longer than the 60 s short
# window, so a p95 breach fed at this pace is sustained (a 1 s pace is a burst).
SUSTAINED_S = 4.0


def feed(ks: KillSwitch, clock: FakeClock, tier: str, n: int, latency: float, error: bool = False,
         every_s: float = 1.0, database: bool = False) -> None:
    for _ in range(n):
        ks.record(tier, latency, error, database)
        clock.advance(every_s)


def test_p95_shortcut_matches_nearest_rank() -> None:
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(1, 80)
        values = [rng.choice([10.0, 600.0, 400.0, 501.0, 500.0]) for _ in range(n)]
        slow = sum(v > 500 for v in values)
        assert (_nearest_rank(sorted(values), 0.95) > 500) == (slow / n > 0.05)


def test_needs_min_samples_before_tripping() -> None:
    ks, clock, events = make()
    feed(ks, clock, "phase3", 19, latency=2000, every_s=SUSTAINED_S)
    assert ks.state == "closed" and events == []
    feed(ks, clock, "phase3", 1, latency=2000, every_s=SUSTAINED_S)
    assert ks.state == "tripped" and ks.ceiling == 2 and events == ["trip:p95"]
    assert ks.effective_phase(FLAGS) == 2


def test_healthy_traffic_never_trips() -> None:
    ks, clock, events = make()
    feed(ks, clock, "phase3", 200, latency=40)
    feed(ks, clock, "phase3", 5, latency=900)  # 5 of 205 slow: p95 still fine
    assert ks.state == "closed" and events == []


def test_old_samples_leave_the_window() -> None:
    ks, clock, _ = make()
    feed(ks, clock, "phase3", 19, latency=2000)
    clock.advance(301)  # 5 minutes later the slow samples are gone
    feed(ks, clock, "phase3", 19, latency=10)
    assert ks.state == "closed"
    assert ks.window_stats()[3].samples == 19


def test_p95_drops_a_phase_then_disables_if_still_breached() -> None:
    ks, clock, events = make()
    feed(ks, clock, "phase3", 20, latency=800, every_s=SUSTAINED_S)
    assert ks.effective_phase(FLAGS) == 2
    # The next window: phase 2 is slow as well → retrieval disabled.
    feed(ks, clock, "phase2", 20, latency=800, every_s=SUSTAINED_S)
    assert ks.ceiling == 0 and ks.effective_phase(FLAGS) == 0
    assert events == ["trip:p95", "trip:p95_still_breached"]


def test_drop_from_phase_two_goes_to_one() -> None:
    ks, clock, _ = make()
    feed(ks, clock, "phase2", 20, latency=800, every_s=SUSTAINED_S)
    assert ks.effective_phase(FLAGS) == 1
    assert ks.effective_phase(Flags(phase=1)) == 1


def test_error_rate_takes_the_failing_phase_out_and_phases_below_keep_answering() -> None:
    ks, clock, events = make()
    feed(ks, clock, "phase3", 18, latency=10)
    feed(ks, clock, "phase3", 2, latency=10, error=True)  # 10 % > 5 %
    assert ks.state == "tripped" and ks.ceiling == 2 and events == ["trip:error_rate"]
    assert ks.effective_phase(FLAGS) == 2
    assert ks.route(FLAGS).reason == "kill switch: error rate 10.0% > 5.0% over 300 s (phase 3, 20 samples)"
    # Phase 2 failing as well takes it out too; phase 1 failing leaves nothing: disabled.
    feed(ks, clock, "phase2", 20, latency=1, error=True)
    assert ks.ceiling == 1 and ks.effective_phase(FLAGS) == 1
    feed(ks, clock, "phase1", 20, latency=1, error=True)
    assert ks.ceiling == 0 and ks.effective_phase(FLAGS) == 0


def test_error_action_disable_keeps_the_seed_plans_literal_rule() -> None:
    ks, clock, events = make(KillSwitchFlags(error_action="disable"))
    feed(ks, clock, "phase3", 18, latency=10)
    feed(ks, clock, "phase3", 2, latency=10, error=True)
    assert ks.effective_phase(FLAGS) == 0 and events == ["trip:error_rate"]


def test_database_trip_probes_as_soon_as_the_database_answers() -> None:
    ks, clock, events = make(KillSwitchFlags(probe_share=0.25))
    ks.database_answered()  # closed: nothing to do
    feed(ks, clock, "phase3", 20, latency=3, error=True, database=True)
    assert (ks.state, ks.ceiling, ks.trip_cause) == ("tripped", 2, "database")
    assert ks.cooldown_remaining_s() == pytest.approx(599)  # the feed ran 1 s past the trip
    ks.database_answered()  # long before the 10-minute cool-down
    assert ks.state == "half_open"
    phases = [ks.effective_phase(FLAGS) for _ in range(8)]
    assert phases.count(3) == 2 and phases.count(2) == 6  # a quarter of the traffic probes
    feed(ks, clock, "phase3", 20, latency=5)
    assert ks.state == "closed" and ks.effective_phase(FLAGS) == 3
    assert events == ["trip:error_rate", "half_open:database_back", "recover:probe_ok"]


def test_failed_database_probe_trips_again_and_waits_for_the_database() -> None:
    ks, clock, events = make()
    feed(ks, clock, "phase3", 20, latency=3, error=True, database=True)
    ks.database_answered()
    feed(ks, clock, "phase3", 20, latency=3, error=True, database=True)
    assert (ks.state, ks.trip_cause) == ("tripped", "database")
    ks.database_answered()
    assert ks.state == "half_open"
    assert events == ["trip:error_rate", "half_open:database_back", "probe_failed:probe_breached",
                      "half_open:database_back"]


@pytest.mark.parametrize("database", [False, True])
def test_latency_and_non_database_trips_keep_their_cooldown(database: bool) -> None:
    ks, clock, _ = make()
    if database:  # slow, not failing: a latency trip even if the database is the slow part
        feed(ks, clock, "phase3", 20, latency=900, every_s=SUSTAINED_S)
    else:  # failing, but not the database (a bug, a missing model)
        feed(ks, clock, "phase3", 20, latency=3, error=True)
    assert ks.trip_cause in ("latency", "errors")
    ks.database_answered()
    assert ks.state == "tripped"
    clock.advance(600)
    ks.refresh()
    assert ks.state == "half_open"


def test_manual_kill_ignores_the_database_coming_back() -> None:
    ks, clock, _ = make()
    feed(ks, clock, "phase3", 20, latency=3, error=True, database=True)
    ks.kill("maintenance")
    ks.database_answered()
    assert ks.state == "manual" and ks.effective_phase(FLAGS) == 0


def test_error_rate_at_threshold_does_not_trip() -> None:
    ks, clock, _ = make()
    feed(ks, clock, "phase3", 19, latency=10)
    feed(ks, clock, "phase3", 1, latency=10, error=True)  # exactly 5 %: not above
    assert ks.state == "closed"


def test_cooldown_half_open_probes_then_recovers() -> None:
    cfg = KillSwitchFlags(probe_share=0.25)
    ks, clock, events = make(cfg)
    feed(ks, clock, "phase3", 20, latency=800, every_s=SUSTAINED_S)
    assert ks.effective_phase(FLAGS) == 2
    clock.advance(595)  # the feed already advanced 4 s past the trip
    assert ks.state == "tripped" and ks.cooldown_remaining_s() == pytest.approx(1.0)
    clock.advance(1)
    phases = [ks.effective_phase(FLAGS) for _ in range(8)]
    assert ks.state == "half_open"
    assert phases.count(3) == 2 and phases.count(2) == 6  # a quarter of the traffic probes
    feed(ks, clock, "phase3", 19, latency=50)
    assert ks.state == "half_open"
    feed(ks, clock, "phase3", 1, latency=50)
    assert ks.state == "closed" and ks.effective_phase(FLAGS) == 3
    assert events == ["trip:p95", "half_open:cooldown", "recover:probe_ok"]


def test_failed_probe_restarts_the_cooldown() -> None:
    ks, clock, events = make()
    feed(ks, clock, "phase3", 20, latency=10, error=True)
    assert ks.ceiling == 2
    clock.advance(600)
    ks.refresh()
    assert ks.state == "half_open"
    feed(ks, clock, "phase3", 20, latency=10, error=True)
    assert ks.state == "tripped" and ks.ceiling == 2
    assert events[-1] == "probe_failed:probe_breached"
    assert ks.cooldown_remaining_s() == pytest.approx(600 - 0, abs=25)


def test_manual_kill_holds_until_reset() -> None:
    ks, clock, events = make()
    ks.kill("maintenance")
    assert ks.state == "manual" and ks.effective_phase(FLAGS) == 0
    clock.advance(10_000)
    feed(ks, clock, "phase3", 50, latency=5)
    assert ks.effective_phase(FLAGS) == 0
    ks.reset()
    assert ks.state == "closed" and ks.effective_phase(FLAGS) == 3
    assert events == ["manual_kill:manual", "reset:manual"]


def test_reset_clears_a_trip_at_once() -> None:
    ks, clock, _ = make()
    feed(ks, clock, "phase3", 20, latency=800)
    ks.reset()
    assert ks.state == "closed" and ks.drops == 0 and ks.window_stats()[3].samples == 0


def test_disabled_flag_wins_and_cache_is_not_sampled() -> None:
    ks, clock, _ = make()
    assert ks.effective_phase(Flags(enabled=False)) == 0
    feed(ks, clock, "cache", 100, latency=10_000, error=True)
    assert ks.state == "closed"


def test_window_figures() -> None:
    window = RollingWindow()
    for i, latency in enumerate([1.0, 2.0, 3.0, 4.0, 100.0]):
        window.add(float(i), latency, error=i == 0, slow=latency > 50)
    stats = window.stats()
    assert (stats.samples, stats.p50_ms, stats.p95_ms, stats.error_rate) == (5, 3.0, 100.0, 0.2)
    window.prune(now=3.5, window_ms=1.0)
    assert window.stats().samples == 2 and window.errors == 0 and window.slow == 1


def test_a_burst_of_seconds_does_not_trip() -> None:
    # The incident: 8 s of 16 clients with new questions, p95 far above 500 ms.
    ks, clock, events = make()
    feed(ks, clock, "phase3", 320, latency=900, every_s=0.025)
    assert ks.state == "closed" and events == [] and ks.effective_phase(FLAGS) == 3
    assert ks.held > 0  # the long window did breach: it was held back, not missed
    # Traffic goes on, healthy: the burst's samples keep the long window's p95 high
    # for 5 minutes, but the breach is over, so phase 3 keeps answering.
    feed(ks, clock, "phase3", 120, latency=40, every_s=2.0)
    assert ks.state == "closed" and ks.effective_phase(FLAGS) == 3


def test_sequential_slow_questions_on_a_busy_machine_do_not_trip_within_seconds() -> None:
    # The second incident: 20 sequential questions at p50 500 ms while another
    # process held the cores; the switch used to trip at the 20th sample.
    ks, clock, events = make()
    feed(ks, clock, "phase3", 20, latency=600, every_s=0.5)
    assert ks.state == "closed" and events == []


def test_a_breach_that_lasts_past_the_short_window_trips() -> None:
    ks, clock, events = make()
    feed(ks, clock, "phase3", 200, latency=40, every_s=0.5)  # a healthy minute and a half
    # Then every request slow, at the same pace: trips once the breach has lasted 60 s.
    feed(ks, clock, "phase3", 110, latency=900, every_s=0.5)
    assert events == []
    feed(ks, clock, "phase3", 20, latency=900, every_s=0.5)
    assert ks.state == "tripped" and ks.ceiling == 2 and events == ["trip:p95"]
    first_slow_to_trip_s = (110 + 20) * 0.5
    assert 60 <= first_slow_to_trip_s <= 65
    assert ks.route(FLAGS).reason.startswith("kill switch: p95 900 ms > 500 ms over 300 s (phase 3,")


def test_two_bursts_a_minute_apart_do_not_trip() -> None:
    # Slow samples 70 s apart and the long window in breach, but healthy traffic
    # between the bursts: not every slice of the last minute is slow.
    ks, clock, events = make()
    feed(ks, clock, "phase3", 100, latency=900, every_s=0.05)
    feed(ks, clock, "phase3", 65, latency=40, every_s=1.0)
    feed(ks, clock, "phase3", 100, latency=900, every_s=0.05)
    assert ks.windows[3].slow_span_ms >= 60_000 and ks.windows[3].breaches_p95
    assert not ks.short_windows[3].every_slice_breaches()
    assert ks.state == "closed" and events == []


def test_short_window_zero_restores_the_long_window_alone() -> None:
    ks, clock, events = make(KillSwitchFlags(short_window_s=0))
    feed(ks, clock, "phase3", 20, latency=900, every_s=0.1)
    assert ks.state == "tripped" and events == ["trip:p95"]


def test_the_short_window_cannot_exceed_the_long_one() -> None:
    with pytest.raises(ValueError, match=r"`kill_switch.short_window_s` \(400\) must be <= `kill_switch.window_s` \(300.0\)"):
        KillSwitchFlags(short_window_s=400)
