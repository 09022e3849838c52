"""reStructuredText (Sphinx) pages read as Sphinx renders them (issue 33, item 3):
the vendored Requests documentation (tests/corpora/requests-docs) seeds exactly its
expected pages with only the documented broken links, and representative pages keep
their code, sections, anchors, admonitions and cross-references."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import pytest

from service.domain.types import Chunk, Document
from service.ingest.chunker import chunk_document
from service.ingest.links import check_links
from service.ingest.markdown import CorpusPage, SeedError, parse_corpus
from service.ingest.parse import Section, parse_page, remember
from service.ingest.rst import parse_rst_page, rst_slug
from service.ingest.seeder import SeedOptions, prepare

CORPORA = Path(__file__).resolve().parents[1] / "corpora"
REQUESTS = CORPORA / "requests-docs"
EXPECTED = CORPORA / "requests-docs.expected-pages.txt"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations" / "dialects-rst.md"
_BROKEN_ROW = re.compile(r"^\|\s*`(?P<file>[^`]+)`\s*\|\s*(?P<line>\d+)\s*\|\s*``\s(?P<target>.+?)\s``\s*\|(?P<reason>[^|]*)\|\s*$")


@pytest.fixture(scope="module")
def corpus() -> dict[str, CorpusPage]:
    return {entry.doc.slug: entry for entry in parse_corpus(REQUESTS)}


@pytest.fixture(scope="module")
def seed() -> tuple[list[Document], list[Chunk], list[str]]:
    return prepare(REQUESTS, chunk_document, SeedOptions())


def section(entry: CorpusPage, title: str) -> Section:
    found = [s for s in entry.page.sections if s.path[-1] == title]
    assert len(found) == 1, [s.path for s in entry.page.sections]
    return found[0]


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- the vendored corpus ------------------------------------------------------------


def test_requests_docs_seed_exactly_the_expected_pages(seed: tuple[list[Document], list[Chunk], list[str]]) -> None:
    documents, chunks, _ = seed  # prepare raises SeedError if any file is rejected
    expected = [line.strip() for line in EXPECTED.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    assert sorted(d.slug for d in documents) == sorted(expected)
    assert (REQUESTS / "LICENSE").is_file() and (REQUESTS / "SOURCE.md").is_file()
    # Every page with text has chunks; the include-only page has none.
    chunked = {c.doc_slug for c in chunks}
    assert chunked == set(expected) - {"dev/authors"}


def test_broken_links_are_exactly_the_documented_ones(
    corpus: dict[str, CorpusPage], seed: tuple[list[Document], list[Chunk], list[str]]
) -> None:
    rows = [m for line in DOCS.read_text(encoding="utf-8").splitlines() if (m := _BROKEN_ROW.match(line))]
    assert rows, f"no broken-link table in {DOCS}"
    assert all(m.group("reason").strip() for m in rows), "every listed link needs its reason"
    documented = sorted((m.group("file"), int(m.group("line")), m.group("target")) for m in rows)
    broken = check_links(list(corpus.values()), REQUESTS).broken
    assert sorted((b.path.relative_to(REQUESTS).as_posix(), b.line, b.target) for b in broken) == documented
    assert len(seed[2]) == len(documented)  # the seed report lists the same warnings


def test_a_literal_block_is_kept_as_code(corpus: dict[str, CorpusPage]) -> None:
    blocks = section(corpus["user/quickstart"], "Make a Request").blocks
    code = [b.text for b in blocks if b.kind == "code"]
    assert code[0] == "```\n>>> import requests\n```"
    assert "```\n>>> r = requests.get('https://api.github.com/events')\n```" in code
    # The paragraph that introduced it with `::` ends in one colon, as Sphinx shows it.
    assert "Begin by importing the Requests module:" in [b.text for b in blocks]


def test_sections_carry_sphinx_anchors(corpus: dict[str, CorpusPage]) -> None:
    quickstart = corpus["user/quickstart"]
    assert quickstart.doc.title == "Quickstart"
    assert section(quickstart, "Passing Parameters In URLs").anchor == "passing-parameters-in-urls"
    assert section(quickstart, "Passing Parameters In URLs").path == ("Quickstart", "Passing Parameters In URLs")
    # A title whose id a same-named label took gets docutils' `id1`…; the label stays an anchor.
    assert section(quickstart, "Quickstart").anchor == "id1"
    assert section(quickstart, "Custom Headers").anchor == "id2"
    assert {"quickstart", "custom-headers", "id1", "id2"} <= quickstart.page.anchors
    assert section(corpus["api"], "Migrating to 1.x").anchor == "migrating-to-1-x"
    # Chunks open at the same anchor, under the page title.
    chunks = chunk_document(quickstart.doc)
    make = [c for c in chunks if c.header_path == "Quickstart > Make a Request"]
    assert make and {c.anchor for c in make} == {"make-a-request"}


def test_admonitions_keep_their_title_and_text(corpus: dict[str, CorpusPage]) -> None:
    texts = [b.text for s in corpus["user/quickstart"].page.sections for b in s.blocks]
    note = next(t for t in texts if t.startswith("> Note: An important note"))
    assert "`Response.iter_content` versus `Response.raw`." in note
    warning = next(t for t in texts if t.startswith("> Warning: It is strongly recommended"))
    assert "open files in binary mode." in warning.replace("\n> ", " ")
    titled = [b.text for b in section(corpus["user/advanced"], "Session Objects").blocks
              if b.text.startswith("> Remove a Value From a Dict Parameter: ")]
    assert titled and "set that key's value to `None`" in titled[0]
    versioned = [b.text for s in corpus["community/release-process"].page.sections for b in s.blocks]
    assert "Added in version v2.6.2." in versioned
    assert "Warning" in corpus["user/advanced"].page.plain  # admonition titles are words of the page


def test_ref_resolves_to_the_labelled_section(corpus: dict[str, CorpusPage]) -> None:
    faq = corpus["community/faq"]
    headers = section(corpus["user/quickstart"], "Custom Headers").anchor
    target = f"../user/quickstart.rst#{headers}"
    assert target in [link.target for link in faq.page.links]
    assert f"[documentation about headers]({target})" in faq.doc.content
    # Without an explicit title, the labelled section's title is the link text.
    advanced = corpus["user/advanced"]
    streaming = section(advanced, "Streaming Requests").anchor
    assert f"[Streaming Requests](#{streaming})" in advanced.doc.content
    contributing = corpus["dev/contributing"].doc.content
    assert f"[Bug Reports](#{section(corpus['dev/contributing'], 'Bug Reports').anchor})" in contributing
    # A label before a skipped autodoc directive stays where it is, as in Sphinx.
    assert "[Session API Docs](../api.rst#sessionapi)" in advanced.doc.content


def test_toctree_and_autodoc_do_not_fail_the_page(corpus: dict[str, CorpusPage]) -> None:
    api = corpus["api"]
    assert api.doc.title == "Developer Interface"
    assert "All of Requests' functionality can be accessed by these 7 methods." in api.doc.content
    assert "autoclass" not in api.doc.content and "autofunction" not in api.doc.content
    assert {"exceptions", "request-sessions", "cookies"} <= api.page.anchors  # headings of skipped content
    index = corpus["index"]
    toc = {link.target for link in index.page.links if not link.target.startswith("user/install.rst#")}
    assert toc == {f"{slug}.rst" for slug in corpus if slug != "index"}
    assert "toctree" not in index.doc.content and "maxdepth" not in index.doc.content
    authors = corpus["dev/authors"]  # only an include of a file outside the tree
    assert authors.doc.title == "Authors" and "AUTHORS" not in authors.doc.content


def test_pages_with_nothing_of_their_own_are_stubs(corpus: dict[str, CorpusPage]) -> None:
    stubs = {slug for slug, entry in corpus.items() if entry.doc.stub}
    # Only an include (authors), a link list (out-there), two sentences and an include (updates).
    assert stubs == {"dev/authors", "community/out-there", "community/updates"}


def test_the_body_read_again_as_markdown_keeps_sections_and_anchors(corpus: dict[str, CorpusPage]) -> None:
    """The chunker reads a page's parse back by its body; should its cache have let the page
    go, the body parsed as Markdown gives the same sections at the same anchors."""
    for slug, entry in corpus.items():
        try:
            again = parse_page(entry.page.body)
        finally:
            remember(entry.page)  # the reST parse stays the one the chunker finds
        mine = [(s.path, s.anchor) for s in entry.page.sections if s.blocks]
        assert [(s.path, s.anchor) for s in again.sections] == mine, slug


# --- small pages ----------------------------------------------------------------------


def test_sphinx_only_directives_never_fail_read_files_or_write_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LINE", encoding="utf-8")
    text = f"""
