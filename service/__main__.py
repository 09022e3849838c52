"""`python -m service <command>`: the single entry point.

Subcommands are registered through COMMANDS: a registrar adds its subparser
and sets `handler(args, settings) -> exit code`. A new command writes a registrar
in its own module and is listed in COMMANDS. The research instruments
(`eval`, `eval-kinds`, `bench`, `load`, `adapt-model`) are `python -m lab`.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from service.db.server import run_with_database
from service.extras import COMMAND_EXTRAS, CommandExtras, missing_extra
from service.settings import Settings, SettingsError, load_settings

SubParsers = Any  # argparse._SubParsersAction is private; keep the alias loose
Handler = Callable[[argparse.Namespace, Settings], int]
Registrar = Callable[[SubParsers], None]

CLI_CONNECT_TIMEOUT_S = 30.0


# -- serve ------------------------------------------------------------------
def _add_serve(sub: SubParsers) -> None:
    p = sub.add_parser(
        "serve", help="run the HTTP service",
        description="Start PostgreSQL (embedded unless DATABASE_URL), migrate, seed and serve. "
        "SIGTERM/Ctrl-C drain in-flight requests, then stop the database.",
    )
    p.add_argument("--host", help="bind address (env HOST, default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (env PORT, default 8000)")
    p.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    p.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from service.app import create_app
    from service.flags import FlagError
    from service.ingest.tokens import ModelNotFoundError
    from service.normalize.lexicon import SynonymError
    from service.scoring.tier1_cache import GlossaryError
    from service.state import get_state

    settings = settings.with_overrides(host=args.host, port=args.port, data_dir=args.data_dir)
    try:
        app = create_app(settings)
    except (FlagError, ModelNotFoundError, SynonymError, GlossaryError) as err:
        # Bad configuration stops start-up with one line naming the problem.
        print(f"error: {err}", file=sys.stderr)
        return 2
    st = get_state(app.state)
    server = uvicorn.Server(uvicorn.Config(
        app, host=settings.host, port=settings.port, lifespan="on",
        log_level=settings.log_level.lower(), log_config=None,
        # uvloop + httptools: the C event loop and HTTP parser roughly double
        # throughput over asyncio + h11 on 2 cores. The per-query JSON log
        # already records every /retrieve call, so uvicorn's access log is off.
        loop="uvloop", http="httptools", access_log=settings.access_log,
        timeout_graceful_shutdown=int(settings.graceful_shutdown_seconds),
    ))

    def stop() -> None:
        server.should_exit = True

    st.request_shutdown = stop
    # uvicorn re-raises the signal that stopped it once it has shut down
    # gracefully; handled here, the process then exits 0 instead of dying.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _ignore_signal)
    server.run()
    if st.fatal_error is not None:
        print(f"error: {st.fatal_error}", file=sys.stderr)
        return 1
    return 0 if server.started else 3


def _ignore_signal(_sig: int, _frame: FrameType | None) -> None:
    return None


# -- mcp ----------------------------------------------------------------------
def _add_mcp(sub: SubParsers) -> None:
    p = sub.add_parser(
        "mcp", help="serve MCP on stdin/stdout (desktop agents)",
        description="Start PostgreSQL, migrate, seed and load the model as serve does, then speak "
        "MCP on stdin/stdout (docs/mcp.md); logs go to stderr. Ends when stdin closes.",
    )
    p.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    p.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    from service.app import create_app
    from service.ingest.tokens import ModelNotFoundError
    from service.mcp.stdio import run_stdio

    try:
        app = create_app(settings.with_overrides(data_dir=args.data_dir))
    except (ValueError, ModelNotFoundError) as err:  # flags, synonyms, glossary: ValueErrors
        print(f"error: {err}", file=sys.stderr)
        return 2
    return run_stdio(app)


# -- migrate / seed -----------------------------------------------------------
def _add_migrate(sub: SubParsers) -> None:
    p = sub.add_parser("migrate", help="apply or revert database migrations",
                       description="Apply all pending migrations (up) or revert to a version.")
    p.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    msub = p.add_subparsers(dest="direction")
    msub.add_parser("up", help="apply every pending migration (default)")
    down = msub.add_parser("down", help="revert migrations newer than --to")
    down.add_argument("--to", type=int, required=True, help="version to keep (0 = revert all)")
    p.set_defaults(handler=_migrate, direction="up")


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from service.db.migrate import current_version, migrate_down, migrate_up
    from service.db.pool import connect_with_retry, ensure_vector_available

    async def run(dsn: str) -> int:
        conn = await connect_with_retry(dsn, timeout_total=CLI_CONNECT_TIMEOUT_S)
        try:
            if args.direction == "down":
                done = await migrate_down(conn, settings.migrations_dir, args.to)
                print(f"reverted: {done or 'nothing'}")
            else:
                await ensure_vector_available(conn)
                done = await migrate_up(conn, settings.migrations_dir)
                print(f"applied: {done or 'nothing (up to date)'}")
            print(f"current version: {await current_version(conn)}")
        finally:
            await conn.close()
        return 0

    return run_with_database(settings.with_overrides(data_dir=args.data_dir), run)


def _add_seed(sub: SubParsers) -> None:
    p = sub.add_parser("seed", help="seed the corpus from SEEDS_DIR (idempotent)",
                       description="Migrate, then insert/update/delete documents and chunks "
                       "so the database matches the seed files. Prints the counts as JSON.")
    p.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    p.add_argument("--seeds-dir", type=Path, help="seed files (env SEEDS_DIR)")
    p.add_argument("--embed", action="store_true",
                   help="then embed chunks lacking a vector (on EMBEDDING_REMOTE_URL if set)")
    p.set_defaults(handler=_seed)


def _seed(args: argparse.Namespace, settings: Settings) -> int:
    import msgspec

    from service.db.migrate import migrate_up
    from service.db.pool import connect_with_retry, create_pool, ensure_vector_available
    from service.embedding.remote import RemoteEmbeddingError
    from service.flags import load_flags
    from service.ingest.markdown import SeedError
    from service.ingest.seeder import SeedOptions, default_chunker, seed

    settings = settings.with_overrides(data_dir=args.data_dir, seeds_dir=args.seeds_dir)
    flags = load_flags(settings.flags_file)
    chunker = default_chunker(flags.chunking.max_tokens)

    async def run(dsn: str) -> int:
        conn = await connect_with_retry(dsn, timeout_total=CLI_CONNECT_TIMEOUT_S)
        try:
            await ensure_vector_available(conn)
            await migrate_up(conn, settings.migrations_dir)
        finally:
            await conn.close()
        pool = await create_pool(dsn, max_size=2)
        try:
            report = await seed(pool, settings.seeds_dir, chunker, SeedOptions.from_flags(flags))
            print(json.dumps(msgspec.to_builtins(report), indent=2))
            if args.embed:
                from service.embedding.indexing import embed_corpus

                indexed = await embed_corpus(pool, settings, flags)
                print(json.dumps(msgspec.to_builtins(indexed), indent=2))
        except (SeedError, FileNotFoundError, RemoteEmbeddingError) as err:
            # RemoteEmbeddingError: probe mismatch, bad configuration, a server that keeps failing
            print(f"error: {err}", file=sys.stderr)
            return 1
        finally:
            await pool.close()
        return 0

    return run_with_database(settings, run)


def _add_replay(sub: SubParsers) -> None:
    from service import replay_command

    replay_command.add_parser(sub)


def _add_decisions(sub: SubParsers) -> None:
    from service.evaluation import commands

    commands.add_parsers(sub)


def _add_export_goldens(sub: SubParsers) -> None:
    from service.feedback import command

    command.add_parser(sub)


COMMANDS: dict[str, Registrar] = {
    "serve": _add_serve,
    "mcp": _add_mcp,
    "migrate": _add_migrate,
    "seed": _add_seed,
    "replay": _add_replay,
    "eval-decisions": _add_decisions,  # and fit-decisions
    "export-goldens": _add_export_goldens,
    # The research instruments (eval, eval-kinds, bench, load, adapt-model) are `python -m lab`.
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m service", description="Documentation retrieval service."
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for register in COMMANDS.values():
        register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser(), argv)


def run_command(
    parser: argparse.ArgumentParser, argv: list[str] | None, *, table: CommandExtras = COMMAND_EXTRAS,
    program: str = "python -m service", own_sigterm: frozenset[str] = frozenset({"serve"}),
) -> int:
    """Parse, check the command's extra, load settings and logging, run the handler: the
    service's CLI and the lab's (`python -m lab`) alike. `own_sigterm`: commands that handle
    SIGTERM themselves (serve drains its requests)."""
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    if (problem := missing_extra(args.command, table=table, program=program)) is not None:
        print(problem, file=sys.stderr)
        return 2
    try:
        settings = load_settings()
    except SettingsError as err:
        print(f"configuration error: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command not in own_sigterm:
        # Python's default SIGTERM ends the process without unwinding, which would
        # leave an embedded PostgreSQL (seed, eval-decisions, the lab's runs) running.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        return handler(args, settings)
    except KeyboardInterrupt:  # Ctrl-C: the handlers' finally blocks have run
        return 130


def _exit_on_sigterm(_sig: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signal.SIGTERM)


if __name__ == "__main__":
    sys.exit(main())
