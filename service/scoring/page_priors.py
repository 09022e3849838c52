"""What a page is worth before the query's words are counted: the page priors of every phase.

A factor per page scales its scores (1: no prior). The factors multiply:
- release-notes pages (a changelog: its headings are versions or dates,
  `indexes.release_notes_pages`, from structure only) × `retrieval.release_notes_factor`, unless
  the query is about a release (`is_release_question`): a long page that mentions every feature
  once per release must not crowd out the page that documents the feature;
- migration guides (a title that migrates or upgrades: "Migrating from Vuex ≤4",
  `indexes.MIGRATION_TITLE`) × `retrieval.migration_guide_factor`, unless the query is about a
  release or names the guide's subject, a word of its title few pages hold ("onenote to
  markdown" for "Migrating from OneNote"; not "redux" for "Migrating to Modern Redux"): a
  guide that walks through every feature's change must not crowd out the page that documents
  the feature ("install pinia", "hot module replacement");
- the operator's per-path factors, `retrieval.page_boosts` (a glob on the slug → a factor, as
  DocSearch's `pageRank`): the product of every glob that matches.

Two more priors, a stub page's and a short page's, did not pay on six corpora, each left out
in turn (docs/quality/cross-corpus.md) and are gone: a stub page (`Document.stub`) is still
marked at seed, listed in /documents and never named by its title alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fnmatch import fnmatchcase

import msgspec

from service.domain.types import Evidence, NormalizedQuery
from service.flags import Flags
from service.scoring.indexes import CorpusIndexes
from service.scoring.stemming import lexical_key

PageFactor = Callable[[str], float]

RELEASE_QUESTION = re.compile(
    r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?![\w.])"  # a version number: 1.5, v2.1.0
    r"|\bv\d+\b"  # v6
    r"|\bversion\s+\d"  # version 2
    r"|\b(?:latest|newest|new|current|next|previous|older?)\s+versions?\b"
    r"|\breleas(?:e|es|ed|ing)\b|\bchange\s*logs?\b|\bwhat'?s\s+new\b|\bwhat\s+is\s+new\b|\bnew\s+in\b"
    r"|\bchanged\b|\bbreaking\b|\bdeprecat\w*|\bupgrad\w*|\bmigrat\w*"
    r"|\b(?:added|removed|introduced|dropped)\s+in\b|\b(?:be|been|is|was|were|get|got)\s+(?:removed|dropped)\b",
    re.IGNORECASE,
)
"""A question about a release, in general English: a version number, or asking what changed, what is
new, what was deprecated, removed or added in a version, how to upgrade or migrate."""


def is_release_question(query: NormalizedQuery) -> bool:
    """Whether the user asks about a release (the raw text: a version number has no token)."""
    return RELEASE_QUESTION.search(query.raw) is not None


def page_factor(indexes: CorpusIndexes, flags: Flags, query: NormalizedQuery) -> PageFactor | None:
    """The factor of each page for this query; None when no prior applies to any page."""
    retrieval = flags.retrieval
    about_releases = is_release_question(query)
    release = retrieval.release_notes_factor if indexes.has_release_notes and not about_releases else 1.0
    migration = retrieval.migration_guide_factor if indexes.has_migration_guides and not about_releases else 1.0
    boosts = tuple(retrieval.page_boosts.items())
    if release == 1.0 and migration == 1.0 and not boosts:
        return None
    said = frozenset(lexical_key(t) for t in query.tokens) if migration != 1.0 else frozenset()

    def factor(slug: str) -> float:
        kind = indexes.page_type(slug)
        f = release if kind == "release_notes" else 1.0
        if kind == "migration_guide" and migration != 1.0 and not said & indexes.migration_subject(slug):
            f *= migration
        for pattern, boost in boosts:
            if fnmatchcase(slug, pattern):
                f *= boost
        return f

    return factor


def lowered(results: list[Evidence], factor: PageFactor | None) -> list[Evidence]:
    """A keyword ranking with each page's scores × its factor, best first again."""
    if factor is None:
        return results
    scaled = [e if (f := factor(e.doc_slug)) == 1.0 else msgspec.structs.replace(e, score=e.score * f)
              for e in results]
    return sorted(scaled, key=lambda e: -e.score)
