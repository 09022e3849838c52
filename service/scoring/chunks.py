"""Phase 2 result shaping: at most N chunks per document."""

from __future__ import annotations

from collections.abc import Sequence

from service.domain.types import Evidence


def dedupe_per_document(
    results: Sequence[Evidence], max_per_doc: int
) -> tuple[list[Evidence], int]:
    """Keep rank order, drop a document's chunks beyond `max_per_doc`.

    Returns the kept evidence and how many chunks were trimmed (a metric).
    """
    kept: list[Evidence] = []
    per_doc: dict[str, int] = {}
    for evidence in results:
        count = per_doc.get(evidence.doc_slug, 0)
        if count < max_per_doc:
            kept.append(evidence)
            per_doc[evidence.doc_slug] = count + 1
    return kept, len(results) - len(kept)
