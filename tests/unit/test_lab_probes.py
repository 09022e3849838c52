"""Label-free probes (lab/experiments/probes.py): the sentence kind gives nothing away."""

from __future__ import annotations

from lab.experiments.corpus_adaptation import spearman
from lab.experiments.probes import first_sentence, sentence_probes
from service.domain.types import Chunk


def _chunk(slug: str, path: str, content: str, index: int = 0) -> Chunk:
    return Chunk(doc_slug=slug, category="", title=path.split(" > ")[0], header_path=path, chunk_index=index,
                 content=content, keywords=(), chunk_hash=f"{slug}{index}", token_count=0)


def test_sentence_probe_drops_the_heading_paths_words() -> None:
    chunks = [
        _chunk("deploy", "Deploying > Cache headers",
               "Set the cache headers so that browsers keep static assets for a whole year. More text."),
        _chunk("deploy", "Deploying > Cache headers", "A second chunk of the same section is not read.", 1),
    ]
    [probe] = sentence_probes(chunks)
    assert probe.page == "deploy"
    assert probe.query == "Set the so that browsers keep static assets for a whole year"


def test_first_sentence_skips_outliner_properties_and_reads_link_text() -> None:
    assert first_sentence("type:: Platform\ndescription:: a graph") == ""
    assert first_sentence("See [the guide](/g.md) for more. Then go on.") == "See the guide for more."


def test_spearman_ranks_ties_alike() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert round(spearman([1, 1, 2], [1, 2, 3]), 3) == 0.866
