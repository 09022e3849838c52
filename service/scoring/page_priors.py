"""What a page is worth before the query's words are counted: the page priors of every phase.

A factor ≤ 1 per page scales its scores (1: no prior). Today: stub pages (only an include, a
directive, links or properties; `Document.stub`, marked at seed) × `retrieval.stub_page_factor`,
so they are kept for links and /documents but never the answer or an option on their own.
Phase 3's fusion multiplies this with its short-page prior (`fusion.short_page_chars`).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from service.domain.types import Evidence, NormalizedQuery
from service.flags import Flags
from service.scoring.indexes import CorpusIndexes

PageFactor = Callable[[str], float]


def page_factor(indexes: CorpusIndexes, flags: Flags, query: NormalizedQuery) -> PageFactor | None:
    """The factor of each page for this query; None when no prior applies to any page."""
    stub = flags.retrieval.stub_page_factor
    if stub >= 1 or not indexes.has_stubs:
        return None
    return lambda slug: stub if indexes.is_stub(slug) else 1.0


def lowered(results: list[Evidence], factor: PageFactor | None) -> list[Evidence]:
    """A keyword ranking with each page's scores × its factor, best first again."""
    if factor is None:
        return results
    scaled = [e if (f := factor(e.doc_slug)) == 1.0 else msgspec.structs.replace(e, score=e.score * f)
              for e in results]
    return sorted(scaled, key=lambda e: -e.score)
