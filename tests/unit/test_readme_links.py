"""The README's links into docs/ reach a page and, with a fragment, one of its headings.

`mkdocs build --strict` (scripts/test.sh) checks the links between the site's pages; the
README is outside the site, so its links are checked here, with the heading ids MkDocs
gives (Python-Markdown's toc `slugify`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.M)


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {slugify(re.sub(r"[`*]", "", title), "-") for title in _HEADING.findall(text)}


def _local_links(text: str) -> list[str]:
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_the_readme_links_into_the_docs() -> None:
    assert any(link.startswith("docs/") for link in _local_links(README.read_text(encoding="utf-8")))


@pytest.mark.parametrize("link", _local_links(README.read_text(encoding="utf-8")))
def test_a_readme_link_reaches_its_page_and_heading(link: str) -> None:
    path, _, fragment = link.partition("#")
    target = ROOT / path
    assert target.is_file(), f"README links to {path}, which does not exist"
    if fragment:
        assert fragment in _anchors(target), f"README links to {link}: {path} has no heading #{fragment}"


def test_a_missing_heading_is_caught() -> None:
    assert "operating-points-which-wins" in _anchors(ROOT / "docs" / "configuration.md")
    assert "no-such-heading" not in _anchors(ROOT / "docs" / "configuration.md")
