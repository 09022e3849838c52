"""`python -m lab eval` ranks phase 3 with the service's own code: same queries, same figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.evaluation.command import doc_ranking, hybrid_ranking
from service.domain.types import Answer, Chunk
from service.flags import Flags, apply_overrides, load_flags_file
from service.ingest.chunker import chunk_document
from service.ingest.markdown import parse_seeds
from service.normalize.lexicon import load_synonyms
from service.pipeline import Pipeline, TierContext
from service.scoring.semantic import SemanticHit
from service.scoring.tier1_cache import Tier1Cache
from service.settings import PROJECT_ROOT

SEEDS = Path(__file__).resolve().parents[2] / "seeds"
DOCUMENTS = parse_seeds(SEEDS)
CHUNKS = [c for d in DOCUMENTS for c in chunk_document(d)]
FLAGS = load_flags_file(PROJECT_ROOT / "flags.yaml")
QUERIES = [
    "how do I add a quick link?",  # semantic
    '"quick links"',  # exact
    "workspace widgets",  # mixed
    "DOC_RETRIEVAL_PHASE",  # exact
    "notes and calendar",  # multi-intent
    "explain the weather forecast",  # out of domain
]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


class OverlapLeg:
    """A deterministic stand-in for the embedding model: similarity = word overlap."""

    async def search(self, text: str, top_k: int, category: str | None, flags: Flags, exact: bool = False) -> tuple[list[SemanticHit], dict[str, float]]:
        query = _words(text)

        def similarity(chunk: Chunk) -> float:
            words = _words(f"{chunk.title} {chunk.header_path} {chunk.content}")
            return round(len(query & words) / (len(query) or 1) * 0.8, 6)

        ranked = sorted(CHUNKS, key=lambda c: (-similarity(c), c.doc_slug, c.chunk_index))[:top_k]
        hits = [
            SemanticHit(
                chunk_id=c.chunk_id, doc_slug=c.doc_slug, chunk_index=c.chunk_index, category=c.category,
                title=c.title, header_path=c.header_path, chunk_hash=c.chunk_hash, similarity=similarity(c),
            )
            for c in ranked
        ]
        return hits, {"embed_ms": 0.0, "vector_search_ms": 0.0}


def _pipeline(flags: Flags) -> Pipeline:
    leg = OverlapLeg()
    pipeline = Pipeline(cache=Tier1Cache(()), synonyms=load_synonyms(SEEDS / "synonyms.yaml"), flags=lambda: flags,
                        semantic=lambda: leg)
    pipeline.load_corpus(DOCUMENTS, CHUNKS, version=1)
    return pipeline


def _key(evidence: list[object]) -> list[tuple[object, ...]]:
    return [(e.doc_slug, e.chunk_index, e.score, e.match_explain) for e in evidence]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"fusion.method": "rrf"},
        {"fusion.query_type_weights": False, "fusion.weights.default": [0.5, 0.5]},
    ],
    ids=["flags.yaml", "rrf", "flat-weights"],
)
async def test_eval_ranks_phase_three_exactly_as_the_service_does(overrides: dict[str, object]) -> None:
    flags = apply_overrides(FLAGS, overrides)
    pipeline = _pipeline(flags)
    k = 10  # eval's pool is max(k, candidate_pool): the service's pool
    assert max(k, flags.retrieval.candidate_pool) == flags.retrieval.candidate_pool
    for text in QUERIES:
        query, notes = pipeline.normalise(text, flags)
        ctx = TierContext(query=query, notes=notes, category=None, flags=flags, top_k=k)
        candidates = await pipeline.hybrid_tier.run(ctx)
        decision = pipeline.decider.decide(candidates, query, flags).decision
        evaluated = await hybrid_ranking(pipeline, query, notes, flags, k)
        assert evaluated, text
        assert _key(evaluated) == _key(list(candidates.ranking)), text
        assert doc_ranking(evaluated, k) == doc_ranking(list(candidates.ranking), k), text
        if isinstance(decision, Answer) and decision.reason != "multi_intent":
            # The decision keeps the fused evidence; only the page it answers with may lead, its
            # score raised to the best one and the reason given, so the scores stay in order.
            shown = list(decision.results)
            lifted = [e for e in shown if any(line.startswith("ranked first:") for line in e.match_explain)]
            assert len(lifted) <= 1 and all(e is shown[0] for e in lifted), text
            assert [e.score for e in shown] == sorted((e.score for e in shown), reverse=True), text
            rest = [e for e in shown if e not in lifted]
            assert sorted(_key(rest)) == sorted(k for k in _key(list(candidates.ranking))
                                               if (k[0], k[1]) not in {(e.doc_slug, e.chunk_index) for e in lifted}), text


async def test_query_type_is_detected_once_and_picks_the_weights() -> None:
    pipeline = _pipeline(FLAGS)
    query, _ = pipeline.normalise('"quick links"', FLAGS)
    assert query.query_type == "exact"
    candidates = await pipeline.hybrid().retrieve(query, FLAGS)
    assert candidates.query_type == "exact" and candidates.weights == FLAGS.fusion.weights.exact


class RecordingLeg(OverlapLeg):
    """OverlapLeg that remembers whether each search was asked to be exact."""

    def __init__(self) -> None:
        self.exact: list[bool] = []

    async def search(self, text: str, top_k: int, category: str | None, flags: Flags, exact: bool = False) -> tuple[list[SemanticHit], dict[str, float]]:
        self.exact.append(exact)
        return await super().search(text, top_k, category, flags, exact)


@pytest.mark.parametrize(("limit", "exact"), [(None, True), (len(CHUNKS) - 1, False), (0, False)])
async def test_a_corpus_within_the_exact_search_limit_is_searched_exactly(limit: int | None, exact: bool) -> None:
    # The seed corpus's chunks × one representation: exact under the default limit, HNSW one below.
    flags = FLAGS if limit is None else apply_overrides(FLAGS, {"semantic.exact_search_max_vectors": limit})
    leg = RecordingLeg()
    pipeline = Pipeline(cache=Tier1Cache(()), synonyms=load_synonyms(SEEDS / "synonyms.yaml"), flags=lambda: flags,
                        semantic=lambda: leg)
    pipeline.load_corpus(DOCUMENTS, CHUNKS, version=1)
    query, notes = pipeline.normalise("how do I add a quick link?", flags)
    await pipeline.hybrid_tier.run(TierContext(query=query, notes=notes, category=None, flags=flags, top_k=5))
    assert leg.exact == [exact]


@pytest.mark.parametrize("category", [None, "widgets"])
async def test_phases_two_and_three_read_phase_one_s_pages_as_phase_one_ranks_them(category: str | None) -> None:
    # The decision's `whole_page_rank` compares the first page with phase 1's ranking of the same
    # query: the pages phases 2 and 3 carry must be the ones phase 1 shows, in its order.
    from service.decide.seed_rules import distinct_documents, ranked_by_score
    from service.tiers import KeywordTier

    pipeline = _pipeline(FLAGS)
    phase_one, phase_two = KeywordTier(1, pipeline.require_indexes), KeywordTier(2, pipeline.require_indexes)
    for text in QUERIES:
        query, notes = pipeline.normalise(text, FLAGS)
        ctx = TierContext(query=query, notes=list(notes), category=category, flags=FLAGS, top_k=10)
        phase3 = await pipeline.hybrid_tier.run(ctx)
        phase1 = await phase_one.run(
            TierContext(query=query, notes=list(notes), category=category, flags=FLAGS, top_k=10))
        phase2 = await phase_two.run(
            TierContext(query=query, notes=list(notes), category=category, flags=FLAGS, top_k=10))
        pages = [e.doc_slug for e in distinct_documents(ranked_by_score(list(phase1.ranking)), 10)]
        assert list(phase3.whole_pages) == list(phase2.whole_pages) == pages, text
        assert len(phase3.whole_pages) == len(set(phase3.whole_pages)) <= 10
        assert phase1.whole_pages == ()  # phase 1 is that ranking: nothing to compare with
