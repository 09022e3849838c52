"""What is embedded for a chunk besides its body (issue 19).

People describe what a page is for ("keep working on a plane"), which is
closer to a page's title and summary, or to a section's heading and first
sentence, than to the body text. So each chunk gets up to three vectors, the
kind being part of the vector's identity (`chunk_embeddings.kind`):

- `body`: (breadcrumb, chunk text) — what was embedded before;
- `section`: (heading path, the chunk's first sentence);
- `page`: (page title, the page summary — or the page's first sentence when it
  has none), on the page's first chunk only (chunk_index 0).

The semantic leg scores a chunk by its best vector among the kinds the flags
ask for (`semantic.representations`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import get_args

from service.flags import RepresentationKind
from service.ingest.parse import sentences

REPRESENTATION_KINDS: tuple[RepresentationKind, ...] = get_args(RepresentationKind)

# A first "sentence" of a bullet list can run for a paragraph: the model only
# needs its gist, and a short input keeps the vector about the topic.
FIRST_SENTENCE_WORDS = 40

# Bump when the way passages are turned into model input changes (context
# format, windowing): every stored vector then no longer matches and is
# re-embedded on the next indexing run (the "schema version bump" trigger).
EMBEDDING_INPUT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Representation:
    kind: RepresentationKind
    context: str
    text: str

    @property
    def input_hash(self) -> str:
        return representation_hash(self.kind, self.context, self.text)


def input_hash(context: str, content: str) -> str:
    """MD5 of the exact model input and its format version, so a renamed heading
    or a new input format also re-embeds."""
    return hashlib.md5(f"v{EMBEDDING_INPUT_VERSION}\n{context}\n{content}".encode()).hexdigest()


def representation_hash(kind: RepresentationKind, context: str, text: str) -> str:
    """The body keeps `input_hash` (its stored vectors stay current); other kinds
    hash their kind too, so equal texts of two kinds are two vectors."""
    if kind == "body":
        return input_hash(context, text)
    return hashlib.md5(f"v{EMBEDDING_INPUT_VERSION}\n{kind}\n{context}\n{text}".encode()).hexdigest()


def first_sentence(text: str, max_words: int = FIRST_SENTENCE_WORDS) -> str:
    parts = sentences(" ".join(text.split()))
    return " ".join((parts[0] if parts else "").split()[:max_words])


def passage_context(header_path: str | None, title: str) -> str:
    """The context an embedded chunk carries: its breadcrumb (which starts with
    the document title), or the title when the chunk has no breadcrumb."""
    return header_path or title


def representations(
    *, title: str, header_path: str | None, content: str, chunk_index: int,
    summary: str = "", page_opening: str = "",
) -> list[Representation]:
    """Every representation of one chunk; `page_opening` is the page's first chunk text
    (used for a page without a summary)."""
    context = passage_context(header_path, title)
    out = [Representation("body", context, content)]
    opening = first_sentence(content)
    if opening:
        out.append(Representation("section", context, opening))
    if chunk_index == 0:
        about = " ".join(summary.split()) or first_sentence(page_opening or content)
        out.append(Representation("page", title, about))
    return out
