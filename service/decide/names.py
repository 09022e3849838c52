"""A query made only of names the corpus never mentions is a no match (issue 42).

`createPersistedState`, `--keep-forever`, "what does editor.minimap do?": the user asks about one
thing by its exact name, and no page shows that name (whole, or as one word: `proxyfix` for
`ProxyFix`; service/normalize/query.py `is_known_identifier`). Pages that share its parts
(`keep`, `editor`) are about something else, so neither an answer nor a question about them
helps. A query with other words as well ("Trust::Reduced git config"), or with a name the corpus
does know, is decided as any other. Needs no fitted point: it stands before every policy.
"""

from __future__ import annotations

from service.domain.types import NoMatch, NormalizedQuery

REASON = "unknown_identifier"
MESSAGE = "The documentation never mentions {names}. Which part should I explain?"


def unknown_names(query: NormalizedQuery) -> NoMatch | None:
    """The no match for a query of unknown names only, else None."""
    if not query.only_identifiers or not query.unknown_identifiers:
        return None
    if len(query.unknown_identifiers) < len(query.identifiers):
        return None  # a name the corpus knows, or one that may be a word (`built-in`): decide as usual
    shown = ", ".join(f"`{name}`" for name in query.unknown_identifiers)
    return NoMatch(message=MESSAGE.format(names=shown), reason=REASON)
