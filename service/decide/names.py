"""A query about a name the corpus never mentions is a no match (issue 42).

`createPersistedState`, `--keep-forever`, "what does editor.minimap do?", "why does useEffect
run twice in react": the user asks about a thing by its exact name, and no page shows that name
(whole, or as one word: `proxyfix` for `ProxyFix`; service/normalize/query.py
`is_known_identifier`). Pages that share its parts (`keep`, `editor`, `effect`) or the query's
other words are about something else, so an answer about them would be wrong and a question
between them beside the point. Over the twelve labelled sets, 12 of the 13 queries with other
words that it decides are out of domain (docs/operations/identifiers.md). A query that also
names something the corpus does know ("storeToRefs with myStore") is decided as any other, and
so is one whose unknown name beside other words is one mixed-case word (a product's, perhaps:
"embed a YouTube video").

The reply says which name is missing; a query with other words besides also offers the closest
pages of its ranking (the user's own names beside a real need: "sticky_navbar in the readthedocs
theme"). A query of names only offers none: pages sharing their parts are about something else.
Needs no fitted point: it stands before every policy.
"""

from __future__ import annotations

from collections.abc import Sequence

from service.decide import clarify
from service.decide.seed_rules import option_of
from service.domain.identifiers import called_names, is_strong
from service.domain.types import Evidence, NoMatch, NormalizedQuery

REASON = "unknown_identifier"
MESSAGE = "The documentation never mentions {names}."


def unknown_names(query: NormalizedQuery) -> tuple[str, ...]:
    """The names no page mentions that decide `query` (a no match), else ()."""
    unknown = query.unknown_identifiers
    if not unknown:
        return ()  # the usual case: nothing more to read
    if any(is_strong(name) and name not in unknown for name in query.identifiers):
        return ()  # it names something the corpus knows too: decide as usual
    if not query.only_identifiers:
        called = set(called_names(query.raw))
        # Beside other words, a one-word name may be a product's ("embed a YouTube video"):
        # the need may be the documentation's own. Only code-shaped names decide there.
        unknown = tuple(n for n in unknown if not (n.isalnum() and n not in called))
    return unknown


def no_match(unknown: Sequence[str], closest: Sequence[Evidence]) -> NoMatch:
    """The reply naming the `unknown` names, offering the `closest` pages when there are any."""
    said = MESSAGE.format(names=", ".join(f"`{name}`" for name in unknown))
    if not closest:
        return NoMatch(message=said, reason=REASON)
    return NoMatch(message=clarify.closest_matches(closest, lead=said), reason=REASON,
                   options=tuple(option_of(e) for e in closest))
