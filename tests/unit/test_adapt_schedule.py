"""The learning-rate schedule both lab trainers use (lab/adapt/train.py `warmup_then_decay`)."""

from __future__ import annotations

import pytest

from lab.adapt.train import warmup_then_decay


def test_the_rate_warms_up_linearly_then_decays_to_zero_at_the_last_step() -> None:
    rate = warmup_then_decay(10, 0.2)  # two warm-up steps
    assert [rate(step) for step in range(11)] == pytest.approx(
        [0.5, 1.0, 1.0, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8, 0.0]
    )


def test_there_is_always_one_warm_up_step() -> None:
    rate = warmup_then_decay(4, 0.0)
    assert [rate(step) for step in range(5)] == pytest.approx([1.0, 1.0, 2 / 3, 1 / 3, 0.0])
