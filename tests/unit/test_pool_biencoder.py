"""The pool bi-encoder experiment's training sample (lab/experiments/pool_biencoder.py)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from lab.adapt.pairs import batches
from lab.experiments.pool_biencoder import load_groups, page_of, training_groups
from lab.relevance.pairs import Group, is_held_out


def group(corpus: str, page: str, anchor: str, kind: str = "link", hard: int = 1) -> Group:
    return Group(kind=kind, corpus=corpus, anchor=anchor, positive=f"{page} text", page=page,
                 negatives=("other text", "random text")[: hard + 1], hard=hard)


def test_a_batch_never_holds_two_sections_of_one_page() -> None:
    # Another section of the same page would be scored as a wrong answer for the anchor.
    # Page p0 of set a is not page p0 of set b.
    groups = [group("a", f"p{i % 3}", f"anchor {i}") for i in range(12)] + [group("b", "p0", "b anchor")]
    made = batches(groups, 4, page_of=page_of)
    assert made, "pages p0-p2 of set a and p0 of set b fill a batch of four"
    assert any(len(batch) == 4 for batch in made)
    for batch in made:
        pages = [(g.corpus, g.page) for g in batch]
        assert len(pages) == len(set(pages))
    assert sum(map(len, made)) == len(groups)


def test_the_sample_keeps_the_held_out_slice_and_groups_without_a_hard_negative_out() -> None:
    groups = [group("a", f"p{i}", f"anchor {i}", kind=("link", "heading")[i % 2], hard=i % 3 and 1)
              for i in range(400)]
    chosen = training_groups(groups, per_kind=1000, seed=0, kinds=("link",))
    assert chosen
    assert all(g.kind == "link" and g.hard >= 1 and not is_held_out(g) for g in chosen)
    expected = [g for g in groups if g.kind == "link" and g.hard >= 1 and not is_held_out(g)]
    assert sorted(g.key for g in chosen) == sorted(g.key for g in expected)
    assert len(training_groups(groups, per_kind=5, seed=0)) == 10  # five of each kind


def test_groups_read_back_from_the_mining_cache(tmp_path: Path) -> None:
    # The cache train-relevance writes (`--groups-cache`): negatives come back as a tuple.
    mined = [group("a", "p1", "install it"), group("a", "p2", "configure it", kind="title")]
    cache = tmp_path / "groups.json"
    cache.write_text(json.dumps({"key": {}, "available": {}, "groups": [asdict(g) for g in mined]}))
    assert load_groups(cache) == mined
