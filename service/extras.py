"""Optional dependency groups (`pyproject.toml` extras) and the commands needing them.

`eval` and `bench` compute metrics with ranx, a BM25 baseline with bm25s and
plots with matplotlib; the service itself needs none of them, so they are the
`eval` extra rather than run-time dependencies. A command whose extra is
missing stops at once with the install line, instead of an ImportError
half-way through a run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

EVAL_MODULES = ("ranx", "bm25s", "matplotlib")

# command → (extra, modules it imports)
COMMAND_EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "eval": ("eval", EVAL_MODULES),
    "bench": ("eval", EVAL_MODULES),
    "eval-decisions": ("eval", ("matplotlib",)),
    "fit-decisions": ("eval", ("sklearn",)),
}


def _importable(name: str, find: Callable[[str], Any]) -> bool:
    try:
        return find(name) is not None
    except ImportError:  # a finder that refuses the name (or a broken parent package)
        return False


def missing_extra(command: str | None, find: Callable[[str], Any] = importlib.util.find_spec) -> str | None:
    """A message naming the extra to install if `command` cannot run, else None."""
    if command not in COMMAND_EXTRAS:
        return None
    extra, modules = COMMAND_EXTRAS[command]
    missing = [name for name in modules if not _importable(name, find)]
    if not missing:
        return None
    return (
        f"`python -m service {command}` needs the optional `{extra}` extra "
        f"({', '.join(modules)}); missing: {', '.join(missing)}. "
        f"Install it with: pip install -e '.[{extra}]'"
    )
