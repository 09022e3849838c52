"""Titles, anchors and links as the site renders them (issue 42, item 2), on real pages where the
project has them (tests/fixtures/real-pages, tests/corpora) and on pages written like the issue's
examples where it has none (Material for MkDocs' own documentation is not vendored)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from service.domain.types import Document
from service.ingest.chunker import chunk_document
from service.ingest.dialects import Dialect, detect_dialect
from service.ingest.links import LinkCheck, check_links
from service.ingest.markdown import CorpusRules, ignored_files, parse_corpus, seed_files
from service.ingest.parse import parse_page
from service.ingest.rst import parse_rst_page
from service.ingest.seeder import SeedOptions, prepare

TESTS = Path(__file__).resolve().parents[1]
REAL = TESTS / "fixtures" / "real-pages"
MKDOCS = TESTS / "corpora" / "mkdocs-docs"


def write(root: Path, pages: dict[str, str]) -> Path:
    for relative, text in pages.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def links_of(root: Path, rules: CorpusRules | None = None) -> LinkCheck:
    rules = rules or CorpusRules()
    return check_links(parse_corpus(root, rules), root, ignored_files(root, rules))


# --- reStructuredText titles keep their inline literals ------------------------------


def test_a_sphinx_title_with_inline_code_keeps_the_code() -> None:
    page = parse_rst_page((REAL / "sphinx-docs/extdev/testing.rst").read_text(encoding="utf-8"),
                          docname="extdev/testing")
    titles = [s.path[-1] for s in page.sections]
    assert "pytest configuration" in titles  # ``pytest`` configuration; it was " configuration"
    assert page.headings[1] == "pytest configuration"
    configuration = next(s for s in page.sections if s.path[-1] == "pytest configuration")
    assert configuration.anchor == "pytest-configuration"  # Sphinx's id, unchanged
    assert "## `pytest` configuration" in page.body  # the stored heading shows it as code


def test_the_issues_titles_read_whole_and_name_their_chunks(tmp_path: Path) -> None:
    write(tmp_path, {"guide.rst": "Using ``async`` and ``await``\n=============================\n\nText about it.\n\n"
                                  "JavaScript, ``fetch``, and JSON\n-------------------------------\n\nMore text.\n"})
    entry = parse_corpus(tmp_path)[0]
    assert entry.doc.title == "Using async and await"
    assert [s.path for s in entry.page.sections] == [
        ("Using async and await",), ("Using async and await", "JavaScript, fetch, and JSON")]
    headers = {c.header_path for c in chunk_document(entry.doc)}
    assert "Using async and await > JavaScript, fetch, and JSON" in headers


def test_a_label_on_a_title_with_code_links_with_the_whole_title(tmp_path: Path) -> None:
    write(tmp_path, {"a.rst": ".. _fetching:\n\nUsing ``fetch``\n===============\n\nText.\n",
                     "b.rst": "Other\n=====\n\nSee :ref:`fetching`.\n"})
    pages = {e.doc.slug: e for e in parse_corpus(tmp_path)}
    assert "[Using fetch](a.rst#using-fetch)" in pages["b"].doc.content  # it was "[Using](…)"


# --- MkDocs attribute lists win over the heading's text ------------------------------


ISSUE_HEADING = "## Navigation path <small>Breadcrumbs</small> { id=navigation-path }"


def test_an_id_attribute_wins_over_a_heading_with_inline_html() -> None:
    page = parse_page(f"# Setting up navigation\n\nIntro.\n\n{ISSUE_HEADING}\n\nText.\n", Dialect.mkdocs)
    assert [(s.path[-1], s.anchor) for s in page.sections][1] == ("Navigation path Breadcrumbs", "navigation-path")
    assert "navigation-path-breadcrumbs" not in page.anchors
    assert "## Navigation path Breadcrumbs {#navigation-path}" in page.body


def test_the_anchor_is_the_one_python_markdown_renders() -> None:
    markdown = pytest.importorskip("markdown")
    headings = [ISSUE_HEADING, "## Foo {: #first id=\"second\" .wide }", "## Bar { id='quoted' }",
                "## Data <dfn title=\"also known as: serialization\">conversion</dfn> { #data-conversion }"]
    text = "".join(f"{heading}\n\nText.\n\n" for heading in headings)
    html = markdown.markdown(text, extensions=["attr_list", "toc"])
    theirs = re.findall(r'<h2[^>]*\bid="([^"]+)"', html)
    page = parse_page(text, Dialect.mkdocs)
    assert [s.anchor for s in page.sections] == theirs == ["navigation-path", "second", "quoted", "data-conversion"]


# --- links that leave the corpus on purpose --------------------------------------------


def test_intersphinx_references_are_external_not_broken_pages(tmp_path: Path) -> None:
    page = (REAL / "pytest-docs/how-to/failures.rst").read_text(encoding="utf-8")
    write(tmp_path, {"how-to/failures.rst": page})
    check = links_of(tmp_path)
    assert not any("python:" in b.target for b in check.broken), check.broken
    assert check.external == 6  # :doc:`pdb <python:library/pdb>` six times, once in a title
    entry = parse_corpus(tmp_path)[0]
    # The title reads as Sphinx shows it, with Sphinx's id; the text keeps the link's words.
    using = "Using pdb with pytest"
    assert using in entry.page.headings
    assert "using-python-library-pdb-with-pytest" in entry.page.anchors
    assert "Python comes with a builtin Python debugger called pdb." in entry.doc.content
    assert "python:library/pdb.rst" not in entry.doc.content


def test_an_intersphinx_ref_and_a_local_name_with_a_colon(tmp_path: Path) -> None:
    write(tmp_path, {"index.rst": "Home\n====\n\n.. _std:setup:\n\nSetup\n-----\n\nText.\n\n"
                                  "See :ref:`pluggy documentation about hook wrappers <pluggy:hookwrappers>`,\n"
                                  ":ref:`kombu:connection-urls`, :ref:`std:setup` and :ref:`nowhere`.\n"})
    check = links_of(tmp_path)
    assert check.external == 2
    assert [b.target for b in check.broken] == [":ref:`nowhere`"]  # a local label still checked


def test_a_doc_reference_reaches_a_myst_markdown_page(tmp_path: Path) -> None:
    """pip's reStructuredText pages name its MyST Markdown topics (`topics/repeatable-installs.md`)
    by docname, as Sphinx does whatever a page's source; a Markdown link to a `.rst` file that is
    not there is still broken."""
    write(tmp_path, {
        "user_guide.rst": "User guide\n==========\n\nSee :doc:`topics/repeatable-installs` and "
                          ":doc:`the missing one <topics/missing>`.\n\n.. toctree::\n\n   topics/repeatable-installs\n",
        "topics/repeatable-installs.md": "# Repeatable installs\n\nPin versions.\n",
        "notes.md": "# Notes\n\n[installs](topics/repeatable-installs.rst)\n",
    })
    check = links_of(tmp_path)
    assert sorted(b.target for b in check.broken) == ["topics/missing.rst", "topics/repeatable-installs.rst"]
    assert {b.path.name for b in check.broken} == {"user_guide.rst", "notes.md"}


def test_site_search_links_are_external(tmp_path: Path) -> None:
    write(tmp_path, {"index.md": "# Home\n\nSearch [all social options](?q=social) or [the blog](blog/?q=tag:x).\n",
                     "setup.md": "# Setup\n\nSee [the index](index.md?utm=1#home) and [search](../?q=search).\n"})
    check = links_of(tmp_path)
    assert check.broken == () and check.external == 3


def test_site_addresses_outside_the_corpus_are_external(tmp_path: Path) -> None:
    """QuestDB's docs link to `/blog/…` and `/enterprise/` beside `/docs/…` pages: other parts of
    the site, not missing pages; a missing page under the base path, or under a folder the corpus
    has, is still broken."""
    write(tmp_path, {
        "concepts/jit.md": "# JIT\n\nSee [the post](/blog/2022/01/12/jit-sql-compiler/) and [Enterprise](/enterprise/).\n",
        "index.md": "# Home\n\n[JIT](/docs/concepts/jit) [gone](/docs/concepts/gone/) [moved](/concepts/moved)\n",
    })
    check = links_of(tmp_path)
    assert sorted(b.target for b in check.broken) == ["/concepts/moved", "/docs/concepts/gone/"]
    assert check.external == 2


def test_without_a_base_path_a_first_folder_the_corpus_lacks_is_another_part_of_the_site(tmp_path: Path) -> None:
    """Nushell's docs link to `/commands/docs/…`, pages its site generates from the program."""
    write(tmp_path, {"book/intro.md": "# Intro\n\nUse [ls](/commands/docs/ls.md) and [the rest](/book/missing.md).\n"})
    check = links_of(tmp_path)
    assert [b.target for b in check.broken] == ["/book/missing.md"] and check.external == 1


