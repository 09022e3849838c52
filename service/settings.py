"""Environment-backed settings, validated once at start-up.

Every knob has an environment variable of the same name (upper case). A bad
value stops start-up with the variable named, instead of failing later.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")


class SettingsError(ValueError):
    """A configuration value is invalid; the message names the variable."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    database_url: str | None = None
    """External PostgreSQL (must offer `vector`); None starts the embedded one."""
    data_dir: Path = Path(".data/pg")
    """Embedded PostgreSQL data directory, kept across restarts."""
    pg_port: int | None = None
    """Embedded PostgreSQL TCP port on 127.0.0.1 (0 = pick a free one).
    None = Unix socket only, which cannot clash with another server."""
    host: str = "127.0.0.1"
    port: int = 8000
    admin_token: str | None = field(default=None, repr=False)  # never printed
    mcp_token: str | None = field(default=None, repr=False)  # never printed
    """MCP_TOKEN: `/mcp` needs `Authorization: Bearer <token>`; unset = open like /retrieve."""
    seeds_dir: Path = PROJECT_ROOT / "seeds"
    flags_file: Path = PROJECT_ROOT / "flags.yaml"
    migrations_dir: Path = PROJECT_ROOT / "migrations"
    golden_dir: Path = PROJECT_ROOT / "tests" / "golden"
    """Golden-query files the console's replay offers (GOLDEN_DIR)."""
    embedding_model: str | None = None
    relevance_model: Path | None = None
    """RELEVANCE_MODEL: a model directory `python -m lab train-relevance --out` wrote; unset:
    the one shipped in service/relevance/model/ (loaded only where `relevance.enabled`)."""
    log_level: str = "INFO"
    db_connect_timeout: float = 300.0
    """Seconds start-up keeps retrying an unreachable database before giving up."""
    seed_on_start: bool = True
    cors_allow_origins: tuple[str, ...] = ()
    """CORS is closed unless origins are listed (comma-separated in the env)."""
    graceful_shutdown_seconds: float = 20.0
    access_log: bool = False
    clarification_key: str | None = field(default=None, repr=False)  # never printed
    """CLARIFICATION_KEY: signs clarifications; unset = a key generated once and kept in PostgreSQL."""
    """uvicorn's per-request access log (the per-query JSON log is always on)."""
    http_telemetry: bool = True
    """OpenTelemetry's ASGI and asyncpg instrumentations (per-route metrics, server and
    database spans); off only to measure their cost (`bench --telemetry`)."""

    def with_overrides(self, **changes: Any) -> Settings:
        """Copy with CLI overrides; None values mean "not given"."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _int(env: Mapping[str, str], name: str, lo: int, hi: int) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not an integer") from None
    if not lo <= value <= hi:
        raise SettingsError(f"{name}={value} is outside {lo}..{hi}")
    return value


def _float(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise SettingsError(f"{name}={value} must not be negative")
    return value


def _bool(env: Mapping[str, str], name: str) -> bool | None:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return None
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name}={raw!r} is not a boolean (use true/false)")


def _path(env: Mapping[str, str], name: str) -> Path | None:
    raw = env.get(name, "").strip()
    return Path(raw) if raw else None


def _str(env: Mapping[str, str], name: str) -> str | None:
    raw = env.get(name, "").strip()
    return raw or None


def _clarification_key(env: Mapping[str, str]) -> str | None:
    key = _str(env, "CLARIFICATION_KEY")
    if key is not None and len(key) < 32:
        raise SettingsError(f"CLARIFICATION_KEY must be at least 32 characters (got {len(key)})")
    return key


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from the environment (or a given mapping, for tests)."""
    env = os.environ if env is None else env
    log_level = (_str(env, "LOG_LEVEL") or "INFO").upper()
    if log_level not in LOG_LEVELS:
        raise SettingsError(f"LOG_LEVEL={log_level!r} is not one of {', '.join(LOG_LEVELS)}")
    origins = _str(env, "CORS_ALLOW_ORIGINS")
    return Settings().with_overrides(
        database_url=_str(env, "DATABASE_URL"),
        data_dir=_path(env, "DATA_DIR"),
        pg_port=_int(env, "PG_PORT", 0, 65535),
        host=_str(env, "HOST"),
        port=_int(env, "PORT", 1, 65535),
        admin_token=_str(env, "ADMIN_TOKEN"),
        mcp_token=_str(env, "MCP_TOKEN"),
        clarification_key=_clarification_key(env),
        seeds_dir=_path(env, "SEEDS_DIR"),
        flags_file=_path(env, "FLAGS_FILE"),
        migrations_dir=_path(env, "MIGRATIONS_DIR"),
        golden_dir=_path(env, "GOLDEN_DIR"),
        embedding_model=_str(env, "EMBEDDING_MODEL"),
        relevance_model=_path(env, "RELEVANCE_MODEL"),
        log_level=log_level,
        db_connect_timeout=_float(env, "DB_CONNECT_TIMEOUT"),
        seed_on_start=_bool(env, "SEED_ON_START"),
        cors_allow_origins=(
            tuple(o.strip() for o in origins.split(",") if o.strip()) if origins else None
        ),
        graceful_shutdown_seconds=_float(env, "GRACEFUL_SHUTDOWN_SECONDS"),
        access_log=_bool(env, "ACCESS_LOG"),
        http_telemetry=_bool(env, "HTTP_TELEMETRY"),
    )
