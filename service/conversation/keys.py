"""Which key signs clarifications: CLARIFICATION_KEY, else the one stored in PostgreSQL.

Replicas must share it (a clarification issued by one is answered on another), so
a key made up in memory is only the last resort while the database is away; it is
replaced by the shared one as soon as the database answers.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
from typing import Any

import asyncpg

from service.db.conversation_keys import shared_key

log = logging.getLogger(__name__)


class SigningKeys:
    def __init__(self, configured: str | None) -> None:
        # Any length of secret works as an HMAC key; hashing gives it one size.
        self._key = hashlib.sha256(configured.encode("utf-8")).digest() if configured else None
        self._shared = self._key is not None
        self._fallback = secrets.token_bytes(32)
        self._lock = asyncio.Lock()

    async def key(self, pool: asyncpg.Pool[Any] | None) -> bytes:
        if self._shared and self._key is not None:
            return self._key
        if pool is not None:
            async with self._lock:
                if not self._shared:
                    try:
                        self._key = await shared_key(pool)
                        self._shared = True
                    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                        log.warning("clarification key not readable from the database yet: %s", exc)
            if self._shared and self._key is not None:
                return self._key
        # The database is away: clarifications signed now verify on this replica only.
        return self._fallback
