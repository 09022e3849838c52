"""The admin guard shared by every `/admin/*` route.

`Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time. Without
ADMIN_TOKEN configured admin is disabled (403). The token is never logged
or echoed.
"""

from __future__ import annotations

import hmac
from typing import Any

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler

from service.state import get_state

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="admin"'}


def admin_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    expected = get_state(connection.app.state).settings.admin_token
    if not expected:
        raise PermissionDeniedException(
            "admin endpoints are disabled: set ADMIN_TOKEN on the server to enable them"
        )
    header = connection.headers.get("authorization")
    if header is None:
        raise NotAuthorizedException(
            "missing Authorization header; expected 'Bearer <token>'", headers=_CHALLENGE
        )
    scheme, _sep, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise NotAuthorizedException(
            "malformed Authorization header; expected 'Bearer <token>'", headers=_CHALLENGE
        )
    # Headers arrive latin-1 decoded; compare the raw bytes in constant time.
    if not hmac.compare_digest(token.encode("latin-1"), expected.encode("utf-8")):
        raise PermissionDeniedException("invalid admin token")
