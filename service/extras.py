"""Optional dependency groups (`pyproject.toml` extras) and the commands needing them.

`eval-decisions` draws its risk-coverage plots with matplotlib and
`fit-decisions` fits with scikit-learn; serving needs neither, so they are the
`eval` extra rather than run-time dependencies (the lab's commands have their
own table, `lab/__main__.py`). A command whose extra is missing stops at once
with the install line, instead of an ImportError half-way through a run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

# command → (extra, modules it imports)
CommandExtras = dict[str, tuple[str, tuple[str, ...]]]
COMMAND_EXTRAS: CommandExtras = {
    "eval-decisions": ("eval", ("matplotlib",)),
    "fit-decisions": ("eval", ("sklearn",)),
}


def _importable(name: str, find: Callable[[str], Any]) -> bool:
    try:
        return find(name) is not None
    except ImportError:  # a finder that refuses the name (or a broken parent package)
        return False


def missing_extra(
    command: str | None, find: Callable[[str], Any] = importlib.util.find_spec,
    *, table: CommandExtras = COMMAND_EXTRAS, program: str = "python -m service",
) -> str | None:
    """A message naming the extra to install if `program command` cannot run, else None."""
    if command not in table:
        return None
    extra, modules = table[command]
    missing = [name for name in modules if not _importable(name, find)]
    if not missing:
        return None
    return (
        f"`{program} {command}` needs the optional `{extra}` extra "
        f"({', '.join(modules)}); missing: {', '.join(missing)}. "
        f"Install it with: pip install -e '.[{extra}]'"
    )
