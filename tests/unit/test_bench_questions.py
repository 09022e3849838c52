"""The bench's questions: every request a text never sent before, drawn from the labelled set."""

from __future__ import annotations

import pytest

from lab.bench.http import (
    QuestionSource,
    _wrk_figures,
    distinct_questions,
    labelled_questions,
    parse_variant,
)


def test_every_question_differs_and_starts_from_the_labelled_set() -> None:
    bases = labelled_questions()
    assert len(bases) >= 400 and "widget grid" in bases
    texts = list(distinct_questions(bases))
    assert len(texts) == len(set(texts)) >= 50 * len(bases)
    assert texts[: len(bases)] == bases  # the labelled questions as written come first


def test_rows_share_one_source_so_no_text_repeats_across_rows() -> None:
    source = QuestionSource(["canvas", "widget grid"])
    sent = [source.body(2)(0)["query"] for _ in range(5)] + [source.body(3)(0)["query"] for _ in range(5)]
    assert len(set(sent)) == 10 and source.used == 10


def test_variants_are_validated_flag_overrides() -> None:
    assert parse_variant("auto") == ("auto", {})
    assert parse_variant("t2:embedding.threads=2,embedding.batch_wait_ms=5") == (
        "t2", {"embedding.threads": 2, "embedding.batch_wait_ms": 5})
    with pytest.raises(ValueError, match="expected key=value"):
        parse_variant("t2:embedding.threads")


def test_wrk_output_is_read_in_milliseconds() -> None:
    text = ("  Latency Distribution\n     50%  812.00us\n     75%   20.00ms\n     90%    1.20s\n"
            "     99%    2.00s\n  Socket errors: connect 0, read 1, write 0, timeout 2\n"
            "  Non-2xx or 3xx responses: 4\nRequests/sec:    200.50\n")
    assert _wrk_figures(text) == {"rps": 200.5, "p50": 0.812, "p75": 20.0, "p90": 1200.0, "p99": 2000.0,
                                  "errors": 7}
