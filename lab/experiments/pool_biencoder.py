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
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lab.adapt.pairs import batches
from lab.adapt.train import warmup_then_decay
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


def train(groups: Sequence[Group], out: Path, epochs: int, batch_size: int, learning_rate: float,
          max_seq_length: int, seed: int) -> dict[str, Any]:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from lab.relevance.train import base_model_dir, verify_base

    started = time.perf_counter()
    base = base_model_dir()
    verify_base(base)
    torch.manual_seed(seed)
    model = SentenceTransformer(str(base), device="cpu", local_files_only=True)
    saved_length = model.max_seq_length
    model.max_seq_length = max_seq_length
    loss_fn = MultipleNegativesRankingLoss(model)
    plan = [b for epoch in range(epochs) for b in batches(groups, batch_size, seed + epoch, page_of)]
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, warmup_then_decay(len(plan), 0.1))
    model.train()
    losses: list[float] = []
    for step, batch in enumerate(plan, start=1):
        features = [
            model.preprocess([g.anchor for g in batch]),
            model.preprocess([g.positive for g in batch]),
            model.preprocess([g.negatives[0] for g in batch]),
        ]
        value = loss_fn(features, torch.zeros(len(batch)))
        optimiser.zero_grad()
        value.backward()
        optimiser.step()
        schedule.step()
        losses.append(float(value.detach()))
        if step == 1 or step % 20 == 0 or step == len(plan):
            say(f"step {step}/{len(plan)}: loss {losses[-1]:.4f} ({time.perf_counter() - started:.0f}s)")
    model.eval()
    model.max_seq_length = saved_length
    model.save(str(out))
    report = {
        "groups": len(groups), "steps": len(plan), "epochs": epochs, "batch_size": batch_size,
        "learning_rate": learning_rate, "max_seq_length": max_seq_length, "seed": seed,
        "seconds": round(time.perf_counter() - started, 1),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "first_loss": round(losses[0], 4), "last_loss": round(losses[-1], 4),
    }
    (out / "pool-biencoder.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


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
    report = train(chosen, args.out, args.epochs, args.batch_size, args.learning_rate, args.max_seq_length,
                   args.seed)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
