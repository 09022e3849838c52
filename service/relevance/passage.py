"""What the relevance model reads of a section: its heading path and its opening sentences.

One home for the passage, so that the pairs it is trained on (lab/relevance) and the
sections it scores in the service are cut alike. Prose only: code blocks are read
only when a section has no prose at all (a section that is one example).
"""

from __future__ import annotations

from service.ingest.parse import block_tokens, sentence_ends

OPENING_CHARS = 320
"""About 70 word pieces: with the question and the heading path, a pair fits the model's
96-token input (the manifest records the model's own `max_length`)."""


def _prose_and_code(markdown: str) -> tuple[str, str]:
    prose: list[str] = []
    code: list[str] = []
    for token in block_tokens(markdown):
        if token.type == "inline":
            for child in token.children or ():
                if child.type in ("text", "code_inline"):
                    prose.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    prose.append(" ")
            prose.append(" ")
        elif token.type in ("fence", "code_block"):
            code.append(token.content)
    return " ".join("".join(prose).split()), " ".join(" ".join(code).split())


def opening(markdown: str, max_chars: int = OPENING_CHARS) -> str:
    """The first sentences of a section's text that fit `max_chars` (at least one,
    cut at a word when even it is longer); its code when it has no prose."""
    prose, code = _prose_and_code(markdown)
    text = prose or code
    if len(text) <= max_chars:
        return text
    ends = [end for end in sentence_ends(text) if end <= max_chars]
    if ends:
        return text[: ends[-1]].strip()
    cut = text[:max_chars]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def passage(header_path: str | None, markdown: str, *, max_chars: int = OPENING_CHARS) -> str:
    """`heading path: opening` (the opening alone when there is no heading path)."""
    text = opening(markdown, max_chars)
    return f"{header_path}: {text}" if header_path else text
