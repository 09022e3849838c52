"""The golden queries every bench run repeats (the query-cache-on rows and the in-process
latency), read from the golden file the acceptance suite replays."""

from __future__ import annotations

GOLDEN_FILE = "navigation.yaml"
"""Under GOLDEN_DIR (settings.golden_dir)."""


def golden_queries() -> list[str]:
    from service.golden import load_golden
    from service.settings import load_settings

    return [c.query for c in load_golden(load_settings().golden_dir / GOLDEN_FILE)]
