"""Documentation dialects (issue 33): three real corpora read as their generators
render them (MkDocs, VitePress, Starlight MDX), each generator's anchor rule, stubs,
the snippet rule. No database: the corpus reader and the link check only."""

from __future__ import annotations

import logging
import re
import typing
from functools import cache
from pathlib import Path

import pytest

from service.flags import SeedingFlags
from service.ingest import parse
from service.ingest.dialects import (
    DIALECT_NAMES,
    Anchors,
    AnchorStyle,
    Dialect,
    detect_dialect,
    dialect_spec,
    github_slug,
    mkdocs_slug,
    vitepress_slug,
)
from service.ingest.links import check_links
from service.ingest.markdown import CorpusPage, CorpusRules, parse_corpus, seed_files
from service.ingest.parse import Section, parse_page, plain_text
from service.scoring.snippets import make_snippet

CORPORA = Path(__file__).resolve().parents[1] / "corpora"
DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "operations" / "dialects.md"
DIALECT_OF = {"mkdocs-docs": "mkdocs", "vite-docs": "vitepress", "starlight-docs": "starlight"}


@cache
def corpus(name: str) -> dict[str, CorpusPage]:
    return {e.doc.slug: e for e in parse_corpus(CORPORA / name, CorpusRules(dialect=DIALECT_OF[name]))}


def section(entry: CorpusPage, heading: str) -> Section:
    return next(s for s in entry.page.sections if s.path[-1] == heading)


def text_of(s: Section) -> str:
    return "\n\n".join(b.text for b in s.blocks)


def expected_pages(name: str) -> set[str]:
    lines = (CORPORA / f"{name}.expected-pages.txt").read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def documented_rows(name: str, width: int) -> list[list[str]]:
    """The rows of `width` cells of the docs page's tables for `name`, each with a reason."""
    rows = []
    for line in DOCS_PAGE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) == width and cells[0] == name:
            assert cells[-1], f"no reason given for {line}"
            rows.append([c.strip("`") for c in cells])
    return rows


def documented_broken_links(name: str) -> set[tuple[str, str]]:
    """The (file:line, target) rows of the broken-link tables for `name`."""
    return {(row[1], row[2]) for row in documented_rows(name, 4)}


def documented_unverifiable(name: str) -> set[tuple[str, int, str]]:
    """The (page#anchor, links, first link at) rows of the unverifiable-anchor table for `name`."""
    return {(row[1], int(row[2]), row[3]) for row in documented_rows(name, 5)}


# --- the three corpora ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(DIALECT_OF))
def test_the_seed_keeps_exactly_the_expected_pages_and_only_documented_broken_links(name: str) -> None:
    root = CORPORA / name
    assert (root / "LICENSE").is_file()
    pages = corpus(name)  # raises SeedError on any rejected file: 0 rejected
    assert set(pages) == expected_pages(name)
    check = check_links(list(pages.values()), root)
    broken = {(f"{b.path.relative_to(root).as_posix()}:{b.line}", b.target) for b in check.broken}
    assert broken == documented_broken_links(name)
    unverifiable = {(f"{a.slug}#{a.anchor}", a.links, f"{a.path.relative_to(root).as_posix()}:{a.line}")
                    for a in check.unverifiable}
    assert unverifiable == documented_unverifiable(name)
    assert (check.external, check.excluded, check.unwritten) == (0, 0, 0)


LABELLED_SETS = {"starlette-docs": Dialect.mkdocs, "restic-docs": Dialect.markdown, "prettier-docs": Dialect.docusaurus,
                 "pinia-docs": Dialect.vitepress, "helix-docs": Dialect.markdown, "foam-docs": Dialect.markdown}


@pytest.mark.parametrize("name", sorted(LABELLED_SETS))
def test_a_copied_labelled_set_reads_as_its_generator_with_only_documented_broken_links(name: str) -> None:
    """Read as a new user's copied folder is (`seeding.dialect: auto`, no config file beside it):
    Prettier's Docusaurus tree was read as VitePress (its `:::note` asides), which gave
    `## `--check`` the anchor `check` and reported 8 links to `cli.md#--check` and the like as
    broken; its `/docs/options#quotes` is the site's base path, not a missing page."""
    root = CORPORA / name
    assert detect_dialect(root, seed_files(root, quiet=True)) is LABELLED_SETS[name]
    pages = parse_corpus(root, CorpusRules())
    check = check_links(pages, root)
    broken = {(f"{b.path.relative_to(root).as_posix()}:{b.line}", b.target) for b in check.broken}
    assert broken == documented_broken_links(name)
    assert check.unverifiable == ()


