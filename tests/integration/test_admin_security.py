"""Admin security: constant-time token check, no token in logs, header forms,
body size limits, CORS closed by default and configurable.

Read-only and rejected requests run on the shared `service_client`; the CORS
and logging cases build their own app (no lifespan needed for preflight and
guard checks, which never touch the database).
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from service.api import auth
from service.app import create_app
from service.settings import Settings, load_settings
from tests.conftest import ADMIN_TOKEN_FOR_TESTS

ADMIN_GET = "/admin/flags"  # read-only admin endpoint


async def test_compare_digest_is_what_decides(service_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    good = await service_client.get(ADMIN_GET, headers={"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"})
    bad = await service_client.get(ADMIN_GET, headers={"Authorization": "Bearer wrong"})
    assert good.status_code == 200 and bad.status_code == 403
    assert len(seen) == 2  # every token check went through compare_digest

    # The constant-time comparison alone decides: inverted, it inverts the guard
    # (a `==` short-cut anywhere would let the right token through regardless).
    monkeypatch.setattr(auth.hmac, "compare_digest", lambda a, b: not real(a, b))
    good = await service_client.get(ADMIN_GET, headers={"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"})
    bad = await service_client.get(ADMIN_GET, headers={"Authorization": "Bearer wrong"})
    assert good.status_code == 403 and bad.status_code == 200


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": ""}, 401),
        ({"Authorization": "Bearer"}, 401),
        ({"Authorization": "Bearer "}, 401),
        ({"Authorization": "Basic " + "dXNlcjpwYXNz"}, 401),
        ({"Authorization": f"Token {ADMIN_TOKEN_FOR_TESTS}"}, 401),
        ({"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS} {ADMIN_TOKEN_FOR_TESTS}"}, 401),
        ({"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS[:-1]}"}, 403),
        ({"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}x"}, 403),
        ({"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS.upper()}"}, 403),
        ({"Authorization": "Bearer \u00e9\u00e8".encode("latin-1")}, 403),  # non-ASCII bytes
        ({"Authorization": "Bearer " + "x" * 8000}, 403),
    ],
)
async def test_bad_authorization_is_rejected(service_client: Any, headers: dict[str, Any], status: int) -> None:
    for method, path in (("GET", ADMIN_GET), ("POST", "/admin/seed"), ("PUT", "/admin/flags")):
        response = await service_client.request(method, path, headers=headers, json={} if method == "PUT" else None)
        assert response.status_code == status, (method, path, response.text)
        assert response.json()["error"]
        assert ADMIN_TOKEN_FOR_TESTS not in response.text


async def test_token_never_logged(service_client: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for token in (ADMIN_TOKEN_FOR_TESTS, ADMIN_TOKEN_FOR_TESTS + "x", "Bearer-ish " + ADMIN_TOKEN_FOR_TESTS):
        await service_client.get(ADMIN_GET, headers={"Authorization": f"Bearer {token}"})
        await service_client.put("/admin/flags", headers={"Authorization": f"Bearer {token}"},
                                 json={"no_such_flag": 1})
    text = "\n".join(f"{r.getMessage()} {r.args!r} {getattr(r, '__dict__', {})!r}" for r in caplog.records)
    assert ADMIN_TOKEN_FOR_TESTS not in text
    assert "Settings(" not in text or "admin_token" not in text


def test_settings_repr_hides_token() -> None:
    settings = load_settings({"ADMIN_TOKEN": "secret-token-value"})
    assert settings.admin_token == "secret-token-value"
    assert "secret-token-value" not in repr(settings)


async def test_admin_bodies_are_size_limited(service_client: Any) -> None:
    auth_header = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}", "Content-Type": "application/json"}
    big = b'{"phase": ' + b" " * (2 * 2**20) + b"1}"
    response = await service_client.put("/admin/flags", content=big, headers=auth_header)
    assert response.status_code == 413, response.text
    response = await service_client.post("/retrieve", content=big, headers=auth_header)
    assert response.status_code == 413


def _app(**overrides: Any) -> Any:
    return create_app(Settings(database_url="postgresql://unused@127.0.0.1:1/unused",
                               admin_token=ADMIN_TOKEN_FOR_TESTS, **overrides))


async def test_cors_closed_by_default() -> None:
    async with AsyncTestClient(app=_app()) as client:
        preflight = await client.options("/retrieve", headers={
            "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in preflight.headers
        response = await client.get("/health", headers={"Origin": "https://evil.example"})
        assert response.status_code == 200
        assert "access-control-allow-origin" not in response.headers


async def test_cors_configurable() -> None:
    settings = load_settings({"CORS_ALLOW_ORIGINS": "https://chat.example, https://ops.example"})
    assert settings.cors_allow_origins == ("https://chat.example", "https://ops.example")
    async with AsyncTestClient(app=_app(cors_allow_origins=settings.cors_allow_origins)) as client:
        allowed = await client.get("/health", headers={"Origin": "https://chat.example"})
        assert allowed.headers.get("access-control-allow-origin") == "https://chat.example"
        denied = await client.get("/health", headers={"Origin": "https://evil.example"})
        assert denied.headers.get("access-control-allow-origin") != "https://evil.example"
