"""A stub page is never the answer when a page with content covers the query (issue 42 item 6),
on a real corpus through the service's own pipeline (phases 1 and 2, in memory; the rule alone:
tests/unit/test_calibration.py). Logseq's docs keep 43 pages with nothing of their own to say
(`Right sidebar` is one line linking elsewhere); asked by such a page's title, the stub ranks
first and the page with content that it points to answers."""

from __future__ import annotations

import pytest

from lab.evaluation.kinds import memory_pipeline, read_corpus
from service.domain.types import Answer
from service.evaluation.decisions import policy_flags
from service.flags import Flags
from service.pipeline import Pipeline, RetrieveParams
from service.settings import PROJECT_ROOT

LOGSEQ = PROJECT_ROOT / "tests" / "corpora" / "logseq-docs"


@pytest.fixture(scope="module")
def logseq() -> Pipeline:
    flags = Flags()
    return memory_pipeline(LOGSEQ, flags, *read_corpus(LOGSEQ, flags))


@pytest.mark.parametrize("phase", [1, 2])
@pytest.mark.parametrize(("query", "stub", "content"), [
    ("right sidebar", "right-sidebar", "how-to-work-with-the-right-hand-sidebar"),
    ("unlinked references", "unlinked-references", "term-backlink"),
])
async def test_a_stub_ranked_first_gives_way_to_the_page_with_content(
    logseq: Pipeline, query: str, stub: str, content: str, phase: int,
) -> None:
    indexes = logseq.require_indexes()
    assert indexes.is_stub(stub) and not indexes.is_stub(content)
    outcome = await logseq.run(RetrieveParams(query=query, phase_cap=phase, top_k=5),
                               policy_flags(Flags(), "calibrated"), observe=False)
    assert outcome.signals is not None and outcome.signals.ranking[0] == stub, outcome.signals
    assert isinstance(outcome.decision, Answer), outcome.decision
    shown = [e.doc_slug for e in outcome.results]
    assert shown[0] == content and not any(indexes.is_stub(slug) for slug in shown), shown