def test_a_copied_folder_is_told_apart_by_its_own_markers(tmp_path: Path) -> None:
    """`{#id}` heading ids are written by MkDocs, VitePress and Docusaurus alike (Vitest's VitePress
    tree was read as MkDocs for them); the spacing of `::: tip` and Docusaurus' front matter decide."""
    def detected(**pages: str) -> Dialect:
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        for stem, text in pages.items():
            (folder / f"{stem}.md").write_text(text, encoding="utf-8")
        return detect_dialect(folder, sorted(folder.iterdir()))

    vitepress = "## benchmark.include {#benchmark-include}\n\n::: tip\nFast.\n:::\n"
    assert detected(a=vitepress, b="## coverage.all {#coverage-all}\n") is Dialect.vitepress
    docusaurus = "---\nid: intro\nsidebar_position: 1\n---\n\n# Intro {#intro}\n\n:::note\nHi.\n:::\n"
    assert detected(a=docusaurus, b="## Options {#options}\n") is Dialect.docusaurus
    assert detected(a="# Setup { #setup }\n\n!!! note\n    Careful.\n") is Dialect.mkdocs
    assert detected(a="# Plain {#plain}\n\nText.\n") is Dialect.markdown  # a tight id alone says nothing


def test_absolute_links_under_the_sites_base_path_and_front_matter_addresses_resolve(tmp_path: Path) -> None:
    """Docusaurus serves the tree under `/docs/` and at a page's `slug:` (or its folder and `id:`)."""
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "OrganizingState.md").write_text(
        "---\nid: organizing-state\n---\n\n# Organizing state\n\n## Where to keep it\n\nText.\n", encoding="utf-8")
    (tmp_path / "quick.md").write_text("---\nslug: /quickstart\n---\n\n# Quickstart\n\nText.\n", encoding="utf-8")
    (tmp_path / "index.md").write_text(
        "# Home\n\n[a](/docs/quickstart) [b](/docs/guide/organizing-state#where-to-keep-it) [c](/quickstart)\n"
        "[d](/docs/guide/missing) [e](/guide/organizing-state#nowhere)\n", encoding="utf-8")
    check = check_links(parse_corpus(tmp_path, CorpusRules()), tmp_path)
    assert sorted(b.target for b in check.broken) == ["/docs/guide/missing", "/guide/organizing-state#nowhere"]


def _write(root: Path, relative: str, text: str) -> None:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(text, encoding="utf-8")


def test_a_docusaurus_page_is_found_at_the_address_its_site_serves_it_at(tmp_path: Path) -> None:
    """Redux's `usage/WritingTests.mdx` (`id: writing-tests`) is served at `/usage/writing-tests`;
    QuestDB's `architecture/overview.mdx` (`slug: questdb-architecture`, no leading `/`) at
    `/architecture/questdb-architecture`; tRPC's `slug: /community/contributing` as written. The
    page a result names is the page a user's browser opens."""
    _write(tmp_path, "usage/WritingTests.mdx", "---\nid: writing-tests\ntitle: Writing Tests\n---\n\n# Writing Tests\n\nText.\n")
    _write(tmp_path, "architecture/overview.mdx",
           "---\ntitle: Architecture\nslug: questdb-architecture\n---\n\nStorage and queries.\n")
    _write(tmp_path, "community/Contrib.mdx",
           "---\nid: contributing\nslug: /community/contributing\n---\n\n# Contributing\n\nText.\n")
    _write(tmp_path, "guide/index.md", "---\nid: intro\n---\n\n# Guide\n\nText.\n")
    _write(tmp_path, "index.md", "# Home\n\n[tests](/usage/writing-tests) [arch](/architecture/questdb-architecture)\n")
    pages = parse_corpus(tmp_path, CorpusRules(dialect="docusaurus"))
    assert sorted(e.doc.slug for e in pages) == [
        "architecture/questdb-architecture", "community/contributing", "guide", "index", "usage/writing-tests"]
    assert check_links(pages, tmp_path).broken == ()
    # Another generator serves the file where it lies: its `id` is nobody's address.
    plain = parse_corpus(tmp_path, CorpusRules(dialect="markdown"))
    assert "usage/writingtests" in {e.doc.slug for e in plain}


