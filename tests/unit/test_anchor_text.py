"""The anchor-text ceiling (lab/experiments/anchor_text.py): which words reach a page by links."""

from __future__ import annotations

from pathlib import Path

from lab.experiments.anchor_text import content_words, inbound_texts
from service.ingest.linked_names import markdown_links
from service.ingest.links import CorpusLinks
from service.ingest.markdown import CorpusRules, parse_corpus


def test_every_link_outside_code_and_off_site_counts_with_its_text() -> None:
    markdown = ("Read [keep a snapshot forever](forget.md#keep) or [the FAQ](https://restic.net/faq).\n\n"
                "```md\n[not a link](backup.md)\n```\n")
    assert markdown_links(markdown) == [("keep a snapshot forever", "forget.md#keep")]


def test_a_page_is_reached_by_the_texts_of_other_pages_links_only(tmp_path: Path) -> None:
    (tmp_path / "forget.md").write_text("# Forget\n\nRemove snapshots. See [this page](forget.md).\n")
    (tmp_path / "backup.md").write_text("# Backup\n\nOld ones: [throw away old snapshots](forget.md).\n"
                                        "Missing: [gone](nowhere.md).\n")
    corpus = parse_corpus(tmp_path, CorpusRules())
    found = inbound_texts(corpus, CorpusLinks(corpus, tmp_path))
    assert dict(found) == {"forget": ["throw away old snapshots"]}


def test_content_words_drop_the_services_stopwords() -> None:
    assert content_words("How do I throw away the old snapshots?") == {"throw", "away", "old", "snapshots"}
