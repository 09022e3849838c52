"""Give freed heap memory back to the operating system after a big rebuild."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from functools import cache


@cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def release_free_memory() -> None:
    """Collect garbage, then ask glibc to return free pages (no-op elsewhere).

    Rebuilding the in-memory indexes allocates and drops hundreds of MB of
    temporaries; without this the freed pages stay in the process's RSS.
    """
    gc.collect()
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None) if libc is not None else None
    if trim is not None:
        trim(0)