def test_logseqs_only_broken_links_are_the_documented_block_references() -> None:
    """A `[[name]]` without a page is a page Logseq makes; the block references the tree lacks
    are the real broken links, each in the docs with its reason."""
    root = CORPORA / "logseq-docs"
    check = check_links(parse_corpus(root), root)
    broken = {(f"{b.path.relative_to(root).as_posix()}:{b.line}", b.target) for b in check.broken}
    assert broken == documented_broken_links("logseq-docs") and len(broken) == 9
    assert check.unwritten == 1144 and check.unverifiable == ()


@pytest.mark.parametrize("name", sorted(DIALECT_OF))
def test_auto_detection_reads_a_copied_docs_folder_as_its_generator(name: str) -> None:
    root = CORPORA / name
    detected = detect_dialect(root, seed_files(root, quiet=True))
    # Starlight's folder has no astro.config beside it: its .mdx pages make it MDX (same reading).
    assert detected == {"starlight-docs": Dialect.mdx}.get(name, Dialect(DIALECT_OF[name]))
    auto = {e.doc.slug: e.page.anchors for e in parse_corpus(root, CorpusRules())}
    assert auto == {slug: e.page.anchors for slug, e in corpus(name).items()}


@pytest.mark.parametrize("name", sorted(DIALECT_OF))
def test_a_stored_page_parsed_alone_has_the_same_sections_and_anchors(name: str) -> None:
    """The chunker may parse a page's stored content without its dialect: the generator's
    anchors travel in it as custom ids."""
    for slug, entry in corpus(name).items():
        if entry.doc.content != entry.page.body:
            continue  # an empty landing page stored with its title: nothing to compare
        again = parse._parse(entry.doc.content)  # a plain Markdown parse, no cache
        assert [(s.path, s.anchor) for s in again.sections] == [(s.path, s.anchor) for s in entry.page.sections], slug


# --- VitePress ----------------------------------------------------------------------


def test_vitepress_option_heading_anchor_text_and_container() -> None:
    page = corpus("vite-docs")["config/server-options"]
    host = section(page, "server.host")
    assert host.anchor == "server-host" and host.path == ("Server Options", "server.host")
    text = text_of(host)
    assert "Specify which IP addresses the server should listen on." in text
    assert "Tip: NOTE" in text and ":::" not in text  # `::: tip NOTE` read as a callout
    assert "What hosts are safe to be added?" in text_of(section(page, "server.allowedHosts"))  # ::: details
    assert "## server.host {#server-host}" in page.doc.content


def test_vitepress_custom_id_and_code_group() -> None:
    page = parse_page(
        "# Guide\n\nIntro.\n\n## Getting Started {#start}\n\nText.\n\n::: code-group\n\n```sh [npm]\nnpm i\n```\n\n:::\n"
        "\n## Another heading\n\n::: warning Careful\nThis breaks.\n:::\n",
        Dialect.vitepress,
    )
    assert [(s.path[-1], s.anchor) for s in page.sections] == [
        ("Guide", "guide"), ("Getting Started", "start"), ("Another heading", "another-heading")]
    assert [b.kind for b in page.sections[1].blocks] == ["para", "code"]
    assert page.sections[2].blocks[0].text == "Warning: Careful\nThis breaks."
    assert "{#" not in plain_text(page.body)


# --- MDX (Starlight) --------------------------------------------------------------


def test_mdx_aside_component_and_directive_asides_read_like_callouts() -> None:
    asides = corpus("starlight-docs")["components/asides"]
    titled = text_of(section(asides, "Use custom titles"))
    assert "Caution: Watch out!\nA warning aside *with* a custom title." in titled
    assert section(asides, "Usage").anchor == "usage"
    started = text_of(next(s for s in corpus("starlight-docs")["getting-started"].page.sections
                           if "Tip: See it in action" in text_of(s)))
    assert ":::" not in started  # `:::tip[See it in action]` … `:::`


def test_mdx_imports_dropped_tab_labels_kept_self_closing_components_dropped() -> None:
    pages = corpus("starlight-docs")
    for slug, entry in pages.items():
        prose = [b.text for s in entry.page.sections for b in s.blocks if b.kind != "code"]
        assert not any(re.match(r"^(import|export) ", t, re.MULTILINE) for t in prose), slug
        assert not any(re.search(r"^\s*</?(LinkCard|Aside|Tabs|TabItem)\b", t, re.MULTILINE) for t in prose), slug
    tabs = "\n".join(b.text for s in pages["components/tabs"].page.sections for b in s.blocks)
    assert "Stars: Sirius, Vega, Betelgeuse" in tabs
    assert section(pages["reference/frontmatter"], "title (required)").anchor == "title-required"  # ### `title` (required)


