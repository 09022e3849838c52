"""Late interaction (lab/relevance/late_interaction.py), the untrained lever measured beside the
relevance model: it must score the section that answers above one about something else."""

from __future__ import annotations

import pytest

from lab.relevance.late_interaction import LateInteraction, whole_section
from service.domain.types import Chunk


@pytest.fixture(scope="module")
def late() -> LateInteraction:
    return LateInteraction(threads=1)


def test_the_section_that_answers_scores_higher(late: LateInteraction) -> None:
    sections = [
        "Caching > Cache directory\nPrettier keeps its cache in node_modules/.cache/prettier; "
        "run with --cache to skip files that did not change since the last run.",
        "Editors > Vim\nInstall the plugin and format the buffer on save with an autocommand.",
    ]
    answers, other = late.score("make repeated runs faster by skipping unchanged files", sections)
    assert answers > other


def test_a_score_per_section_and_none_for_an_empty_question(late: LateInteraction) -> None:
    assert len(late.score("where is the cache", ["a", "b", "c"])) == 3
    assert late.score("", ["a section"]) == [0.0]


def test_a_section_is_read_whole_under_its_heading_path() -> None:
    chunk = Chunk(doc_slug="cli", chunk_index=2, title="CLI", header_path="CLI > --cache",
                  content="Only format changed files.\n\n```sh\nprettier --cache .\n```", category="",
                  keywords=(), chunk_hash="h", token_count=20)
    assert whole_section(chunk) == "CLI > --cache\nOnly format changed files.\n\n```sh\nprettier --cache .\n```"
