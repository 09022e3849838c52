"""What every console browser test shares: Debian's Chromium and how it is started, the admin
token, and a real `python -m service serve` in a subprocess (the `service` fixture in
tests/e2e/conftest.py starts one per test module).

Needs `/usr/bin/chromium` (`.ci/run` installs Debian's `chromium`); Playwright only drives it: no
browser is ever downloaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.db.embedded import free_port
from service.settings import PROJECT_ROOT
from tests.serve_process import start_serve, stop, wait_ready

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = PROJECT_ROOT / "test-output" / "console"
TOKEN = "e2e-console-admin-token-0123456789"
READY_TIMEOUT_S = 300
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
AUTH = {"Authorization": f"Bearer {TOKEN}"}

E2E = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent: install Debian's "
                       "`chromium` (.ci/run does) to run the console's browser tests"),
]


@dataclass(frozen=True)
class Service:
    url: str
    log: Path

    def flags(self) -> dict[str, Any]:
        response = httpx.get(f"{self.url}/admin/flags", headers=AUTH, timeout=10)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def flag(self, name: str) -> dict[str, Any]:
        entries = [f for f in self.flags()["flags"] if f["name"] == name]
        assert entries, f"no flag {name!r} in GET /admin/flags"
        return entries[0]


def launch_chromium(pw: Any) -> Any:
    """Debian's Chromium, headless, through Playwright (`pw`: a sync_playwright() context)."""
    return pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """A real server of its own (own data directory and port) until the generator is closed."""
    tmp = tmp_path_factory.mktemp("console")
    log = tmp / "serve.log"
    port = free_port()
    # The kill switch out of reach (serve_env): the console's phase switch, kill and reset are
    # the operator's, and a busy machine must not flip the phase under the test.
    proc = start_serve(tmp / "pg", port, log, env={"ADMIN_TOKEN": TOKEN})
    try:
        wait_ready(proc, port, log, timeout_s=READY_TIMEOUT_S)
        yield Service(url=f"http://127.0.0.1:{port}", log=log)
    finally:
        stop(proc, log)
