"""Variants of a word find the same pages (issue 40 item 5), with no database.

"deployment" answered nothing where "deploying" answered: a user who types one form of a word
must get what the other form gets. Here the issue's pairs run alone through the service's own
`Pipeline.run` at phases 1 and 2, in memory, on corpora that have both forms (the seed corpus
has neither pair): Vite's docs ("deployment" 5 pages, "deploying" 2) and Requests' ("upload",
"uploads"). The measurement over all twelve corpora is lab/experiments/word_variants.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.evaluation.kinds import memory_pipeline, read_corpus
from lab.experiments.word_variants import joined_pairs, reader_bases, sample, unjoined_pairs
from service.evaluation.decisions import policy_flags
from service.flags import Flags
from service.pipeline import Pipeline, RetrieveParams

CORPORA = Path(__file__).resolve().parents[2] / "tests" / "corpora"
_pipelines: dict[str, Pipeline] = {}


def _pipeline(corpus: str) -> Pipeline:
    if corpus not in _pipelines:
        folder, flags = CORPORA / corpus, Flags()
        _pipelines[corpus] = memory_pipeline(folder, flags, *read_corpus(folder, flags))
    return _pipelines[corpus]


async def _run(corpus: str, query: str, phase: int) -> tuple[str, tuple[str, ...]]:
    outcome = await _pipeline(corpus).run(
        RetrieveParams(query=query, phase_cap=phase, top_k=5), policy_flags(Flags(), "calibrated"), observe=False)
    assert outcome.signals is not None
    return outcome.status, tuple(outcome.signals.ranking)


@pytest.mark.parametrize("phase", [1, 2])
@pytest.mark.parametrize(("corpus", "forms", "first"), [
    ("vite-docs", ("deployment", "deploying", "deploy"), "guide/static-deploy"),
    ("requests-docs", ("upload", "uploads"), None),
])
async def test_forms_of_a_word_find_the_same_pages(
    corpus: str, forms: tuple[str, ...], first: str | None, phase: int
) -> None:
    """Each form alone: the same first page, the same three first pages, the same decision."""
    runs = {form: await _run(corpus, form, phase) for form in forms}
    statuses = {status for status, _ in runs.values()}
    firsts = {ranking[0] for _, ranking in runs.values() if ranking}
    tops = {frozenset(ranking[:3]) for _, ranking in runs.values()}
    assert all(ranking for _, ranking in runs.values()), runs
    assert len(firsts) == 1 and len(tops) == 1 and len(statuses) == 1, runs
    if first is not None:
        assert firsts == {first}, runs


WORDS = ["deploy", "deployment", "deploying", "upload", "uploads", "create", "creation", "build", "built",
         "config", "configuration", "configure", "colour", "color", "apply", "application", "option"]


def test_pairs_the_stemmer_joins() -> None:
    pairs = joined_pairs(WORDS)
    assert {("deploy", "deployment"), ("deploy", "deploying"), ("deploying", "deployment"),
            ("upload", "uploads"), ("configuration", "configure")} <= set(pairs)
    assert ("create", "creation") not in pairs and ("build", "built") not in pairs
    assert pairs == sorted(pairs)


def test_pairs_a_reader_joins_and_the_stemmer_does_not() -> None:
    assert unjoined_pairs(WORDS) == {
        ("build", "built"): "irregular", ("color", "colour"): "spelling",
        ("config", "configuration"): "clipping", ("config", "configure"): "clipping",
        ("create", "creation"): "derivation",
    }  # not application/apply (NOT_VARIANTS), nor option/opt (too short a base)
    assert "opt" not in reader_bases("option")
    assert reader_bases("storage") == {"store": "derivation"}


def test_the_sample_is_the_same_on_every_run_and_bounded() -> None:
    pairs = joined_pairs(WORDS)
    assert sample(pairs, 3) == sample(list(reversed(pairs)), 3)
    assert len(sample(pairs, 3)) == 3 and sorted(sample(pairs, None)) == pairs
