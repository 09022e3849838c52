"""The perturbation signal of lab/experiments/drop_one_word.py: which words it leaves out and what
it reads from the rankings without them."""

from __future__ import annotations

import pytest

from lab.experiments.drop_one_word import features_of, variants


def test_each_word_of_three_letters_or_more_is_left_out_once() -> None:
    assert variants("how do I add admonitions") == ["do I add admonitions", "how do I admonitions", "how do I add"]


def test_a_query_of_one_such_word_has_nothing_to_leave_out() -> None:
    assert variants("acceptHMRUpdate") == []
    assert variants("to a ProxyFix") == []


def test_a_first_page_every_variant_keeps_scores_one() -> None:
    assert features_of("a", [["a", "b"], ["a"]]) == {"drop_one_kept": 1.0, "drop_one_rank": 1.0}
    assert features_of("a", []) == {"drop_one_kept": 1.0, "drop_one_rank": 1.0}


def test_a_first_page_one_word_carried_scores_low() -> None:
    got = features_of("a", [["b", "a"], ["c"], ["a"], []])
    assert got["drop_one_kept"] == pytest.approx(0.25)
    assert got["drop_one_rank"] == pytest.approx((0.5 + 0 + 1 + 0) / 4)