def test_links_into_ignored_files_are_excluded_not_broken() -> None:
    """MkDocs' docs with the included-only contributing page left out by `seeding.ignore`."""
    rules = CorpusRules(dialect="mkdocs", ignore=("about/contributing.md",))
    check = links_of(MKDOCS, rules)
    assert check.broken == ()
    assert check.excluded == 14  # 11 to its sections, 3 to the page
    assert not any(a.slug == "about/contributing" for a in check.unverifiable)


def test_a_link_into_an_excluded_changelog(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path, {"index.md": "# Home\n\nSee [the changelog](changelog/index.md#9-5-0) and [[Changelog]].\n",
                     "changelog/index.md": "# Changelog\n\n## 9.5.0\n\nThings.\n"})
    with caplog.at_level(logging.INFO, logger="service.ingest.seeder"):
        _, _, broken = prepare(tmp_path, chunk_document, SeedOptions(CorpusRules(ignore=("changelog/*",))))
    assert broken == []
    assert any("2 into files seeding.ignore leaves out" in r.getMessage() for r in caplog.records)


def test_a_link_written_as_the_pages_address(tmp_path: Path) -> None:
    """MkDocs serves `a/page.md` at `a/page/`: `../other/` and `./#x` are read from there too."""
    write(tmp_path, {"routing/overview.md": "# Overview\n\nSee [tls](../tls/#custom-domains) and [here](./#why).\n\n## Why\n\nx\n",
                     "routing/tls.md": "# TLS\n\n## Custom domains\n\nText.\n"})
    assert links_of(tmp_path, CorpusRules(dialect="mkdocs")).broken == ()


