"""What every console browser test shares: Debian's Chromium and how it is started, the admin
token, and a real `python -m service serve` in a subprocess (the `service` fixture in
tests/e2e/conftest.py starts one per test module).

Needs `/usr/bin/chromium` (`.ci/run` installs Debian's `chromium`); Playwright only drives it: no
browser is ever downloaded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.db.embedded import free_port
from service.readiness import wait_url_ready_sync
from service.settings import PROJECT_ROOT
from tests.conftest import quiet_flags_file

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
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DOC_RETRIEVAL_PHASE",
                                                            "DOC_RETRIEVAL_ENABLED")}
    # The kill switch out of reach: the console's phase switch, kill and reset are
    # the operator's, and a busy machine must not flip the phase under the test.
    env.update(ADMIN_TOKEN=TOKEN, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               FLAGS_FILE=str(quiet_flags_file()))
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(port), "--data-dir", str(tmp / "pg")],
            cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        def alive() -> None:
            assert proc.poll() is None, f"server exited early:\n{log.read_text()[-3000:]}"

        wait_url_ready_sync(url, timeout_s=READY_TIMEOUT_S, check_alive=alive)
        yield Service(url=url, log=log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
