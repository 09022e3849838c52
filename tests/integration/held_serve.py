"""`python -m service serve` whose pipeline holds every request until the test releases it.

Run as `python tests/integration/held_serve.py serve ...` with `HOLD_DIR` set:
each request entering its first tier writes `HOLD_DIR/held-<uuid>` and waits
(in the pipeline's `TierFaults.before_tier`) until `HOLD_DIR/release` exists. The fault
tests use it to know, not hope, that requests are in flight.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import service.app as app_module
from service.pipeline import TierFaults

HOLD_DIR = Path(os.environ["HOLD_DIR"])
_create_app = app_module.create_app


def _held_app(settings: Any) -> Any:
    async def hold(_tier: str, _ctx: Any) -> None:
        release = HOLD_DIR / "release"
        if release.exists():
            return
        (HOLD_DIR / f"held-{uuid.uuid4().hex}").touch()
        while not release.exists():
            await asyncio.sleep(0.01)

    return _create_app(settings, faults=TierFaults(before_tier=hold))


app_module.create_app = _held_app  # `serve` imports it from the module when it runs

if __name__ == "__main__":
    from service.__main__ import main

    sys.exit(main())
