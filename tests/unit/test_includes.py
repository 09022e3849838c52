"""A page reads what it includes from the corpus (service/ingest/includes.py): what the site shows
inside the page is searched there, and the labels it brings are the page's."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from service.ingest.links import check_links
from service.ingest.markdown import CorpusRules, ignored_files, parse_corpus

CELERY = Path(__file__).resolve().parents[1] / "fixtures" / "real-pages" / "celery-docs"


def write(root: Path, pages: dict[str, str]) -> Path:
    for relative, text in pages.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def by_slug(root: Path, rules: CorpusRules | None = None) -> dict[str, str]:
    return {entry.doc.slug: entry.doc.content for entry in parse_corpus(root, rules or CorpusRules())}


def test_celerys_introduction_reads_its_installation_text_and_its_label_resolves(tmp_path: Path) -> None:
    """Celery's "Introduction to Celery" ends in `.. include:: ../includes/installation.txt`: the
    page shows the installation and its bundles, and `:ref:`bundles`` from another page reaches
    them (it was a broken link, and the words were in no page)."""
    shutil.copytree(CELERY / "getting-started", tmp_path / "getting-started")
    shutil.copytree(CELERY / "includes", tmp_path / "includes")
    write(tmp_path, {"faq.rst": "FAQ\n===\n\nWhich extras exist? See :ref:`bundles`.\n"})
    pages = parse_corpus(tmp_path)
    content = {entry.doc.slug: entry.doc.content for entry in pages}
    assert sorted(content) == ["faq", "getting-started/introduction"]  # the .txt is no page of its own
    introduction = content["getting-started/introduction"]
    assert "## Bundles" in introduction and 'pip install "celery[librabbitmq]"' in introduction
    intro_page = next(e.page for e in pages if e.doc.slug == "getting-started/introduction")
    assert "Bundles" in {section.path[-1] for section in intro_page.sections}
    assert "bundles" in intro_page.anchors  # the label the included file carries
    broken = check_links(pages, tmp_path, []).broken  # the introduction's links to the pages not copied here
    assert [b.target for b in broken if b.path.name == "faq.rst"] == []
    faq = next(e for e in pages if e.doc.slug == "faq")
    assert "[Bundles](getting-started/introduction.rst#" in faq.doc.content


def test_a_file_outside_the_corpus_or_a_page_of_it_is_not_read_in(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """`../../AUTHORS.rst` leaves SEEDS_DIR (not followed); restic's references page includes
    pages that are pages already (their text stays on them, once)."""
    (tmp_path / "SECRET.rst").write_text("Secret\n======\n\nDo not read.\n", encoding="utf-8")
    root = write(tmp_path / "docs", {
        "authors.rst": "Authors\n=======\n\n.. include:: ../SECRET.rst\n",
        "references.rst": "References\n==========\n\n.. include:: design.rst\n",
        "design.rst": "Design\n======\n\nThe repository layout.\n",
    })
    with caplog.at_level(logging.INFO, logger="service.ingest.markdown"):
        content = by_slug(root)
    assert "Do not read" not in content["authors"]
    assert "repository layout" not in content["references"] and "repository layout" in content["design"]
    said = caplog.text
    assert "0 include(s) read in place, 2 left as written" in said
    assert "outside SEEDS_DIR" in said and "a page of the corpus itself" in said


def test_options_indentation_cycles_and_literal_includes(tmp_path: Path) -> None:
    root = write(tmp_path, {
        "guide.rst": (
            "Guide\n=====\n\n.. note::\n\n   .. include:: parts/tip.txt\n      :start-after: .. start\n"
            "      :end-before: .. end\n\nThe example:\n\n.. include:: parts/example.inc\n   :literal:\n\n"
            ".. include:: parts/loop.txt\n"
        ),
        "parts/tip.txt": "Not this.\n\n.. start\n\nRestart the worker after a deploy.\n\n.. end\n\nNor this.\n",
        "parts/example.inc": "celery -A proj worker\n",
        "parts/loop.txt": "Looping text.\n\n.. include:: loop.txt\n",
    })
    guide = by_slug(root)["guide"]
    assert "Note: Restart the worker after a deploy." in guide.replace("> ", "")
    assert "Not this" not in guide and "Nor this" not in guide
    assert "celery -A proj worker" in guide  # a literal block
    assert guide.count("Looping text.") == 1  # the file is not read into itself again


def test_mkdocs_snippets_and_vitepress_includes(tmp_path: Path) -> None:
    """MkDocs' snippets are found from the folder above the docs (`docs/…` paths); VitePress'
    `<!--@include: -->` from the page, with its line range; a file `seeding.ignore` leaves out is no
    page, so a page that includes it shows it."""
    root = write(tmp_path, {
        "concepts/preview.md": "# Preview\n\nFeatures in preview:\n\n--8<-- \"docs/reference/.preview-features.md\"\n",
        "reference/.preview-features.md": "- `python-upgrade`: upgrade Python versions in place\n",
        "guide/cli.md": "# CLI\n\n<!--@include: ./parts/options.md{4,}-->\n\n"
                        "Write it so:\n\n```md\n<!--@include: ./parts/options.md-->\n```\n",
        "guide/parts/options.md": "# Generated\n\nskip me\n### `--watch`\n\nRerun tests when files change.\n",
        "other.md": "# Other\n\nA page.\n",
    })
    content = by_slug(root, CorpusRules(ignore=("guide/parts/*",)))
    assert "python-upgrade" in content["concepts/preview"]
    assert "Rerun tests when files change" in content["guide/cli"]
    assert "skip me" not in content["guide/cli"] and "Generated" not in content["guide/cli"]
    assert content["guide/cli"].count("Rerun tests") == 1  # the include shown in a code block stays code
    assert "guide/parts/options" not in content
    assert ignored_files(root, CorpusRules(ignore=("guide/parts/*",)))


def test_hostile_includes_are_left_as_written_with_their_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """An include is a file the page names, so it gets the checks a page gets: a symlink that
    leads out of SEEDS_DIR, a binary file and a link loop are not read, and the page still seeds."""
    outside = tmp_path / "outside.txt"
    outside.write_text("Outside text.\n", encoding="utf-8")
    root = write(tmp_path / "docs", {
        "page.rst": "Page\n====\n\n.. include:: parts/out.txt\n\n.. include:: parts/binary.txt\n\n"
                    ".. include:: parts/loop.txt\n\nOwn text.\n",
    })
    (root / "parts").mkdir()
    (root / "parts" / "out.txt").symlink_to(outside)
    (root / "parts" / "binary.txt").write_bytes(b"\x00\x01binary")
    (root / "parts" / "loop.txt").symlink_to(root / "parts" / "loop.txt")
    with caplog.at_level(logging.INFO, logger="service.ingest.markdown"):
        content = by_slug(root)
    assert "Own text." in content["page"] and "Outside text" not in content["page"]
    said = caplog.text
    assert "0 include(s) read in place, 3 left as written" in said
    assert "outside SEEDS_DIR" in said and "a binary file" in said


def test_an_include_left_as_written_is_no_text_of_the_page(tmp_path: Path) -> None:
    """Typer's and FastAPI's pages show their examples with `{* docs_src/… *}` (files outside the
    docs), MkDocs' contributing page is `--8<-- "CONTRIBUTING.md"`: the site shows the file, never
    the line, so neither the path's words nor the syntax are searched or quoted."""
    root = write(tmp_path, {
        "tutorial/options/help.md": "# CLI Options with Help\n\nLet's now do the same for *CLI options*:\n\n"
                                    "{* docs_src/options/help/tutorial001_an_py310.py hl[11:12] *}\n\n"
                                    "The same way as with `typer.Argument()`.\n",
        "contributing.md": "--8<-- \"CONTRIBUTING.md\"\n",
    })
    content = by_slug(root, CorpusRules(dialect="mkdocs"))
    help_page = content["tutorial/options/help"]
    assert "docs_src" not in help_page and "{*" not in help_page
    assert "Let's now do the same" in help_page and "typer.Argument()" in help_page
    assert "8<" not in content["contributing"]
