"""The Tier-1 cache: the core-concepts glossary, always in memory.

It answers explain-type questions about a core concept ("what is a
workspace") when no database-backed tier can, and it is the last tier
before the generic reply.  It needs nothing but the glossary file, so it
keeps working while PostgreSQL is down.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import yaml

from service.domain.types import Evidence, NormalizedQuery
from service.normalize.text import lowercase_words, match_key, words


class GlossaryError(ValueError):
    """The core-concepts file is malformed; the message names the entry."""


@dataclass(frozen=True)
class Concept:
    term: str
    slug: str
    text: str
    aliases: tuple[str, ...] = ()

    @property
    def category(self) -> str:
        return self.slug.split("/", 1)[0]


def _key(text: str) -> str:
    return " ".join(match_key(w) for w in words(lowercase_words(text)))


def load_glossary(path: Path) -> list[Concept]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    entries = data.get("concepts") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise GlossaryError(f"{path}: expected a `concepts:` list")
    concepts: list[Concept] = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), str) and entry.get(k) for k in ("term", "slug", "text")
        ):
            raise GlossaryError(f"{path}: concept #{number} needs text fields term, slug and text")
        aliases = entry.get("aliases") or []
        concepts.append(
            Concept(
                term=entry["term"],
                slug=entry["slug"],
                text=" ".join(entry["text"].split()),
                aliases=tuple(str(a) for a in aliases),
            )
        )
    return concepts


@dataclass(frozen=True)
class Tier1Cache:
    concepts: tuple[Concept, ...]

    def lookup(self, subject: str) -> Concept | None:
        """The concept whose term or alias is the subject (singular/plural alike)."""
        wanted = _key(subject)
        if not wanted:
            return None
        for concept in self.concepts:
            if wanted in {_key(concept.term), *(_key(a) for a in concept.aliases)}:
                return concept
        return None

    def answer(self, query: NormalizedQuery) -> Evidence | None:
        """Evidence for an explain-type query about a core concept, else None."""
        if query.intent != "explain":
            return None
        concept = self.lookup(query.subject)
        if concept is None:
            return None
        return evidence_of(concept)


def evidence_of(concept: Concept) -> Evidence:
    return Evidence(
        doc_slug=concept.slug,
        title=concept.term,
        category=concept.category,
        snippet=concept.text,
        score=1.0,
        content_hash=hashlib.sha256(concept.text.encode()).hexdigest(),
        matched_terms=(concept.term.lower(),),
        source="cache",
        match_explain=(f"Tier-1 cache: core concept '{concept.term}'",),
        raw_score=1.0,
        title_or_keyword_hit=True,
        exact_title_phrase=True,
    )
