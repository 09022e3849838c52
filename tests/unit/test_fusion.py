"""Fusion math against hand-computed values, and the query-type table."""

from __future__ import annotations

import pytest

from service.normalize.query_type import detect_query_type
from service.scoring.fusion import (
    FusedScore,
    FusionMethod,
    fusion_method,
    min_max_normalise,
    reciprocal_rank_fusion,
    weighted_sum_fusion,
)


def test_min_max_hand_computed() -> None:
    assert min_max_normalise({"a": 2.0, "b": 4.0, "c": 10.0}) == {"a": 0.0, "b": 0.25, "c": 1.0}
    assert min_max_normalise({}) == {}
    assert min_max_normalise({"only": 0.42}) == {"only": 1.0}  # no spread: best of its leg
    assert min_max_normalise({"a": 3.0, "b": 3.0}) == {"a": 1.0, "b": 1.0}
    assert min_max_normalise({"a": 0.0, "b": 0.0}) == {"a": 0.0, "b": 0.0}  # leg found nothing


def test_weighted_sum_hand_computed_with_one_leg_missing() -> None:
    keyword = {"a": 10.0, "b": 6.0, "c": 2.0}
    semantic = {"b": 0.8, "c": 0.6, "d": 0.4}
    fused = weighted_sum_fusion(keyword, semantic, 0.3, 0.7)
    # keyword norm: a 1, b 0.5, c 0 ; semantic norm: b 1, c 0.5, d 0
    expected = {
        "a": 0.3 * 1.0 + 0.7 * 0.0,  # 0.30, keyword only
        "b": 0.3 * 0.5 + 0.7 * 1.0,  # 0.85
        "c": 0.3 * 0.0 + 0.7 * 0.5,  # 0.35
        "d": 0.0 + 0.7 * 0.0,  # 0.00, semantic only and its leg's worst
    }
    assert list(fused) == ["b", "c", "a", "d"]  # best first
    for key, value in expected.items():
        assert fused[key].fused == pytest.approx(value)
    assert fused["a"] == FusedScore(
        keyword_raw=10.0, semantic_raw=None, keyword_norm=1.0, semantic_norm=0.0, fused=0.3
    )
    assert fused["d"].keyword_raw is None and fused["d"].semantic_raw == 0.4


def test_weighted_sum_semantic_only_candidate_can_win() -> None:
    fused = weighted_sum_fusion({"a": 5.0, "b": 1.0}, {"c": 0.9, "a": 0.2}, 0.15, 0.85)
    # a: 0.15*1 + 0.85*0 = 0.15 ; b: 0 ; c: 0.85*1 = 0.85
    assert [(k, round(v.fused, 6)) for k, v in fused.items()] == [
        ("c", 0.85),
        ("a", 0.15),
        ("b", 0.0),
    ]


def test_weighted_sum_rejects_negative_weights() -> None:
    with pytest.raises(ValueError):
        weighted_sum_fusion({"a": 1.0}, {}, -0.1, 1.0)


def test_rrf_hand_computed() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], k=60)
    expected = {
        "b": 1 / 62 + 1 / 61,
        "a": 1 / 61,
        "d": 1 / 62,
        "c": 1 / 63,
    }
    assert list(fused) == ["b", "a", "d", "c"]
    for key, value in expected.items():
        assert fused[key] == pytest.approx(value)
    # Tie between a and x (both rank 1 in one list): first appearance wins, deterministically.
    assert list(reciprocal_rank_fusion([["a"], ["x"]], k=60)) == ["a", "x"]
    assert reciprocal_rank_fusion([], k=60) == {}


def test_fusion_method_lookup_lists_valid_names() -> None:
    assert fusion_method("RRF") is FusionMethod.rrf
    assert fusion_method("weighted") is FusionMethod.weighted
    with pytest.raises(ValueError, match="valid: weighted, rrf"):
        fusion_method("borda")


QUERY_TYPES = [
    ('"quick links"', "exact"),
    ("`g h` shortcut", "exact"),
    ("DOC_RETRIEVAL_PHASE", "exact"),
    ("what does API mean", "exact"),
    ("quickLinks widget", "exact"),
    ("QuickCapture", "exact"),
    ("demo_widget config", "exact"),
    ("widget.render() error", "exact"),
    ("/admin/reindex", "exact"),
    ("seed --force", "exact"),
    ("app.config", "exact"),
    # A sigil makes a name of a word, as in the identifier grammar (service/domain/identifiers.py).
    ("what does :editor/extra-codemirror-options change?", "exact"),
    ("how do I use @requires with redirect?", "exact"),
    ("load .env values in the config", "exact"),
    ("Trust::Reduced git config", "exact"),
    ("notes @ work", "mixed"),  # a lone `@` is no decorator
    # A how-to frame is how one asks, not what: the rest decides (issue 40).
    ("how do I find my notes?", "mixed"),
    ("how do I remove a widget", "mixed"),
    ("how to deploy", "mixed"),
    ("how can I set up a custom domain for my site?", "semantic"),
    ("how do I use `mkdocs serve`", "exact"),
    ("home " * 100, "mixed"),  # one word typed a hundred times is not a sentence
    ("where are my shortcuts?", "semantic"),
    ("what is quick links", "semantic"),
    ("can I pin a note", "semantic"),
    ("notes?", "semantic"),
    ("I want to move a note into another workspace", "semantic"),
    ("WHERE DO I FIND MY NOTES", "semantic"),  # shouting is not an identifier
    ("GOMAXPROCS", "exact"),  # one word in capitals is: an environment variable, an acronym
    ("quick links", "mixed"),
    ("explain workspace", "mixed"),
    ("workspace and widgets", "mixed"),
    ("home", "mixed"),
    ("e.g. notes", "mixed"),
    ("", "mixed"),
]


@pytest.mark.parametrize(("query", "expected"), QUERY_TYPES)
def test_detect_query_type(query: str, expected: str) -> None:
    assert detect_query_type(query) == expected