def test_mdx_component_text_is_dedented_not_code() -> None:
    page = parse_page(
        "import { Card } from 'x';\n\n<CardGrid>\n\t<Card title=\"Fast\" icon=\"rocket\">\n"
        "\t\tBuilt for speed.\n\t</Card>\n\t<LinkCard title=\"Go\" href=\"/go/\" />\n</CardGrid>\n",
        Dialect.starlight, mdx=True,
    )
    assert [(b.kind, b.text) for s in page.sections for b in s.blocks] == [("para", "Fast:\nBuilt for speed.")]


# --- MkDocs -------------------------------------------------------------------------


def test_mkdocs_readme_is_the_folder_index_page() -> None:
    pages = corpus("mkdocs-docs")
    guide = pages["user-guide"]
    assert guide.path.name == "README.md" and guide.doc.title == "User Guide"
    assert guide.doc.category == "user-guide" and not guide.doc.stub
    assert "The MkDocs User Guide provides documentation for users of MkDocs." in " ".join(text_of(guide.page.sections[0]).split())
    assert section(guide, "User Guide").anchor == "user-guide"


def test_mkdocs_blockquote_headings_attribute_lists_and_mkdocstrings() -> None:
    pages = corpus("mkdocs-docs")
    assert {"custom_dir", "static_templates", "locale"} <= pages["user-guide/configuration"].page.anchors
    theme = pages["user-guide/choosing-your-theme"]
    assert {"mkdocs-locale", "readthedocs-locale"} <= theme.page.anchors
    assert not any("{ #" in b.text or "{#" in b.text for s in theme.page.sections for b in s.blocks)
    page = parse_page("# T\n\nIntro.\n\n## Another heading { #custom-anchor .wide }\n\nText.\n\n"
                      "<a id=\"raw-anchor\"></a>\n\n[](){#markdown-anchor}\n\n## Another heading\n\nMore.\n", Dialect.mkdocs)
    assert [s.anchor for s in page.sections] == ["t", "custom-anchor", "another-heading"]
    assert {"raw-anchor", "markdown-anchor"} <= page.anchors
    assert "Another heading {#custom-anchor}" in page.body and "{#" not in plain_text(page.body)
    api = pages["dev-guide/api"].page
    assert "mkdocs.structure.files.Files" in api.anchors
    assert not any("show_root_heading" in b.text for s in api.sections for b in s.blocks)
    assert "mkdocs.plugins.CombinedEvent" in pages["dev-guide/plugins"].page.anchors  # > #### ::: …


def test_stubs_are_pages_with_nothing_to_say() -> None:
    stubs = {name: sorted(s for s, e in corpus(name).items() if e.doc.stub) for name in DIALECT_OF}
    assert stubs == {
        "mkdocs-docs": ["about/contributing", "dev-guide/api", "user-guide/cli"],  # include, directives
        "vite-docs": ["blog", "index", "live"],  # one component each
        "starlight-docs": ["404"],  # front matter only
    }
    assert corpus("vite-docs")["index"].doc.content == "Vite"  # kept, named by its title
    links_only = parse_page("# Pages\n\n- [One](one.md)\n- [Two](two.md)\n")
    properties_only = parse_page("type:: [[Command]]\nname:: Search\n")
    prose = parse_page("# Pages\n\n" + "This page explains how pages work in some detail. " * 5)
    assert links_only.stub and properties_only.stub and not prose.stub
    # A page that says what it is about in a property has something to say ("mobile" → iOS).
    described = parse_page("type:: [[Platform]]\ndescription:: This refers to iOS on mobile.\n")
    assert not described.stub


# --- anchors, flags, discovery, snippets ------------------------------------------


def test_each_generators_anchor_rule() -> None:
    assert vitepress_slug("server.host") == "server-host"
    assert vitepress_slug("1. Getting Started") == "_1-getting-started"
    assert vitepress_slug("foo_bar  Baz!") == "foo-bar-baz"
    assert github_slug("`title` (required)") == "title-required"
    assert github_slug("foo_bar  Baz!") == "foo_bar--baz"
    assert mkdocs_slug("custom_dir") == "custom_dir"
    anchors = Anchors(AnchorStyle.github)
    assert [anchors.add(t) for t in ("Foo", "Foo", "Foo 1", "Foo")] == ["foo", "foo-1", "foo-1-1", "foo-2"]
    vp = Anchors(AnchorStyle.vitepress)
    assert [vp.add(t) for t in ("A.b", "A b", "A-b")] == ["a-b", "a-b-1", "a-b-2"]


