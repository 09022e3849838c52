"""Identifiers are first-class terms (issue 42 item 1): the names a page shows and defines
(service/ingest/identifiers.py), the query's names (service/normalize/query.py), the keyword
index's identifier field (service/scoring/lexical_units.py) and the unknown-name no match
(service/decide/names.py)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from service.decide.names import no_match, unknown_names
from service.domain.identifiers import compact_key, is_kebab, is_strong, parts, suffixes
from service.domain.types import Chunk, Document, Evidence
from service.flags import LexicalFlags, TypoFlags
from service.ingest.chunker import chunk_document
from service.ingest.identifiers import MAX_PER_UNIT, Identifier, identifiers_of, linked_name
from service.ingest.linked_names import named_links
from service.ingest.markdown import CorpusPage, parse_corpus
from service.ingest.seeder import SeedOptions, default_chunker, prepare
from service.normalize.lexicon import Synonyms, build_lexicon
from service.normalize.query import MAX_NAME_PHRASES, normalize_query, query_identifiers
from service.scoring.bm25f import QueryTerm, definition_share
from service.scoring.indexes import build_indexes, identifier_index
from service.scoring.stemming import lexical_key

CORPORA = Path(__file__).resolve().parents[1] / "corpora"


def _shown(identifiers: tuple[Identifier, ...]) -> dict[str, bool]:
    """name → defined."""
    return {i.name: i.defined for i in identifiers}


@pytest.fixture(scope="module")
def mkdocs() -> dict[str, CorpusPage]:
    return {e.doc.slug: e for e in parse_corpus(CORPORA / "mkdocs-docs")}


# --- the grammar ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "after_this_request", "pymdownx.snippets", "ProxyFix", "--print-width", "$patch", "@app.route",
    "Trust::Reduced", ".prettierignore", "SESSION_COOKIE_SAMESITE", "storeToRefs", "HTTPException",
    "Jinja2Templates", "request.url_for", ":workspace-trust",
])
def test_names_prose_never_writes_are_strong(name: str) -> None:
    assert is_strong(name)


@pytest.mark.parametrize("word", ["e.g", "i.e", "URLs", "IDs", "10GB", "Session", "nav", "built-in", "x_y"])
def test_words_and_abbreviations_are_not_strong(word: str) -> None:
    assert not is_strong(word)


def test_a_names_keys_and_parts() -> None:
    assert parts("ProxyFix") == ["proxy", "fix"]
    assert parts("HTTPException") == ["http", "exception"]
    assert parts("after_this_request") == ["after", "this", "request"]
    assert parts("--print-width") == ["print", "width"]
    # An acronym's plural is one word, not a letter and a stray `ps` (`trustedIPs`, `URLs`).
    assert parts("trustedIPs") == ["trusted", "ips"]
    assert parts("getIDsFor") == ["get", "ids", "for"]
    assert parts("URLs") == ["urls"]
    assert compact_key("ProxyFix") == compact_key("proxy_fix") == compact_key("--proxy-fix") == "proxyfix"
    assert suffixes("flask.views.MethodView") == ["views.MethodView", "MethodView"]
    assert is_kebab("lint-staged") and not is_kebab("lint")


# --- what a page shows and defines ----------------------------------------------------------


def test_mkdocs_configuration_defines_its_options_and_shows_the_extensions(mkdocs: dict[str, CorpusPage]) -> None:
    doc = mkdocs["user-guide/configuration"].doc
    shown = _shown(identifiers_of(doc.content, (doc.title,)))
    # `### site_name`, `### nav`: MkDocs' option headings define the option.
    assert shown["site_name"] and shown["use_directory_urls"] and shown["nav"]
    # Shown in YAML and in a link's text, not defined here.
    assert shown["pymdownx.snippets"] is False
    assert "Configuration" not in shown  # the title is prose


def test_a_chunk_defines_the_option_its_heading_names(mkdocs: dict[str, CorpusPage]) -> None:
    doc = mkdocs["user-guide/configuration"].doc
    chunk = next(c for c in chunk_document(doc) if c.header_path.endswith("> site_name"))
    shown = _shown(identifiers_of(chunk.content, chunk.header_path.split(" > ")))
    assert shown["site_name"] is True


def test_vite_config_keys_are_defined_by_their_headings() -> None:
    pages = {e.doc.slug: e.doc for e in parse_corpus(CORPORA / "vite-docs")}
    doc = pages["config/build-options"]
    shown = _shown(identifiers_of(doc.content, (doc.title,)))
    assert shown["build.target"] and shown["build.outDir"] and shown["build.rollupOptions"]
    assert shown["build.rolldownOptions.input"] is False  # mentioned in another option's text


def test_sphinx_api_entries_define_their_objects_and_roles_mention_theirs() -> None:
    pages = {e.doc.slug: e.doc for e in parse_corpus(CORPORA / "requests-docs")}
    api = _shown(identifiers_of(pages["api"].content))
    # `.. autoclass:: Session`, `.. autoclass:: requests.adapters.HTTPAdapter`: API entries.
    assert api["Session"] and api["requests.adapters.HTTPAdapter"] and api["get"]
    quickstart = _shown(identifiers_of(pages["user/quickstart"].content))
    # ``r.raise_for_status()`` and :meth:`Response.raise_for_status()`: shown, as inline code.
    assert "r.raise_for_status" in quickstart and "raise_for_status" in quickstart
    assert "Session" not in quickstart or quickstart["Session"] is False


def test_literals_urls_and_prose_compounds_are_not_names() -> None:
    text = "\n".join([
        "A built-in, well-known option: set `strict` to `true` (see https://example.com/some_path).",
        "| Key | Default |", "|---|---|", "| `cache_dir` | `null` |",
        "```yaml", "theme_name: mkdocs   # the-theme", "```",
        "e.g. use `print()` and the [docs](../other_page.md#an_anchor).",
    ])
    shown = _shown(identifiers_of(text))
    assert shown == {"cache_dir": True, "theme_name": False, "the-theme": False, "strict": False, "print": False}


def test_a_page_of_thousands_of_names_keeps_a_bounded_number_definitions_first() -> None:
    text = "\n".join(f"`name_{i}` and `other_{i}_x`" for i in range(2000)) + "\n\n## `the_one`\n"
    found = identifiers_of(text)
    assert len(found) == MAX_PER_UNIT
    assert found[0] == Identifier("the_one", defined=True, count=1)


# --- the query's names ------------------------------------------------------------------------

NAMES = ["ProxyFix", "after_this_request", "pymdownx.snippets", "SESSION_COOKIE_SAMESITE", "mapState",
         "mapStores", "storeToRefs", "--print-width"]
LEXICON = build_lexicon(
    titles=["Proxy Fix", "Deferred callbacks", "Extensions", "Stores", "TypeScript"],
    keywords=[], synonyms=Synonyms(),
    texts=["Use ProxyFix behind a proxy; snippets; after_this_request; samesite cookies; state stores; "
           "mapState mapStores storeToRefs; prettier --print-width; TypeScript; "
           "--entryPoints.web.forwardedHeaders.trustedIPs"],
    identifiers=identifier_index(NAMES),
)


@pytest.mark.parametrize(("raw", "identifiers", "tokens"), [
    ("after_this_request", ("after_this_request",), ("request",)),
    ("how do I enable pymdownx.snippets?", ("pymdownx.snippets",), ("enable", "pymdownx", "snippet")),
    ("--print-width", ("--print-width",), ("print", "width")),
    # A name the pages write as one word stays that word, as their text tokenises it ...
    ("ProxyFix", ("ProxyFix",), ("proxyfix",)),
    ("TypeScript setup", ("TypeScript",), ("typescript", "setup")),
    # ... one they do not is searched by its parts.
    ("createPersistedState", ("createPersistedState",), ("create", "persisted", "state")),
    # A dotted name is read segment by segment, as the pages' text tokenises it: the segments
    # they write stay their words, another is searched by its parts.
    ("forwardedHeaders.trustedIPs", ("forwardedHeaders.trustedIPs",), ("forwardedheader", "trustedip")),
    ("forwardedHeaders.allowedHosts", ("forwardedHeaders.allowedHosts",), ("forwardedheader", "allowed", "host")),
    ("built-in themes", ("built-in",), ("built", "theme")),
    # Words that spell one of the corpus's names joined are that name too.
    ("proxy fix", ("ProxyFix",), ("proxy", "fix")),
    ("samesite cookies", (), ("samesite", "cooky")),  # the plural rule's "ies"
])
def test_a_query_reads_its_names_whole_and_searches_their_parts(
    raw: str, identifiers: tuple[str, ...], tokens: tuple[str, ...],
) -> None:
    query, _ = normalize_query(raw, LEXICON)
    assert query.identifiers == identifiers
    assert query.tokens == tokens


def test_query_identifiers_keep_the_order_and_drop_words() -> None:
    assert query_identifiers("what does `request.url_for()` do with $reset and e.g. URLs?") == [
        "request.url_for", "$reset"]


def test_an_address_typed_without_its_scheme_names_nothing() -> None:
    # MkDocs' "my site will live under example.com/foo/ …" was a no match: `example.com` read as a
    # name no page shows, where the pages write that address in their URLs (which are no names).
    raw = "my site will live under example.com/foo/ and not at the root of the domain"
    assert query_identifiers(raw) == []
    query, _ = normalize_query(raw, LEXICON)
    assert query.unknown_identifiers == () and unknown_names(query) == ()
    # Without a path after it, a dotted name is still a name.
    assert query_identifiers("pymdownx.snippets with example.com") == ["pymdownx.snippets", "example.com"]


def test_a_namespaced_keyword_is_one_name_and_a_path_is_none() -> None:
    # EDN and Clojure keys (Logseq's config.edn): the part after `/` is the name's own.
    assert query_identifiers("what does :editor/extra-codemirror-options change?") == [
        ":editor/extra-codemirror-options"]
    assert query_identifiers("set :ui/show-brackets? and run :write") == [":ui/show-brackets", ":write"]
    assert query_identifiers("open docs/index.md or src/main_app") == []


def test_a_misspelt_name_is_respelt_only_into_the_one_name_it_is_near() -> None:
    query, _ = normalize_query("SESSION_COOKIE_SAMSITE", LEXICON)
    assert [(c.original, c.corrected) for c in query.corrections] == [
        ("SESSION_COOKIE_SAMSITE", "SESSION_COOKIE_SAMESITE")]
    assert query.identifiers == ("SESSION_COOKIE_SAMESITE",) and query.unknown_identifiers == ()
    # A name the corpus has is never respelt into another one, and a word of a name is not
    # respelt alone (`snipets` is, as a word of its own).
    known, _ = normalize_query("mapStores", LEXICON)
    assert known.corrections == () and known.identifiers == ("mapStores",)
    alone, _ = normalize_query("snipets", LEXICON)
    assert [c.corrected for c in alone.corrections] == ["snippet"]
    inside, _ = normalize_query("my_snipets_dir", LEXICON)
    assert inside.corrections == () and "snipet" in inside.tokens


def test_a_name_of_another_build_is_not_a_misspelling() -> None:
    lexicon = build_lexicon(titles=[], keywords=[], texts=["x"], synonyms=Synonyms(),
                            identifiers=identifier_index(["@api.route"]))
    query, _ = normalize_query("APIRouter", lexicon)  # one edit from `apiroute`, but another name
    assert query.corrections == () and query.unknown_identifiers == ("APIRouter",)


def test_two_names_as_near_are_not_guessed_between() -> None:
    lexicon = build_lexicon(titles=[], keywords=[], texts=["x"], synonyms=Synonyms(),
                            identifiers=identifier_index(["mapState", "mapStake"]))
    query, _ = normalize_query("mapStale", lexicon, TypoFlags())
    assert query.corrections == () and query.unknown_identifiers == ("mapStale",)


@pytest.mark.parametrize(("raw", "unknown", "only", "decides"), [
    ("createPersistedState", ("createPersistedState",), True, True),
    ("what does editor.minimap do?", ("editor.minimap",), True, True),
    ("--keep-forever", ("--keep-forever",), True, True),
    # Other words beside it: the user still asks about a thing the pages never name ...
    ("api_router with proxy support", ("api_router",), False, True),
    # ... unless it is one mixed-case word, which may be a product's beside a need of the docs.
    ("APIRouter with proxy support", ("APIRouter",), False, False),
    # A name the corpus knows beside it: the question may be about that one.
    ("ProxyFix with APIRouter", ("APIRouter",), True, False),
    ("ProxyFix", (), True, False),
    ("proxyfix", (), False, False),  # a word, not a name
    # A word written as a call is code: known when the pages have it, else a name they lack.
    ("<script>alert(1)</script>", ("alert",), False, True),
    ("proxy(behind) stores", (), False, False),
    ("delete my widgit(s)", (), False, False),  # a plural mark, not a call: the word is respelt as any
    # One mixed-case word beside other words may be a product's; written as a call it is code.
    ("embed a YouTube video", ("YouTube",), False, False),
    ("useEffect() runs twice", ("useEffect",), False, True),
])
def test_names_the_corpus_never_mentions(raw: str, unknown: tuple[str, ...], only: bool, decides: bool) -> None:
    query, _ = normalize_query(raw, LEXICON)
    assert (query.unknown_identifiers, query.only_identifiers) == (unknown, only)
    assert unknown_names(query) == (unknown if decides else ())


def test_the_no_match_names_the_unknown_name_and_offers_the_closest_pages() -> None:
    query, _ = normalize_query("$hydrateAll", LEXICON)
    alone = no_match(unknown_names(query), closest=())
    assert alone.reason == "unknown_identifier" and alone.options == ()
    assert alone.message == "The documentation never mentions `$hydrateAll`."  # no question it cannot help with
    page = Evidence(doc_slug="ssr", title="Server Side Rendering", category="guide", snippet="", score=1.0,
                    content_hash="h", matched_terms=(), source="keyword")
    beside = no_match(("$hydrateAll",), closest=(page,))
    assert [o.doc_slug for o in beside.options] == ["ssr"]
    # one page: no other category to tell it from (clarify.named)
    assert beside.message == "The documentation never mentions `$hydrateAll`. The closest matches are Server Side Rendering."


# --- the identifier field -------------------------------------------------------------------


def _doc(slug: str, title: str, content: str) -> Document:
    return Document(slug=slug, category="guide", title=title, content=content, keywords=(), content_hash=slug)


DOCS = [
    _doc("deploying/proxy-fix", "Tell Flask it is Behind a Proxy",
         "Apply the middleware:\n\n```python\nfrom werkzeug.middleware.proxy_fix import ProxyFix\n"
         "app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1)\n```\n"),
    _doc("api", "API", "## Deferred callbacks\n\n`after_this_request(f)`\n\nRuns `f` after this request.\n\n"
         "## ProxyFix\n\n`ProxyFix(app, x_for=1)`\n\nAdjusts the WSGI environ behind a proxy.\n"),
    _doc("patterns/callbacks", "Deferred Request Callbacks",
         "Register a function to run after this request with `after_this_request`:\n\n"
         "```python\n@after_this_request\ndef remember(response):\n    return response\n```\n"),
    _doc("proxies", "Proxies", "A proxy in front of the app may fix the scheme. Proxy settings fix headers."),
]


@pytest.fixture(scope="module")
def indexes():  # type: ignore[no-untyped-def]
    return build_indexes(DOCS, [], Synonyms())


def _first(indexes, raw: str, lexical: LexicalFlags | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    query, _ = normalize_query(raw, indexes.lexicon)
    hits = indexes.documents.search(query.tokens, identifiers=query.identifiers, lexical=lexical,
                                    phrases=query.name_phrases)
    return [h.doc_slug for h in hits]


@pytest.mark.parametrize("raw", ["ProxyFix", "proxyfix", "proxy_fix", "ProxyFix middleware"])
def test_every_spelling_of_a_name_finds_the_pages_that_show_it(indexes, raw: str) -> None:  # type: ignore[no-untyped-def]
    ranked = _first(indexes, raw)
    assert set(ranked[:2]) == {"api", "deploying/proxy-fix"}, ranked
    assert ranked.index("proxies") > 1 if "proxies" in ranked else True


def test_the_page_that_defines_a_name_outranks_the_one_that_shows_it(indexes) -> None:  # type: ignore[no-untyped-def]
    assert _first(indexes, "after_this_request")[:2] == ["api", "patterns/callbacks"]
    # Without the field, "after this request" is the word "request" (two stopwords): the pages
    # tie on it and the definition is not preferred.
    off = _first(indexes, "after_this_request", LexicalFlags(identifier_weight=0))
    assert off[0] != "api" or len(off) > 2


def test_a_name_is_a_key_of_its_own_with_its_own_weight(indexes) -> None:  # type: ignore[no-untyped-def]
    query, _ = normalize_query("after_this_request", indexes.lexicon)
    hits = indexes.documents.search(query.tokens, identifiers=query.identifiers)
    top = indexes.documents.search(query.tokens, identifiers=query.identifiers, limit=1)
    explained = " ".join(top[0].match_explain)
    assert "'after_this_request'" in explained
    heavier = indexes.documents.search(query.tokens, identifiers=query.identifiers,
                                       lexical=LexicalFlags(identifier_weight=4.0))
    assert heavier[0].score > hits[0].score


def test_a_name_shown_once_in_code_outranks_its_words_in_prose() -> None:
    docs = [
        _doc("testclient", "Test Client", "Test the content of 500 responses with\n"
             "`client = TestClient(app, raise_server_exceptions=False)`.\n"),
        _doc("errors", "Errors", "The server may raise exceptions; server exceptions raise errors. "
             "Handled exceptions and server errors."),
    ]
    indexes = build_indexes(docs, [], Synonyms())
    assert _first(indexes, "raise_server_exceptions")[0] == "testclient"
    assert _first(indexes, "raise server exceptions")[0] == "testclient"  # the name's words, joined
    # Words that are not a name prefer the page that says them most.
    assert _first(indexes, "server exceptions")[0] == "errors"


def test_a_dotted_name_is_known_by_its_last_names_only_when_they_are_a_name() -> None:
    lexicon = build_lexicon(titles=[], keywords=[], texts=["Delete a note; the Session object"], synonyms=Synonyms(),
                            identifiers=identifier_index(["Session", "Delete", "ctx.notes.list"]))
    known, _ = normalize_query("requests.Session", lexicon)
    assert known.unknown_identifiers == ()
    unknown, _ = normalize_query("ctx.notes.delete", lexicon)
    assert unknown.unknown_identifiers == ("ctx.notes.delete",) and unknown_names(unknown) is not None


# --- names a link points at (service/ingest/linked_names.py) ---------------------------------


@pytest.mark.parametrize(("text", "name"), [
    ("store.$onAction", "store.$onAction"), ("`<Card>`", "Card"), ("`nav`", "nav"),
    ("`defineStore()`", "defineStore"), ("`--exclude`", "--exclude"),
    ("hot module replacement", None), ("Vite", None), ("`pinia.use(plugin)` and more", None),
])
def test_a_links_text_names_something_when_it_is_one_name(text: str, name: str | None) -> None:
    assert linked_name(text) == name


def test_links_in_fenced_code_and_off_site_name_nothing() -> None:
    markdown = ("See [`storeToRefs`](./core.md#destructuring) or [`ref`](https://vuejs.org/api/#ref).\n\n"
                "```md\n[`$patch`](./state.md#mutating)\n```\n")
    assert named_links(markdown) == [("storeToRefs", "./core.md#destructuring")]


@pytest.fixture(scope="module")
def pinia() -> tuple[list[Document], list[Chunk]]:
    documents, chunks, _ = prepare(CORPORA / "pinia-docs", default_chunker(), SeedOptions())
    return documents, chunks


def test_the_section_a_name_links_to_defines_the_name(pinia: tuple[list[Document], list[Chunk]]) -> None:
    # Pinia's plugins page: "You can use [store.$subscribe](./state.md#subscribing-to-the-state) and
    # [store.$onAction](./actions.md#subscribing-to-actions) inside plugins too".
    _, chunks = pinia
    linked = {(c.doc_slug, c.anchor): c.linked_names for c in chunks if c.linked_names}
    assert "store.$onAction" in linked[("core-concepts/actions", "subscribing-to-actions")]
    assert "store.$subscribe" in linked[("core-concepts/state", "subscribing-to-the-state")]
    assert not any(slug == "core-concepts/plugins" and "store.$onAction" in names
                   for (slug, _), names in linked.items())


def test_a_name_finds_the_section_the_docs_link_it_to_before_the_page_that_links(
    pinia: tuple[list[Document], list[Chunk]],
) -> None:
    # Both pages show `$onAction` once in prose and in code; the plugins section is the shorter.
    documents, chunks = pinia

    def first(with_links: bool) -> str:
        used = chunks if with_links else [msgspec.structs.replace(c, linked_names=()) for c in chunks]
        indexes = build_indexes(documents, used, Synonyms())
        query, _ = normalize_query("$onAction", indexes.lexicon)
        hits = indexes.chunks.search_unexplained(query.tokens, identifiers=query.identifiers, limit=5)
        return hits.results[0].doc_slug

    assert first(with_links=True) == "core-concepts/actions"
    assert first(with_links=False) == "core-concepts/plugins"


# --- a name beside the query word next to it (bm25f._side_by_side) ---------------------------


@pytest.mark.parametrize(("raw", "phrases"), [
    ("restic rewrite --exclude", ("rewrite --exclude",)),
    ("what does restic check --read-data do?", ("check --read-data",)),  # "do" is a stopword
    ("$onAction", ()),
    ("call store.$patch() twice", ("call store.$patch", "store.$patch twice")),
])
def test_a_query_keeps_each_name_with_the_word_beside_it(raw: str, phrases: tuple[str, ...]) -> None:
    lexicon = build_lexicon(titles=[], keywords=[], texts=["restic check rewrite call twice"], synonyms=Synonyms())
    query, _ = normalize_query(raw, lexicon)
    assert query.name_phrases == phrases


def test_the_page_that_writes_a_command_with_its_option_outranks_the_one_defining_the_option() -> None:
    docs = [
        _doc("backup", "Backing up", "## Excluding files\n\n- `--exclude`: specified one or more times to exclude "
             "one or more items\n\n```\n$ restic -r /srv/repo backup ~/work --exclude=*.c --exclude secret\n```\n"),
        _doc("repos", "Working with repositories", "## Removing files from snapshots\n\nSnapshots sometimes "
             "hold files that should not be there, a password or a large file added by mistake; the command "
             "below writes new snapshots without them and keeps the old ones until they are forgotten.\n\n"
             "```\n$ restic -r /srv/repo rewrite --exclude secret-file\n```\n"),
        _doc("design", "Design", "Packs are never modified: a prune may rewrite data into new packs."),
        _doc("faq", "FAQ", "Use --exclude-file and --exclude-caches for long lists; run `restic check "
             "--read-data-subset` to read part of the data."),
    ]
    indexes = build_indexes(docs, [], Synonyms())
    assert _first(indexes, "restic rewrite --exclude")[0] == "repos"
    assert _first(indexes, "restic rewrite --exclude", LexicalFlags(phrase_weight=0))[0] == "backup"
    # Not inside a longer name: `check --read-data-subset` does not write `check --read-data`.
    query, _ = normalize_query("restic check --read-data", indexes.lexicon)
    hits = indexes.documents.search(query.tokens, identifiers=query.identifiers, phrases=query.name_phrases)
    assert all("check --read-data" not in " ".join(h.match_explain) for h in hits)


def test_a_query_of_many_names_looks_for_a_bounded_number_of_phrases() -> None:
    lexicon = build_lexicon(titles=[], keywords=[], texts=["run"], synonyms=Synonyms())
    raw = " ".join(f"run --flag-{chr(97 + i)}" for i in range(20))
    query, _ = normalize_query(raw, lexicon)
    assert len(query.name_phrases) == MAX_NAME_PHRASES


def test_a_name_few_pages_show_pins_them_down(pinia: tuple[list[Document], list[Chunk]]) -> None:
    """`storesDirs` is shown by Pinia's Nuxt page alone: a query holding it pins that page down,
    typed whole or in another case; `defineStore`, shown on most pages, pins nothing; a name no page
    shows pins nothing."""
    from service.normalize.lexicon import Synonyms
    from service.scoring.indexes import NAME_PIN_MAX_PAGES, build_indexes

    documents, chunks = pinia
    indexes = build_indexes(documents, chunks, Synonyms())
    assert indexes.pinned_pages(["storesDirs"]) == {"ssr/nuxt"}
    assert indexes.pinned_pages(["storesdirs"]) == {"ssr/nuxt"}
    assert len(indexes.pages_by_name["definestore"]) > NAME_PIN_MAX_PAGES
    assert indexes.pinned_pages(["defineStore"]) == frozenset()
    assert indexes.pinned_pages(["defineStore", "storesDirs"]) == {"ssr/nuxt"}
    assert indexes.pinned_pages(["unregisterEverything"]) == frozenset()


# --- how much a definition counts (bm25f.definition_share) --------------------------------------

COMPONENT_DOCS = [
    _doc("reference/overrides", "Overrides Reference",
         "You can override built-in components by giving paths to replacement components.\n\n"
         "#### `Banner`\n\nComponent shown at the top of each page when its frontmatter sets a banner.\n\n"
         "#### `PageTitle`\n\nComponent containing the `<h1>` element for the current page.\n\n"
         "#### `Footer`\n\nFooter component shown on every page.\n"),
    _doc("guides/overriding-components", "Overriding Components",
         "## Use page data\n\nWhen you override a component you can read the data of the current page. "
         "A replacement [`PageTitle`](/reference/overrides/#pagetitle) component reads the title set in "
         "the page's frontmatter:\n\n```astro\nconst { title } = Astro.locals.route.entry.data;\n"
         "<h1 id=\"_top\">{title}</h1>\n```\n"),
    _doc("reference/frontmatter", "Frontmatter Reference", "Each page's frontmatter sets its title and banner."),
    _doc("guides/pages", "Pages", "Pages are Markdown files; read their frontmatter for the title."),
]


def test_a_definition_counts_whole_for_a_name_and_less_for_a_task_that_uses_it() -> None:
    indexes = build_indexes(COMPONENT_DOCS, [], Synonyms())
    assert _first(indexes, "PageTitle")[0] == "reference/overrides"
    assert _first(indexes, "PageTitle component")[0] == "reference/overrides"  # a word about the name
    task = "override PageTitle and read the current page's frontmatter inside it"
    assert _first(indexes, task)[0] == "guides/overriding-components"
    # Counted whole whatever the query's other words, the reference's definition wins the task too.
    assert _first(indexes, task, LexicalFlags(definition_words=100))[0] == "reference/overrides"


def _terms(name: str, *words: str) -> list[QueryTerm]:
    return [*(QueryTerm(w, lexical_key(w), 1.0) for w in words),
            QueryTerm(name, lexical_key(compact_key(name)), 1.0, named=True, name_key=compact_key(name))]


@pytest.mark.parametrize(("name", "words", "share"), [
    ("PageTitle", (), 1.0),
    ("configureServer", ("hook",), 1.0),
    ("foam-query", ("foam", "query", "block"), 1.0),  # the name's own parts are no other words
    ("task_failure", ("task", "failure", "signal", "arguments"), 1.0),  # words of the name's kind
    ("PageTitle", ("override", "read", "current", "page", "frontmatter"), 2 / 5),  # "page": its part
])
def test_how_much_a_definition_counts(name: str, words: tuple[str, ...], share: float) -> None:
    assert definition_share(_terms(name, *words), LexicalFlags()) == pytest.approx(share)


def test_two_names_that_stem_alike_are_two_names() -> None:
    # Snowball cuts `pytest_addoption` and `PYTEST_ADDOPTS` to one stem; a developer who types one
    # means that one, and the heading that names the other is no title phrase of the query.
    docs = [
        _doc("how-to/writing-hook-functions", "Writing hook functions",
             "## Using hooks in pytest_addoption\n\nA plugin adds command line options with "
             "`parser.addoption` inside its `pytest_addoption` hook.\n"),
        _doc("example/simple", "Basic patterns and examples",
             "## How to change command line options defaults\n\nSet the `PYTEST_ADDOPTS` environment "
             "variable to add command line options:\n\n```bash\nexport PYTEST_ADDOPTS=\"-v\"\n```\n"),
        _doc("how-to/usage", "How to invoke pytest", "Run pytest with the options you need."),
    ]
    indexes = build_indexes(docs, [], Synonyms())
    assert _first(indexes, "PYTEST_ADDOPTS")[0] == "example/simple"
    assert _first(indexes, "pytest_addoption")[0] == "how-to/writing-hook-functions"
    # The name's own term is held only where the name is shown (the words still match by stem).
    query, _ = normalize_query("PYTEST_ADDOPTS", indexes.lexicon)
    hits = indexes.documents.search(query.tokens, identifiers=query.identifiers)
    holding = {h.doc_slug for h in hits if any("'PYTEST_ADDOPTS'" in m for m in h.match_explain)}
    assert holding == {"example/simple"}, [h.match_explain for h in hits]


def test_a_unit_that_sends_the_reader_elsewhere_for_a_name_does_not_define_it() -> None:
    # Vitest's generated CLI page has a heading per option and sends the reader to the
    # configuration page for each ("Config: [name](/config/...)"); the configuration page explains it.
    cli = ("### coverage.thresholds.autoUpdate\n\n- **CLI:** `--coverage.thresholds.autoUpdate <boolean>`\n"
           "- **Config:** [coverage.thresholds.autoUpdate](/config/coverage#coverage-thresholds-autoupdate)\n")
    assert _shown(identifiers_of(cli))["coverage.thresholds.autoUpdate"] is False
    # A link within the unit's own page, or other pages pointing here by the name, keep it defined.
    own = cli.replace("(/config/coverage#", "(#")
    assert _shown(identifiers_of(own))["coverage.thresholds.autoUpdate"] is True
    pointed = identifiers_of(cli, linked=["coverage.thresholds.autoUpdate"])
    assert _shown(pointed)["coverage.thresholds.autoUpdate"] is True
    docs = [
        _doc("guide/cli-generated", "CLI Options", cli),
        _doc("config/coverage", "coverage", "## coverage.thresholds.autoUpdate\n\n- **Type:** `boolean`\n\n"
             "Update all threshold values `lines`, `functions`, `branches` and `statements` in the configuration "
             "file when the current coverage is better than the thresholds. Useful in CI to ratchet coverage "
             "up as it grows, together with `coverage.thresholds.perFile` and other threshold options.\n"),
    ]
    assert _first(build_indexes(docs, [], Synonyms()), "coverage.thresholds.autoUpdate")[0] == "config/coverage"
