"""`python -m service serve` whose seed jobs are held until the process dies.

Run as `python tests/integration/held_job_serve.py serve ...` with `HOLD_DIR` set: once
`HOLD_DIR/hold` exists, a seed (`POST /admin/seed`'s job) writes `HOLD_DIR/held` and waits
for good. test_jobs.py kills such a process to know, not hope, that its job was running.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from service.state import AppState

HOLD_DIR = Path(os.environ["HOLD_DIR"])
_reseed = AppState.reseed


async def _held_reseed(self: AppState, say: Any = None) -> Any:
    if (HOLD_DIR / "hold").exists():  # the start-up seed goes through
        if say is not None:
            say("held by the test")
        (HOLD_DIR / "held").touch()
        await asyncio.Event().wait()
    return await _reseed(self, say)


AppState.reseed = _held_reseed  # type: ignore[method-assign]

if __name__ == "__main__":
    from service.__main__ import main

    sys.exit(main())