def test_mkdocs_anchor_rule_is_python_markdowns() -> None:
    toc = pytest.importorskip("markdown.extensions.toc")
    headings = ["Custom Dir", "custom_dir", "Ünïcode Tëst", "a -- b", "(theme specific keywords)",
                "Foo", "Foo", "foo_1", "", "--", "Tab\there"]
    ours, used = Anchors(AnchorStyle.mkdocs), set()
    theirs = [toc.unique(toc.slugify(h, "-"), used) for h in headings]
    assert [ours.add(h) for h in headings] == theirs


def test_the_dialect_flag_names_every_row_and_refuses_unknown_names() -> None:
    literal = typing.get_type_hints(SeedingFlags)["dialect"]
    assert set(typing.get_args(literal)) == set(DIALECT_NAMES)
    with pytest.raises(ValueError, match="valid: auto, markdown, mkdocs, vitepress"):
        dialect_spec("hugo")


def test_detection_from_config_files(tmp_path: Path) -> None:
    docs = tmp_path / "project" / "docs"
    docs.mkdir(parents=True)
    (docs / "a.md").write_text("# A\n\nText.\n")
    assert detect_dialect(docs, [docs / "a.md"]) == Dialect.markdown
    (tmp_path / "project" / "mkdocs.yml").write_text("site_name: x\nmarkdown_extensions:\n  - toc\n")
    assert detect_dialect(docs) == Dialect.mkdocs
    (tmp_path / "project" / "mkdocs.yml").write_text("site_name: x\ndocs_dir: elsewhere\n")
    assert detect_dialect(docs) == Dialect.markdown  # its docs are another folder
    (docs / ".vitepress").mkdir()
    assert detect_dialect(docs) == Dialect.vitepress
    content = tmp_path / "site" / "src" / "content" / "docs"
    content.mkdir(parents=True)
    (tmp_path / "site" / "astro.config.mjs").write_text("export default {}\n")
    assert detect_dialect(content) == Dialect.starlight
    (tmp_path / "site" / "src" / "content" / "docusaurus.config.js").write_text("module.exports = {}\n")
    assert detect_dialect(content) == Dialect.docusaurus


def test_the_log_names_the_reader_of_every_page(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 42: an all-reStructuredText folder was logged as "read as markdown"."""
    def said(root: Path) -> str:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="service.ingest.markdown"):
            parse_corpus(root)
        return next(r.getMessage() for r in caplog.records if " read as " in r.getMessage())

    requests = CORPORA / "requests-docs"
    assert said(requests) == f"seed: {requests} read as reStructuredText (15 pages)"
    mkdocs = CORPORA / "mkdocs-docs"
    assert said(mkdocs) == f"seed: {mkdocs} read as mkdocs (19 pages; seeding.dialect auto)"
    (tmp_path / "usage.rst").write_text("Usage\n=====\n\nRun it.\n")
    (tmp_path / "install.rst").write_text("Install\n=======\n\nGet it.\n")
    (tmp_path / "notes.md").write_text("# Notes\n\n!!! note\n    Careful.\n")
    assert said(tmp_path) == f"seed: {tmp_path} read as reStructuredText (2 pages) and mkdocs (1 page; seeding.dialect auto)"


def test_discovery_index_pages_and_logged_skips(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    for name, text in {"README.md": "# About\n", "404.md": "# Not found\n\nGone.\n", "index.mdx": "# Home\n\nHi.\n",
                       "guide/README.md": "# Guide\n\nRead me.\n", "guide/index.md": "# Guide\n\nIndex.\n",
                       "ref/README.md": "# Reference\n\nAll of it.\n", "ref/FAQ.md": "# FAQ\n\nAsked.\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with caplog.at_level(logging.INFO, logger="service.ingest.markdown"):
        pages = {e.doc.slug: e.path.relative_to(tmp_path).as_posix() for e in parse_corpus(tmp_path)}
    assert pages == {"404": "404.md", "index": "index.mdx", "guide": "guide/index.md",
                     "ref": "ref/README.md", "ref/faq": "ref/FAQ.md"}
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skipped) == 2
    assert any("README.md: a note about the corpus" in m for m in skipped)
    assert any("guide/README.md: the folder's index.md" in m for m in skipped)


def test_snippets_come_from_the_matched_section_not_the_summary() -> None:
    text = "Configure the server host. " * 20
    assert make_snippet(text, ["nothing"], "Guide to all settings.").startswith("Configure the server host.")
    assert make_snippet(text, ["settings"], "Guide to all settings.") == "Guide to all settings."
    assert make_snippet("", ["x"], "Guide to all settings.") == "Guide to all settings."
