"""How the ONNX backend groups texts into forward passes (service/embedding/onnx_backend.py)."""

from __future__ import annotations

from service.embedding.onnx_backend import TOKENS_PER_PASS, forward_passes


def test_long_passages_run_alone_and_short_queries_share_a_pass() -> None:
    passages = [140, 254, 90, 200]
    assert forward_passes(passages, max_texts=32, token_budget=256) == [[1], [3], [0], [2]]
    queries = [9] * 40
    passes = forward_passes(queries, max_texts=32, token_budget=TOKENS_PER_PASS)
    assert [len(p) for p in passes] == [32, 8]  # the text cap binds before the token budget


def test_every_text_once_longest_first_and_no_pass_over_its_limits() -> None:
    lengths = [3, 120, 7, 64, 64, 500, 12, 31, 2, 128, 40]
    passes = forward_passes(lengths, max_texts=4, token_budget=256)
    flat = [i for p in passes for i in p]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    for group in passes:
        longest = max(lengths[i] for i in group)
        assert 1 <= len(group) <= 4
        assert len(group) == 1 or len(group) * longest <= 256  # a 500-token text runs alone


def test_one_text_per_pass_when_the_backend_asks_for_it() -> None:
    assert forward_passes([5, 5, 5], max_texts=1, token_budget=TOKENS_PER_PASS) == [[0], [1], [2]]