# --- anchors the site's build makes ---------------------------------------------------


def test_anchors_of_generated_pages_are_unverifiable_and_reported_once() -> None:
    check = links_of(MKDOCS, CorpusRules(dialect="mkdocs"))
    assert check.broken == ()
    reported = {(a.slug, a.anchor): a.links for a in check.unverifiable}
    assert reported == {
        ("user-guide/cli", "mkdocs-get-deps"): 1,  # a mkdocs-click directive writes the page
        ("about/contributing", "submitting-changes-to-the-builtin-themes"): 6,  # an include
        ("about/contributing", "installing-for-development"): 4,
        ("about/contributing", "submitting-pull-requests"): 1,
    }


def test_materials_option_anchors_are_unverifiable(tmp_path: Path) -> None:
    """Material's docs write an option's heading with a shortcode its build hook expands."""
    write(tmp_path, {
        "plugins/social.md": "# Built-in social plugin\n\n## Metadata\n\n#### <!-- md:setting meta.social.cards_layout -->\n\n"
                             "Use this property to change the layout.\n",
        "setup/social-cards.md": "# Social cards\n\nSee [cards_layout](../plugins/social.md#meta.social.cards_layout) "
                                 "and [it again](../plugins/social.md#meta.social.cards_layout).\n\n"
                                 "A [typo](../plugins/social.md#metdata) and [another](#nowhere).\n",
    })
    check = links_of(tmp_path, CorpusRules(dialect="mkdocs"))
    # Once per anchor however many links; a misspelt one cannot be told apart on such a page,
    # while a page without generated text is still checked.
    assert [(a.slug, a.anchor, a.links) for a in check.unverifiable] == [
        ("plugins/social", "meta.social.cards_layout", 2), ("plugins/social", "metdata", 1)]
    assert [b.target for b in check.broken] == ["#nowhere"]


