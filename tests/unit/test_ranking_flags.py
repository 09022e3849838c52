"""The lab's flag sweep compares two rankings case by case (lab/experiments/ranking_flags.py)."""

from __future__ import annotations

import pytest

from lab.experiments.ranking_flags import Ranked, compare


def _case(case_id: str, split: str, kind: str, rank: int | None) -> Ranked:
    return Ranked("vite", case_id, split, kind, f"query {case_id}", rank)


def test_counts_first_pages_per_split_and_kind_and_names_the_cases_that_moved() -> None:
    base = [_case("a", "dev", "paraphrase", 1), _case("b", "dev", "paraphrase", 2),
            _case("c", "test", "keyword", 1), _case("d", "test", "keyword", None)]
    variant = [_case("a", "dev", "paraphrase", 3), _case("b", "dev", "paraphrase", 1),
               _case("c", "test", "keyword", 1), _case("d", "test", "keyword", 4)]
    lines = compare(base, variant)
    assert "| dev | paraphrase | 2 | 1 → 1 | 2 → 2 |" in lines
    assert "| test | keyword | 2 | 1 → 1 | 1 → 1 |" in lines  # rank 4 is outside the first three
    assert "| test | all | 2 | 1 → 1 | 1 → 1 |" in lines
    assert "top-1 changed for 2 cases:" in lines
    assert "  - vite dev paraphrase: 'query a'" in lines
    assert "  + vite dev paraphrase: 'query b'" in lines


def test_a_case_missing_from_the_variant_is_an_error_not_a_silent_loss() -> None:
    with pytest.raises(KeyError):
        compare([_case("a", "dev", "keyword", 1)], [])
