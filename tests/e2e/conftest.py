"""The console's browser tests: each module gets a real server of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.console_server import Service, serve


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    yield from serve(tmp_path_factory)
