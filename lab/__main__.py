"""`python -m lab <command>`: the research instruments, beside the service rather than in it.

eval         retrieval quality on a BEIR-layout dataset (lab/evaluation/command.py)
eval-kinds   ranking quality per query kind on a labelled set (lab/evaluation/kinds.py)
bench        latency, throughput and scale (lab/bench/)
load         a loopback HTTP load generator against a running server (lab/loadgen.py)
adapt-model  fine-tune the embedding model on pairs mined from the corpus (lab/adapt/)
train-relevance  train the relevance model on pairs mined from the training pool (lab/relevance/)
eval-relevance   rerank phase 3's candidates with the relevance model, offline (lab/relevance/evaluate.py)

Each command module registers its subparser and sets `handler(args, settings)`,
as the service's own commands do (service/__main__.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from service.__main__ import run_command
from service.extras import CommandExtras
from service.settings import Settings

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


def _add_train_relevance(sub: Any) -> None:
    from lab.relevance import command

    command.add_parser(sub)


def _add_eval_relevance(sub: Any) -> None:
    from lab.relevance import evaluate

    evaluate.add_parser(sub)


COMMANDS: dict[str, Callable[[Any], None]] = {
    "eval": _add_eval,
    "eval-kinds": _add_eval_kinds,
    "bench": _add_bench,
    "load": _add_load,
    "adapt-model": _add_adapt_model,
    "train-relevance": _add_train_relevance,
    "eval-relevance": _add_eval_relevance,
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
    return run_command(build_parser(), argv, table=COMMAND_EXTRAS, program="python -m lab", own_sigterm=frozenset())


if __name__ == "__main__":
    sys.exit(main())
