"""Contrastive fine-tuning with in-batch negatives (sentence-transformers'
MultipleNegativesRankingLoss; van den Oord et al. 2018, Henderson et al. 2017).

A plain loop over the loss rather than `SentenceTransformerTrainer`: the
trainer needs `datasets` and `accelerate`, which the service does not ship,
and one epoch over a few hundred pairs needs none of their machinery. The
base model is read from its local directory only (offline).
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, TypeVar

from lab.adapt.pairs import Pair, batches

MANIFEST = "adaptation.json"
T = TypeVar("T")


@dataclass(frozen=True)
class TrainOptions:
    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 2e-5
    warmup_fraction: float = 0.1
    max_seq_length: int = 128
    """Training cut (the saved model keeps the base's own max_seq_length)."""
    seed: int = 0


@dataclass(frozen=True)
class TrainReport:
    pairs: int
    steps: int
    seconds: float
    max_rss_mb: float
    first_loss: float
    last_loss: float


def train(
    base_dir: Path, pairs: Sequence[Pair], out_dir: Path, options: TrainOptions,
    progress: Callable[[str], None] = print, manifest: dict[str, Any] | None = None,
) -> TrainReport:
    """Fine-tune the model in `base_dir` on `pairs` and save it to `out_dir`."""
    return fine_tune(base_dir, pairs, out_dir, options, columns=lambda p: (p.anchor, p.positive),
                     page_of=attrgetter("page"), progress=progress, manifest=manifest)


def fine_tune(
    base_dir: Path, items: Sequence[T], out_dir: Path, options: TrainOptions, *,
    columns: Callable[[T], tuple[str, ...]], page_of: Callable[[T], str],
    progress: Callable[[str], None] = print, manifest: dict[str, Any] | None = None,
) -> TrainReport:
    """`train` over any items: `columns` gives an item's anchor, its positive and any hard
    negatives (each scored against the batch's every positive and negative), `page_of` the page
    no batch may hold twice."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    started = time.perf_counter()
    torch.manual_seed(options.seed)
    model = SentenceTransformer(str(base_dir), device="cpu", local_files_only=True)
    saved_length = model.max_seq_length
    model.max_seq_length = min(options.max_seq_length, saved_length or options.max_seq_length)
    loss_fn = MultipleNegativesRankingLoss(model)
    plan = [b for epoch in range(options.epochs) for b in batches(items, options.batch_size, options.seed + epoch, page_of)]
    if not plan:
        raise ValueError(f"not enough pairs to train on ({len(items)}): need two pairs of different pages")
    optimiser = torch.optim.AdamW(model.parameters(), lr=options.learning_rate)
    rate = warmup_then_decay(len(plan), options.warmup_fraction)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, rate)
    model.train()
    losses: list[float] = []
    for step, batch in enumerate(plan, start=1):
        features = [model.preprocess(list(texts)) for texts in zip(*map(columns, batch), strict=True)]
        value = loss_fn(features, torch.zeros(len(batch)))
        optimiser.zero_grad()
        value.backward()
        optimiser.step()
        schedule.step()
        losses.append(float(value.detach()))
        if step == 1 or step % 10 == 0 or step == len(plan):
            progress(f"step {step}/{len(plan)}: loss {losses[-1]:.4f} ({time.perf_counter() - started:.0f}s)")
    model.eval()
    model.max_seq_length = saved_length
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    model.save(str(out_dir))
    report = TrainReport(
        pairs=len(items), steps=len(plan), seconds=round(time.perf_counter() - started, 1),
        max_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        first_loss=round(losses[0], 4), last_loss=round(losses[-1], 4),
    )
    record = {**(manifest or {}), "options": asdict(options), "report": asdict(report)}
    (out_dir / MANIFEST).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return report


def warmup_then_decay(steps: int, warmup_fraction: float) -> Callable[[int], float]:
    """The learning rate's factor at each step (`LambdaLR`): a linear warm-up over the first
    `warmup_fraction` of `steps` (at least one), then a linear decay to 0 at the last."""
    warmup = max(1, int(steps * warmup_fraction))

    def rate(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (steps - step) / max(1, steps - warmup))

    return rate


def next_version_dir(root: Path, name: str) -> Path:
    """`root/<name>-v<N>` with N one past the highest existing version (never reused
    while the older directories exist: vectors are stored under the directory name)."""
    versions = [
        int(p.name.rsplit("-v", 1)[1]) for p in root.glob(f"{name}-v*")
        if p.is_dir() and p.name.rsplit("-v", 1)[1].isdigit()
    ]
    return root / f"{name}-v{max(versions, default=0) + 1}"
