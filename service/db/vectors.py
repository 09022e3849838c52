"""pgvector's text form of a vector: what both the indexer and the semantic search send."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def vector_literal(vector: npt.NDArray[np.float32] | list[float]) -> str:
    """pgvector's text form. Sent as text and cast in SQL, so the queries work
    whether or not the pool registered pgvector's binary codec."""
    return "[" + ",".join(f"{float(x):.8g}" for x in np.asarray(vector).ravel()) + "]"