Page
====

.. toctree::
   :maxdepth: 2
   :glob:

   other/*

.. autoclass:: pkg.Thing
   :members:

.. literalinclude:: {secret}
.. include:: {secret}
.. raw:: html
   :file: {secret}

.. unknown-directive:: argument

   Hidden body.

Text with :unknown-role:`x`, |undefined| and :class:`~pkg.mod.Thing` and :meth:`pkg.Thing.run`.

.. code-block:: python
   :linenos:

   def run():
       return 1

.. versionchanged:: 2.0
   Now faster.

.. deprecated:: 3.1

.. seealso:: The other page.

.. only:: html

   Only in HTML.

.. py:function:: fetch(url, timeout=None)

   Fetch a URL.

.. glossary::

   session
      An object that keeps settings across requests.
"""
    page = parse_rst_page(text, docname="page")
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert "TOP-SECRET-LINE" not in page.body
    blocks = [b.text for s in page.sections for b in s.blocks]
    assert "```python\ndef run():\n    return 1\n```" in blocks
    assert "Changed in version 2.0: Now faster." in blocks
    assert "Deprecated since version 3.1." in blocks
    assert "> See also: The other page." in blocks
    assert "Only in HTML." in blocks
    assert "`fetch(url, timeout=None)`" in blocks and "Fetch a URL." in blocks
    assert any(b.startswith("- **session**: An object that keeps settings") for b in blocks)
    assert "Text with x, and `Thing` and `pkg.Thing.run()`." in blocks  # an unknown role keeps its text
    assert "Hidden body" not in page.body and "undefined" not in page.body


def test_doc_role_and_slugs(tmp_path: Path) -> None:
    write(tmp_path, "index.rst", "Home\n====\n\nSee :doc:`guide/setup` and :doc:`Start </guide/index>`.\n")
    write(tmp_path, "guide/index.rst", "Guide\n=====\n\nRead :doc:`setup` then :doc:`missing`.\n")
    write(tmp_path, "guide/setup.rst", "Set Up\n======\n\nBack to :doc:`../index`.\n")
    documents, _, broken = prepare(tmp_path, chunk_document, SeedOptions())
    by_slug = {d.slug: d for d in documents}
    assert set(by_slug) == {"index", "guide", "guide/setup"}
    assert "[Set Up](guide/setup.rst)" in by_slug["index"].content
    assert "[Start](guide/index.rst)" in by_slug["index"].content
    assert "[Set Up](setup.rst)" in by_slug["guide"].content
    assert "[Home](../index.rst)" in by_slug["guide/setup"].content
    assert len(broken) == 1 and "guide/index.rst:4: broken link 'missing.rst': no such page" in broken[0]
    assert rst_slug(PurePosixPath("Sub Dir/My Page.rst")) == "sub-dir/my-page"
    assert rst_slug(PurePosixPath("index.rst")) == "index"


def test_an_unreadable_page_is_rejected_with_its_reason(tmp_path: Path) -> None:
    write(tmp_path, "ok.rst", "Fine\n====\n\nText.\n")
    write(tmp_path, "long.rst", "Long\n====\n\n" + "word " * 25_000 + "\n")
    with pytest.raises(SeedError) as info:
        parse_corpus(tmp_path)
    assert [e.path.name for e in info.value.errors] == ["long.rst"]
    assert "a line longer than 100,000 characters" in str(info.value)


def test_an_include_only_page_seeds_as_a_stub_named_by_its_file(tmp_path: Path) -> None:
    """pytest's, celery's and sphinx's docs each hold a page that is only
    `.. include:: ../../CONTRIBUTING.rst` (a file outside the docs): the corpus seeds, the page is
    a stub named by its file that links to it still reach, and the other pages are all there."""
    write(tmp_path, "index.rst", "Home\n====\n\nSee :doc:`contributing` and :doc:`guide`.\n")
    write(tmp_path, "guide.rst", "Guide\n=====\n\nRun the tests with tox.\n")
    write(tmp_path, "contributing.rst", ".. _contributing:\n\n.. include:: ../../CONTRIBUTING.rst\n")
    write(tmp_path, "empty.rst", "")
    documents, _, broken = prepare(tmp_path, chunk_document, SeedOptions())
    by_slug = {d.slug: d for d in documents}
    assert sorted(by_slug) == ["contributing", "empty", "guide", "index"]
    assert by_slug["contributing"].stub and by_slug["contributing"].title == "contributing"
    assert by_slug["empty"].stub and not by_slug["guide"].stub
    assert broken == []
    textless = [entry.doc.slug for entry in parse_corpus(tmp_path) if entry.textless]
    assert textless == ["contributing", "empty"]


def test_a_page_docutils_cannot_read_in_its_budget_is_refused_and_the_next_page_reads() -> None:
    """docutils' parser is superlinear on some inputs: the page's parse runs in a worker process
    that is replaced when it overruns, and the page gets a reason naming the budget."""
    from service.ingest.rst import _READER, RstError

    slow = "Title\n=====\n\n" + "`a < " * 8000 + "\n"  # took over a minute before the budget
    with pytest.raises(RstError, match=r"not read within 0\.05 s"):
        _READER.read(slow, "slow", budget=0.05)
    draft = _READER.read("Title\n=====\n\nA paragraph.\n", "fine", budget=30.0)
    assert draft.title == "Title" and "A paragraph." in draft.page.body
