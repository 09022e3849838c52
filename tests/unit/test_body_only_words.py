"""tests/golden/BODY_ONLY_WORDS.md states facts about the corpus the golden cases rely on
(`title-keyword-guard-body-only-words`, `body-only-placeholder`): check them, so a
corpus edit that breaks them fails here, not as a puzzling golden failure."""

from __future__ import annotations

import re
from pathlib import Path

from service.ingest.markdown import parse_seeds

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "tests" / "golden" / "BODY_ONLY_WORDS.md"


def _listed() -> dict[str, set[str]]:
    lines = re.findall(r"^- (\w+): (.+)$", NOTES.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {word: {s.strip() for s in slugs.split(",")} for word, slugs in lines}


def test_body_only_words_are_only_in_bodies_of_the_listed_pages() -> None:
    listed = _listed()
    assert {"breadcrumb", "tooltip", "placeholder"} <= set(listed)
    docs = parse_seeds(ROOT / "seeds")
    for word, slugs in listed.items():
        pattern = re.compile(rf"\b{word}s?\b", re.IGNORECASE)
        in_body = {d.slug for d in docs if pattern.search(d.content)}
        in_title_or_keywords = [d.slug for d in docs
                                if pattern.search(d.title) or any(pattern.search(k) for k in d.keywords)]
        assert in_title_or_keywords == [], (word, in_title_or_keywords)
        assert in_body == slugs, (word, sorted(in_body ^ slugs))
        assert len(in_body) >= 2, word
