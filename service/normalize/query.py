"""Raw query text → NormalizedQuery (pure: the lexicon is passed in)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import msgspec
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from service.domain.identifiers import (
    NAME,
    SEGMENTS,
    called_names,
    compact_key,
    is_kebab,
    is_strong,
    names_in,
    parts,
    skeleton,
    suffixes,
    whole_key,
)
from service.domain.types import Correction, Intent, NormalizedQuery
from service.flags import TypoFlags
from service.normalize.lexicon import Lexicon
from service.normalize.query_type import detect_query_type
from service.normalize.text import (
    apply_phrase_synonyms,
    apply_word_synonyms,
    clean,
    lowercase_words,
    match_key,
    stem_plural,
    without_scripts,
    words,
)

_EXPLAIN_PATTERNS = (
    re.compile(r"^(?:what|whats) (?:is|are|s) (?P<subject>.+)$"),
    re.compile(r"^whats (?P<subject>.+)$"),
    re.compile(r"^(?:explain|describe|define) (?P<subject>.+)$"),
    re.compile(r"^tell me (?:more )?about (?P<subject>.+)$"),
    re.compile(r"^what does (?P<subject>.+) (?:mean|do)$"),
    re.compile(r"^how does (?P<subject>.+) work$"),
)
_NAVIGATE_PATTERN = re.compile(
    r"^(?:open|go to|goto|show me|show|take me to|where is|where are|where do i find|"
    r"how do i (?:find|open|get to|go to))\b"
)
_LEADING_DETERMINERS = re.compile(r"^(?:(?:the|a|an|my|our|your|this|that) )+")
# Joiners that make a query multi-intent: "workspace and widgets", "notes + quick links".
_INTENT_SPLIT = re.compile(r"\s+(?:and|or)\s+|[+&,;]")


# Small talk: a message of greeting, thanks or acknowledgement words only ("hi there",
# "thanks, that helped!"). English conversation words, not any corpus's vocabulary; a message
# with one word besides these ("hello world") is a question about something.
_GREETINGS = frozenset({"hi", "hello", "hey", "hiya", "howdy", "yo", "morning", "afternoon", "evening", "greetings"})
_THANKS = frozenset({
    "thanks", "thank", "thx", "ty", "cheers", "bye", "goodbye", "ok", "okay", "cool", "great", "nice",
    "awesome", "perfect", "lol", "haha", "brilliant", "excellent", "appreciated",
})
_SMALL_TALK_FILLER = frozenset({
    "there", "you", "all", "everyone", "good", "so", "very", "much", "a", "lot", "that", "this", "it",
    "helped", "helps", "works", "worked", "got", "for", "the", "help", "again", "oh", "well", "see", "ya",
    "bot", "friend", "im", "i", "am", "just", "saying", "how", "are", "doing", "s", "up", "whats",
})


def small_talk(lowered: str) -> str:
    """"greeting" or "thanks" when the message is small talk only, else ""."""
    said = words(lowered)
    if not said or any(w not in _GREETINGS | _THANKS | _SMALL_TALK_FILLER for w in said):
        return ""
    if any(w in _GREETINGS for w in said):
        return "greeting"
    return "thanks" if any(w in _THANKS for w in said) else ""


def detect_intent(lowered: str) -> tuple[Intent, str]:
    """Explain ("what is X", "explain X", "tell me about X"), navigate, small talk, or lookup.

    Returns the intent and, for explain queries, the subject as written (for small talk, its
    kind: "greeting" or "thanks").
    """
    kind = small_talk(lowered)
    if kind:
        return "small_talk", kind
    for pattern in _EXPLAIN_PATTERNS:
        found = pattern.match(lowered)
        if found:
            subject = _LEADING_DETERMINERS.sub("", found.group("subject")).strip()
            return "explain", subject
    if _NAVIGATE_PATTERN.match(lowered):
        return "navigate", ""
    return "lookup", ""


def correct_typo(token: str, lexicon: Lexicon, settings: TypoFlags) -> Correction | None:
    """The corpus word the user most likely meant by `token`, or None.

    Only tokens that are not in the vocabulary, and whose length lies within
    the bounds, are looked at: the upper bound keeps the fuzzy search cheap
    for hostile 10,000-character tokens. Two rules, the first that finds one
    wins:

    1. the closest known term, else vocabulary word, whose similarity reaches
       `similarity_cutoff` (rapidfuzz ratio; on a tie the product's own terms win);
    2. for a token that is not an English word (`Lexicon.english`), the word
       within `max_edits` edits (a swapped, changed, missing or extra letter is
       one edit; never more than 1 up to 5 letters, as in Lucene's and
       Elasticsearch's "AUTO" fuzziness; in a four-letter word only two
       swapped letters) that shares its first letter (as Lucene's spell
       checker requires). The ratio of rule 1 counts a swap or a
       changed letter as two edits, so it misses "qeury", "hmoe", "custon".
    """
    if token in lexicon.vocabulary or match_key(token) in lexicon.vocabulary_keys:
        return None
    if not settings.min_token_length <= len(token) <= settings.max_token_length or token.isdigit():
        return None
    best: Correction | None = None
    for choices in lexicon.typo_choices:
        found = process.extractOne(
            token, choices, scorer=fuzz.ratio, score_cutoff=settings.similarity_cutoff
        )
        if found is not None and (best is None or found[1] > best.similarity):
            best = Correction(original=token, corrected=found[0], similarity=round(found[1], 1))
    if best is None and lexicon.english and token not in lexicon.english:
        best = _within_edits(token, lexicon, settings)
    return best


_SWAPS_ONLY_UP_TO = 4


def _within_edits(token: str, lexicon: Lexicon, settings: TypoFlags) -> Correction | None:
    budget = min(settings.max_edits, 1 if len(token) <= 5 else 2)
    if budget < 1:
        return None
    found = process.extract(
        token, lexicon.words_by_initial.get(token[0], ()), scorer=OSA.distance,
        score_cutoff=budget, limit=None,
    )
    if len(token) <= _SWAPS_ONLY_UP_TO:
        # In a four-letter word one changed, missing or extra letter makes another word too
        # often ("docs" -> "dock"); two swapped letters ("hmoe", "taks") rarely do.
        found = [hit for hit in found if sorted(hit[0]) == sorted(token)]
    if not found:
        return None
    # Fewest edits; then the product's own terms; then the word the corpus uses most.
    word = min(
        found, key=lambda hit: (hit[1], hit[0] not in lexicon.known_terms, -lexicon.counts.get(hit[0], 0), hit[0])
    )[0]
    return Correction(original=token, corrected=word, similarity=round(fuzz.ratio(token, word), 1))


_ADDRESS = re.compile(r"(?<![\w.-])[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/\S*")
"""A host and path typed without a scheme (`example.com/foo/`): an address, as the pages' URLs
are (service/ingest/identifiers.py), not a name."""


def query_identifiers(text: str) -> list[str]:
    """The names in code a query holds, as written, each once: strong names anywhere and
    kebab-case words (`lint-staged`), read before tokenising splits them (service/domain/identifiers.py);
    none inside an address (`_ADDRESS`)."""
    text = _ADDRESS.sub(" ", text)
    return list(dict.fromkeys(n for n in names_in(text) if is_strong(n) or is_kebab(n)))


_NEIGHBOUR = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*")
MAX_NAME_PHRASES = 8
"""Each phrase is looked for in the text of every unit showing its name: a query of many names
costs at most this many scans."""
_EDGE_PUNCTUATION = "?!.,;:\"'()[]{}`<>"


def name_phrases(text: str, identifiers: Sequence[str], stopwords: Collection[str]) -> tuple[str, ...]:
    """Each name of `identifiers` with the word written just before or after it, when that word is
    not a stopword (`restic rewrite --exclude` → `rewrite --exclude`), lower-cased, each once: a
    command and its option, an object and its method, as the pages write them side by side."""
    written = [word.strip(_EDGE_PUNCTUATION) for word in text.split()]
    wanted = set(identifiers)
    found: list[str] = []
    for at, word in enumerate(written):
        if word not in wanted:
            continue
        for side in (at - 1, at + 1):
            beside = written[side] if 0 <= side < len(written) else ""
            if _NEIGHBOUR.fullmatch(beside) and beside.lower() not in stopwords:
                found.append(f"{beside} {word}" if side < at else f"{word} {beside}")
    return tuple(dict.fromkeys(phrase.lower() for phrase in found))[:MAX_NAME_PHRASES]


def spelled_out(text: str, identifiers: list[str], lexicon: Lexicon) -> str:
    """`text` with each identifier the corpus does not write as one word written as its parts
    (`createPersistedState` → `create persisted state`), so that its words are query tokens
    whatever its case. A name the pages write (`storeToRefs`, `TypeScript`: the word
    `storetorefs`, `typescript` of their text) stays that one word, as the pages' own text
    tokenises it; its parts are searched among the pages' names (`identifier_keys`)."""
    if not identifiers:
        return text
    wanted = {name for name in identifiers if match_key(compact_key(name)) not in lexicon.vocabulary_keys}
    return NAME.sub(lambda m: _spelled(m.group(0), lexicon) if m.group(0) in wanted else m.group(0), text)


def _spelled(name: str, lexicon: Lexicon) -> str:
    """A name's segments as the pages' text tokenises them (it splits at `.`, `_`, `-`): a segment
    the pages write as one word stays that word (`forwardedHeaders.trustedIPs` → `forwardedHeaders
    trustedIPs`, the words of the pages that show it), any other is written as its parts."""
    return " ".join(
        segment if match_key(segment.lower()) in lexicon.vocabulary_keys else " ".join(parts(segment))
        for segment in SEGMENTS.findall(name)
    )


def is_known_identifier(name: str, lexicon: Lexicon) -> bool:
    """The corpus mentions `name`: whole or compact (`proxy_fix` is `ProxyFix`), by a dotted
    path's last names when they are a name themselves (`requests.Session` for `Session`; not
    `ctx.notes.delete` for the word `delete`), or as one word of its text (`proxyfix`)."""
    known = lexicon.identifiers
    forms = (name, *(form for form in suffixes(name) if is_strong(form) or form[:1].isupper()))
    if any(whole_key(form) in known or compact_key(form) in known for form in forms):
        return True
    return match_key(compact_key(name)) in lexicon.vocabulary_keys


IDENTIFIER_TYPO_MIN = 5
"""Letters and digits a misspelt name needs before it is respelt (`$pach` is not `$patch`'s)."""


JOINED_MAX_WORDS = 4


def joined_identifier(text: str, lexicon: Lexicon) -> str | None:
    """The corpus's name a query of two to four words spells out ("proxy fix" → `ProxyFix`,
    "use directory urls" → `use_directory_urls`): its words, joined, are the compact form of one of
    the corpus's strong names. Only a whole query: inside a longer one, neighbouring words join
    into names nobody meant ("restic key add" is not about `RESTIC_KEY`)."""
    said = words(lowercase_words(text))
    if not 2 <= len(said) <= JOINED_MAX_WORDS:
        return None
    name = lexicon.identifiers.get("".join(said))
    return name if name is not None and is_strong(name) else None


def correct_identifier(name: str, lexicon: Lexicon, settings: TypoFlags) -> Correction | None:
    """The corpus's name a query's unknown name misspells (`SESSION_COOKIE_SAMSITE`), or None.

    A name is never respelt into another name: only a strong one the corpus does not mention is
    looked at, and only when exactly one of the corpus's names lies within the edits a word of its
    length may have (`typo.max_edits`: one up to 9 letters and digits, else two), with the
    same first letter, the same separators and as many parts."""
    typed = compact_key(name)
    if settings.max_edits < 1 or len(typed) < IDENTIFIER_TYPO_MIN or not is_strong(name):
        return None  # `built-in` may be a word: words have their own correction
    if is_known_identifier(name, lexicon):
        return None
    budget = min(settings.max_edits, 1 if len(typed) <= 9 else 2)
    found = process.extract(typed, lexicon.identifier_words, scorer=OSA.distance, score_cutoff=budget, limit=None)
    found = [hit for hit in found if hit[0][:1] == typed[:1]]
    if not found:
        return None
    nearest = min(hit[1] for hit in found)
    meant = {lexicon.identifiers[hit[0]] for hit in found if hit[1] == nearest}
    # The same name misspelt keeps its build: `APIRouter` is not a misspelt `@api.route`.
    meant = {m for m in meant if skeleton(m) == skeleton(name) and len(parts(m)) == len(parts(name))}
    if len(meant) != 1:
        return None  # two names as near: either may be meant
    corrected = meant.pop()
    return Correction(original=name, corrected=corrected, similarity=round(fuzz.ratio(typed, compact_key(corrected)), 1))


def _normalise_tokens(
    lowered: str, lexicon: Lexicon, typo: TypoFlags, notes: list[str], protected: frozenset[str] = frozenset()
) -> tuple[list[str], list[Correction], list[str]]:
    """`protected`: words of the query's identifiers, never respelt (a name is not a typo of
    another: `storesDirs` is not `storeDirs`)."""
    rewritten, phrase_rules = apply_phrase_synonyms(lowered, lexicon.synonyms.phrases)
    kept = [t for t in words(rewritten) if t not in lexicon.stopwords]
    swapped, word_rules = apply_word_synonyms(kept, lexicon.synonyms.words)
    notes.extend(f"synonym: {rule}" for rule in [*phrase_rules, *word_rules])
    tokens: list[str] = []
    corrections: list[Correction] = []
    unknown: list[str] = []
    for token in swapped:
        if token in lexicon.stopwords:
            continue
        stemmed = stem_plural(token, lexicon.known_terms)
        fix = None if token in protected else correct_typo(stemmed, lexicon, typo)
        if fix is None and stemmed != token and token not in protected:
            # The stemmer may have cut a misspelt word ("taks" -> "tak"): try it as typed.
            fix = correct_typo(token, lexicon, typo)
        if fix is not None:
            corrections.append(msgspec.structs.replace(fix, original=token))  # the word as typed
            stemmed = stem_plural(fix.corrected, lexicon.known_terms)
        if stemmed not in tokens:
            tokens.append(stemmed)
            if match_key(stemmed) not in lexicon.vocabulary_keys:
                unknown.append(stemmed)
    return tokens, corrections, unknown


def normalize_query(
    raw: str, lexicon: Lexicon, typo: TypoFlags | None = None
) -> tuple[NormalizedQuery, list[str]]:
    """Normalise a query; also returns human-readable notes (synonyms used).

    Stages in order: identifiers (read whole, then written as their parts; a query of a few words
    that spell one of the corpus's names joined is that name too), clean, lowercase
    and strip punctuation, phrase synonyms, tokenise, stopwords, word synonyms, conservative
    stemming, typo correction (never of an identifier's words).
    """
    settings = typo or TypoFlags()
    received = cleaned = clean(raw)
    # Words in a script no page uses ("ما هو workspace שלום") can match nothing the corpus says and
    # would only dilute the rest: the query is read without them, unless they are all it says.
    kept, foreign = without_scripts(cleaned, lexicon.scripts)
    if foreign and kept:
        cleaned = kept
    else:
        foreign = []
    names = query_identifiers(cleaned)
    respelt = [fix for name in names if (fix := correct_identifier(name, lexicon, settings)) is not None]
    if respelt:
        fixed = {fix.original: fix.corrected for fix in respelt}
        cleaned = NAME.sub(lambda m: fixed.get(m.group(0), m.group(0)), cleaned)
        names = query_identifiers(cleaned)
    spelled = spelled_out(cleaned, names, lexicon)
    written = NAME.sub(lambda m: " " if m.group(0) in names else m.group(0), cleaned)
    joined = [] if names or (spelt := joined_identifier(cleaned, lexicon)) is None else [spelt]
    # A kebab-case name may be a misspelt word (`gh-delpoy`): only a strong name's words are kept.
    protected = frozenset(w for name in names if is_strong(name) for w in (*parts(name), compact_key(name)))
    lowered = lowercase_words(spelled)
    intent, subject = detect_intent(lowered)
    notes: list[str] = [f"left out {' '.join(foreign)}: a script the documentation does not use"] if foreign else []
    tokens, corrections, unknown = _normalise_tokens(lowered, lexicon, settings, notes, protected)
    if corrections:
        # Spelling first, synonyms second: "keybaord shortcuts" meets its phrase rule once respelt.
        fixes = {fix.original: fix.corrected for fix in corrections}
        lowered = " ".join(fixes.get(word, word) for word in words(lowered))
        notes = []
        tokens, _, unknown = _normalise_tokens(lowered, lexicon, settings, notes, protected)

    intent_parts: list[tuple[str, ...]] = []
    pieces = [lowercase_words(p) for p in _INTENT_SPLIT.split(spelled.lower())]
    if len(pieces) > 1:
        for piece in pieces:
            piece_tokens, _, _ = _normalise_tokens(piece, lexicon, settings, [], protected)
            if piece_tokens:
                intent_parts.append(tuple(piece_tokens))
    is_multi = len(intent_parts) >= 2
    said_besides = [w for w in words(lowercase_words(written)) if w not in lexicon.stopwords]
    called = called_names(cleaned)  # `alert(1)`: code by its shape, though not a strong name
    query = NormalizedQuery(
        raw=received,
        tokens=tuple(tokens),
        phrase=" ".join(tokens),
        corrections=(*respelt, *corrections),
        unknown_tokens=tuple(unknown),
        intent=intent,
        subject=subject,
        parts=tuple(intent_parts) if is_multi else (tuple(tokens),),
        is_multi_intent=is_multi,
        query_type=detect_query_type(cleaned),
        identifiers=(*names, *joined),
        name_phrases=name_phrases(cleaned, names, lexicon.stopwords),
        unknown_identifiers=tuple(
            n for n in dict.fromkeys((*names, *called))
            if (is_strong(n) or n in called) and not is_known_identifier(n, lexicon)
        ),
        only_identifiers=bool(names) and not said_besides,
        semantic_text=cleaned if foreign else "",
    )
    return query, notes
