"""Review periods: which slice of the log a sample comes from, and its seed."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Literal

Period = Literal["day", "week"]


def period_bounds(period: Period, *, now: datetime, start: date | None = None) -> tuple[datetime, datetime]:
    """[start, end) in UTC of the period holding `start` (default: the one holding `now`).

    Weeks start on Monday, so a given date always names the same week.
    """
    day = start if start is not None else now.astimezone(UTC).date()
    if period == "week":
        day = day - timedelta(days=day.weekday())
    begin = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return begin, begin + (timedelta(days=7) if period == "week" else timedelta(days=1))


def seed_of(period: Period, begin: datetime) -> str:
    """The sample's seed: the period itself, so anyone re-asking gets the same queries."""
    return f"{period}:{begin.date().isoformat()}"
