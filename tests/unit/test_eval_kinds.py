"""Per-kind ranking metrics of `eval-kinds` (lab/evaluation/kinds.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from lab.evaluation.kinds import (
    KindSession,
    first_relevant_rank,
    format_ceiling,
    format_kinds,
    page_ranking,
    score_kind,
    summarise,
)
from service.evaluation.labelled import LabelledQuery, parse_query_set, split_of
from service.flags import Flags, load_flags
from service.settings import PROJECT_ROOT

SET = """
corpus: seed
cases:
  - {id: a, query: where are my shortcuts, kind: paraphrase, decision: answer, pages: [widgets/quick-links]}
  - {id: b, query: quick links, kind: keyword, decision: answer, pages: [widgets/quick-links]}
  - {id: c, query: weather tomorrow, kind: out_of_domain, decision: no_match}
"""


def test_rank_of_the_first_right_page_within_ten() -> None:
    assert first_relevant_rank(["x", "y", "z"], ["y", "z"]) == 2
    assert first_relevant_rank([str(i) for i in range(20)], ["12"]) is None
    assert page_ranking(["a", "a", "b", "a", "c"]) == ["a", "b", "c"]


def test_top1_top3_and_mrr() -> None:
    score = score_kind([1, 3, None, 2])
    assert score.cases == 4
    assert score.top1 == pytest.approx(0.25) and score.top3 == pytest.approx(0.75)
    assert score.mrr10 == pytest.approx((1 + 1 / 3 + 1 / 2) / 4)


def test_summary_is_per_split_and_kind_and_skips_cases_without_pages() -> None:
    cases = [c for c in parse_query_set(SET) if c.pages]
    table = summarise(cases, {"a": ["widgets/quick-links"], "b": ["other", "widgets/quick-links"]})
    for case in cases:
        score = table[case.split][case.kind]
        assert score.cases == 1
        assert score.top1 == (1.0 if case.id == "a" else 0.0)
    assert sum(table[s]["all"].cases for s in ("dev", "test")) == 2
    text = format_kinds({"phases": {"3": table}})
    assert "| 3 | paraphrase |" in text and "| 3 | all |" in text
    assert split_of("a") in ("dev", "test")


class _WeightedRankings(KindSession):
    """Rankings that depend only on the fusion weights in force: case `a`'s right page is first
    only when the keyword weight is 0.3, case `b`'s never before rank 2."""

    def __init__(self) -> None:
        super().__init__(pipeline=None, pool=None, embedder=None)

    async def rankings(self, cases: Sequence[LabelledQuery], flags: Flags, phase: int) -> dict[str, list[str]]:
        assert phase == 3
        keyword_weight = flags.fusion.weights.default[0] if not flags.fusion.query_type_weights else None
        right_first = keyword_weight == pytest.approx(0.3)
        return {
            "a": ["widgets/quick-links", "home"] if right_first else ["home", "x", "y", "widgets/quick-links"],
            "b": ["home", "widgets/quick-links"],
        }


async def test_fusion_ceiling_takes_each_cases_best_weight_with_hindsight() -> None:
    cases = [c for c in parse_query_set(SET) if c.pages]
    rows = await _WeightedRankings().fusion_ceiling(cases, load_flags(PROJECT_ROOT / "flags.yaml"))
    assert set(rows) == {"flags", "keyword leg alone", "semantic leg alone", "best weight per case (hindsight)"}
    # The shipped flags weigh by query type, so none of the fixed weights applies to them.
    assert first_relevant_rank(rows["flags"]["a"], ["widgets/quick-links"]) == 4
    assert first_relevant_rank(rows["keyword leg alone"]["a"], ["widgets/quick-links"]) == 4
    assert rows["best weight per case (hindsight)"]["a"][0] == "widgets/quick-links"
    assert first_relevant_rank(rows["best weight per case (hindsight)"]["b"], ["widgets/quick-links"]) == 2
    table = format_ceiling({name: summarise(cases, ranked) for name, ranked in rows.items()})
    assert "| best weight per case (hindsight) |" in table
