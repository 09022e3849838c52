"""`python -m lab <command>`: the research instruments, beside the service rather than in it.

eval         retrieval quality on a BEIR-layout dataset (lab/evaluation/command.py)
eval-kinds   ranking quality per query kind on a labelled set (lab/evaluation/kinds.py)
bench        latency, throughput and scale (lab/bench/)
load         a loopback HTTP load generator against a running server (lab/loadgen.py)
adapt-model  fine-tune the embedding model on pairs mined from the corpus (lab/adapt/)

Each command module registers its subparser and sets `handler(args, settings)`,
as the service's own commands do (service/__main__.py).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from service.extras import CommandExtras, missing_extra
from service.settings import Settings, SettingsError, load_settings

Handler = Callable[[argparse.Namespace, Settings], int]

LAB_MODULES = ("ranx", "bm25s", "matplotlib")
# command → (extra, modules it imports): checked before a run starts.
COMMAND_EXTRAS: CommandExtras = {
    "eval": ("lab", LAB_MODULES),
    "bench": ("lab", LAB_MODULES),
}


def _add_eval(sub: Any) -> None:
    from lab.evaluation import command

    command.add_parser(sub)


def _add_eval_kinds(sub: Any) -> None:
    from lab.evaluation import kinds

    kinds.add_parser(sub)


def _add_bench(sub: Any) -> None:
    from lab.bench import command

    command.add_parser(sub)


def _add_load(sub: Any) -> None:
    from lab import loadgen

    loadgen.add_parser(sub)


def _add_adapt_model(sub: Any) -> None:
    from lab.adapt import command

    command.add_parser(sub)


COMMANDS: dict[str, Callable[[Any], None]] = {
    "eval": _add_eval,
    "eval-kinds": _add_eval_kinds,
    "bench": _add_bench,
    "load": _add_load,
    "adapt-model": _add_adapt_model,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lab", description="Research instruments for the documentation retrieval service."
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for register in COMMANDS.values():
        register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    problem = missing_extra(args.command, table=COMMAND_EXTRAS, program="python -m lab")
    if problem is not None:
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
    # Python's default SIGTERM ends the process without unwinding, which would
    # leave the embedded PostgreSQL that eval, eval-kinds and bench start running.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        return handler(args, settings)
    except KeyboardInterrupt:  # Ctrl-C: the handlers' finally blocks have run
        return 130


def _exit_on_sigterm(_sig: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signal.SIGTERM)


if __name__ == "__main__":
    sys.exit(main())