# --- Material's content tabs and spacer entities ---------------------------------------


def test_a_content_tab_reads_as_its_label_over_its_text() -> None:
    """Starlette's middleware page shows a "✅ Do" and a "❌ Don't" tab (pymdownx.tabbed), each an
    indented fenced block: read as CommonMark, the indentation made the fence literal text of an
    indented code block. Each tab is now its label over its dedented text, as `!!! note` is."""
    page = parse_page((TESTS / "corpora" / "starlette-docs" / "middleware.md").read_text(encoding="utf-8"),
                      Dialect.mkdocs)
    assert "✅ Do:\n\n```python\nfrom starlette.datastructures import Headers" in page.body
    assert "❌ Don't:" in page.body and '=== "' not in page.body
    document = Document(slug="middleware", category="general", title="Middleware", content=page.body,
                        keywords=(), summary="", content_hash="h")
    assert not any('=== "' in c.content for c in chunk_document(document))


def test_a_spacer_entity_alone_is_no_chunk(tmp_path: Path) -> None:
    """Redux's API pages open with `&nbsp;` above their title (Docusaurus' `hide_title`): that
    paragraph was a chunk of its own whose text was "&nbsp;"."""
    root = write(tmp_path, {"api/compose.md": "---\nid: compose\nhide_title: true\n---\n\n&nbsp;\n\n"
                            "# `compose(...functions)`\n\n## Overview\n\nComposes functions from right to left.\n"})
    _, chunks, _ = prepare(root, chunk_document, SeedOptions())
    assert [c.content for c in chunks if "nbsp" in c.content] == []
    assert any("Composes functions" in c.content for c in chunks)


def test_an_admonition_with_class_words_or_quotes_in_its_title_reads_as_one() -> None:
    """Traefik writes `!!! note Referencing a certificate resolver` (python-markdown shows "Note":
    the other words are classes) and Pydantic `!!! note "on the "jsonable" nature of JSON schema"`:
    both were left as text, their indented bodies read as code."""
    page = parse_page("Intro.\n\n!!! note Referencing a certificate resolver\n    Defining a resolver is not enough.\n\n"
                      '!!! note "on the "jsonable" nature of JSON schema"\n    Regarding JSON.\n', Dialect.mkdocs)
    assert "Note:\nDefining a resolver is not enough." in page.body
    assert 'Note: on the "jsonable" nature of JSON schema\nRegarding JSON.' in page.body
    assert "!!!" not in page.body and "    " not in page.body


@pytest.mark.parametrize("dialect", [Dialect.markdown, Dialect.vitepress])
def test_the_table_of_contents_marker_is_no_link_and_no_text(dialect: Dialect) -> None:
    """Nushell's book (VuePress) writes `[[toc]]` where the site renders the page's table of
    contents; it was read as a wikilink to a page called "toc" (a broken link, and the word "toc"
    in the page's text). Its folder has no `.vitepress/`, so it is read as plain Markdown."""
    page = parse_page((REAL / "nushell-docs" / "configuration.md").read_text(encoding="utf-8"), dialect)
    assert [link.target for link in page.links if "toc" in link.target.lower()] == []
    assert "toc" not in page.body.lower().split()
    assert "[[toc]]" not in page.body
    assert "Configuration Overview" in page.headings  # the rest of the page is read as before
    assert "More details are below when you need them" in page.body


