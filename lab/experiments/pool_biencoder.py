"""Fine-tune the embedding model (a bi-encoder) on the pool's mined pairs (issue 41 item 6).

The relevance model reads question and passage together and ranks phase 3's candidates worse
than phase 3 (docs/quality/relevance-model.md). The other place a model could learn the pool's
documentation is the semantic leg itself: the packaged all-MiniLM-L6-v2, fine-tuned on the
groups `python -m lab train-relevance --mine-only --groups-cache FILE` mined from the unlabelled
pool (link text, heading, title and definition → the section; never the labelled corpora), with
sentence-transformers' MultipleNegativesRankingLoss: each anchor against every positive of its
batch and its group's first hard negative (a section the keyword ranking puts above or near the
positive). The 2026-11-24 adaptation fine-tuned on one corpus and was judged on the same one
(docs/quality/notes/2026-11-24-model-adaptation.md); this one is judged on corpora it never saw.

    .venv/bin/python -m lab.experiments.pool_biencoder --groups /tmp/bienc/groups.json \\
        --out /tmp/bienc/model [--groups-per-kind 2000] [--epochs 1] [--kinds link,title,definition]

Then each labelled set, phase 3, with the model (its vectors are stored under its directory name):

    EMBEDDING_MODEL=/tmp/bienc/model .venv/bin/python -m lab eval-kinds --queries bench/queries/N.yaml \\
        --phase 3 --set embedding.backend=torch
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from lab.adapt.train import TrainOptions, TrainReport, fine_tune
from lab.relevance.pairs import KINDS, Group, is_held_out


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def load_groups(path: Path) -> list[Group]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Group(**{**g, "negatives": tuple(g["negatives"])}) for g in data["groups"]]


def training_groups(groups: Sequence[Group], per_kind: int, seed: int, kinds: Sequence[str] = KINDS) -> list[Group]:
    """Up to `per_kind` groups of each of `kinds` that have a hard negative, the held-out slice left
    out (the relevance model's `is_held_out`: one group in twenty by its key)."""
    rng = random.Random(seed)
    by_kind: dict[str, list[Group]] = {}
    for group in groups:
        if group.kind in kinds and group.hard >= 1 and not is_held_out(group):
            by_kind.setdefault(group.kind, []).append(group)
    chosen: list[Group] = []
    for kind in sorted(by_kind):
        found = sorted(by_kind[kind], key=lambda g: g.key)
        rng.shuffle(found)
        chosen.extend(found[:per_kind])
    rng.shuffle(chosen)
    return chosen


def page_of(group: Group) -> str:
    """A batch never holds two groups of one page: its other section would be a false in-batch
    negative (`lab.adapt.pairs.batches`)."""
    return f"{group.corpus}/{group.page}"


def train(groups: Sequence[Group], out: Path, options: TrainOptions) -> TrainReport:
    """The packaged model (its hash checked) fine-tuned on each group's anchor, positive and first
    hard negative (`lab.adapt.train.fine_tune`), saved to `out` with `adaptation.json`."""
    from lab.relevance.train import base_model_dir, verify_base

    base = base_model_dir()
    verify_base(base)
    return fine_tune(base, groups, out, options, columns=lambda g: (g.anchor, g.positive, g.negatives[0]),
                     page_of=page_of, progress=say,
                     manifest={"experiment": "pool_biencoder", "kinds": sorted({g.kind for g in groups})})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.experiments.pool_biencoder")
    parser.add_argument("--groups", type=Path, required=True, help="the groups cache train-relevance wrote")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--groups-per-kind", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", default=",".join(KINDS), help="kinds of group to train on (comma-separated)")
    args = parser.parse_args(argv)
    chosen = training_groups(load_groups(args.groups), args.groups_per_kind, args.seed,
                             [k for k in args.kinds.split(",") if k])
    say(f"{len(chosen)} groups: " + ", ".join(
        f"{k} {sum(g.kind == k for g in chosen)}" for k in sorted({g.kind for g in chosen})))
    options = TrainOptions(epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate,
                           max_seq_length=args.max_seq_length, seed=args.seed)
    print(json.dumps(asdict(train(chosen, args.out, options)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