def test_a_wikilink_to_a_page_called_toc_inside_a_sentence_stays_a_link() -> None:
    page = parse_page("# Notes\n\nSee [[toc]] for the list.\n")
    assert [link.target for link in page.links] == ["toc"]


def test_an_escaped_angle_bracket_in_a_heading_is_text_of_its_anchor(tmp_path: Path) -> None:
    """Jest's configuration page heads its options `` `testMatch` \\[array&lt;string&gt;] ``; the
    site shows "testMatch [array<string>]" and its anchor keeps the word (`#testmatch-arraystring`,
    which its pages link to). `&lt;string&gt;` is text, not a tag: only a tag written as one is
    dropped (`<small>`, above)."""
    write(tmp_path, {
        "Configuration.md": "---\nid: configuration\ntitle: Configuring Jest\n---\n\n"
                            "### `testMatch` \\[array&lt;string&gt;]\n\nGlobs.\n\n"
                            "### `projects` \\[array&lt;string | ProjectConfig&gt;]\n\nMany.\n",
        "TestRegex.md": "# testRegex\n\nSee also [`testMatch` [array&lt;string&gt;]](Configuration.md#testmatch-arraystring)"
                        " and [projects](Configuration.md#projects-arraystring--projectconfig).\n",
        # CLI.md's form: the page's address (`id: configuration`), not its file's name
        "CLI.md": "---\nid: cli\ntitle: Jest CLI Options\n---\n\nThe CLI form of [`projects`]"
                  "(configuration#projects-arraystring--projectconfig).\n",
    })
    entry = next(e for e in parse_corpus(tmp_path) if e.path.name == "Configuration.md")
    assert {"testmatch-arraystring", "projects-arraystring--projectconfig"} <= entry.page.anchors
    assert links_of(tmp_path).broken == ()


# --- Docusaurus reads a link to a file from the docs root too ------------------------------

DOCUSAURUS_TREE = {
    # Redux's glossary, in `understanding/thinking-in-redux/`, links `api/Store.md#getState`: Docusaurus
    # finds the file from the linking page's folder, else from the docs root.
    "understanding/thinking-in-redux/Glossary.mdx": "---\nid: glossary\n---\n\n# Glossary\n\n"
                                                   "Call [getState](api/Store.md#getState) and [Reducers](../Reducers.md).\n",
    "understanding/Reducers.md": "---\nid: reducers\n---\n\n# Reducers\n\nPure functions.\n",
    "api/Store.md": "---\nid: store\n---\n\n# Store\n\n### getState()\n\nThe current state.\n",
}


def test_a_docusaurus_link_to_a_file_is_read_from_the_docs_root_too(tmp_path: Path) -> None:
    root = write(tmp_path, DOCUSAURUS_TREE)
    # MDX pages with Docusaurus' front matter (`id`) are a Docusaurus tree, not another MDX site.
    assert detect_dialect(root, seed_files(root, quiet=True)) == Dialect.docusaurus
    _, _, broken = prepare(root, chunk_document, SeedOptions())
    assert broken == []
    # The same tree as MkDocs builds it: the glossary's folder has no `api/`, a broken link.
    _, _, broken = prepare(root, chunk_document, SeedOptions(CorpusRules(dialect="mkdocs")))
    assert len(broken) == 1 and "api/Store.md#getState" in broken[0]


def test_mdx_pages_without_docusaurus_front_matter_stay_mdx(tmp_path: Path) -> None:
    tree = {path: re.sub(r"\A---\nid: \w+\n---\n\n", "", text) for path, text in DOCUSAURUS_TREE.items()}
    root = write(tmp_path, tree)
    assert detect_dialect(root, seed_files(root, quiet=True)) == Dialect.mdx
    _, _, broken = prepare(root, chunk_document, SeedOptions())
    assert len(broken) == 1 and "api/Store.md#getState" in broken[0]
