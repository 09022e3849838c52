"""The packaged MiniLM, untrained, as a reranker of phase 3's candidates: the reference the
trained relevance model is measured against (docs/quality/relevance-model.md).

`python -m lab.experiments.relevance_zero_shot VARIANT ...`, VARIANT one of:

- `separate-6`: question and passage embedded apart by all six layers, cosine (the
  semantic leg's own similarity, on the passage the relevance model reads);
- `separate-3`: the same with the first three layers;
- `joint-3-types0`, `joint-6-types0`: the pair read together (as the relevance model
  reads it, every token of type 0), question and passage tokens mean-pooled apart, cosine:
  where the `cosine` head of lab/relevance/train.py starts before any step;
- `late-6`: late interaction (ColBERT's MaxSim) from the same six layers' token vectors,
  question and passage embedded apart (lab/relevance/late_interaction.py; issue 41, item 6);
- `late-6-whole`, `separate-6-whole`: the same on each candidate's heading path and whole
  section (up to 256 word pieces, the embedding model's own limit), not the relevance
  model's 320-character passage. Variants of one run read the same passages: do not mix
  `-whole` ones with the others.

Same cases, passages, strategies and choices as `python -m lab eval-relevance`
(lab/relevance/evaluate.py); prints k = 3's test rows per kind and the first page's AUC.
Output of 2026-11-27 (separate-6, joint-3-types0): lab/results/relevance/zero-shot-2026-11-27.txt.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

Score = Callable[[str, list[str]], list[float]]


def main(argv: list[str]) -> int:
    import torch
    from tokenizers import Tokenizer
    from transformers import BertModel

    from lab.relevance.evaluate import CANDIDATES, QUERIES, evaluate, load_cases
    from lab.relevance.late_interaction import LateInteraction
    from lab.relevance.train import base_model_dir
    from service.settings import Settings

    torch.set_num_threads(2)
    base = base_model_dir()
    whole = any(name.endswith("-whole") for name in argv)
    passages: dict[str, list[str]] = {}
    cases = load_cases(CANDIDATES, QUERIES, Settings(), lambda q, texts: [0.0] * len(texts), passages,
                       whole_sections=whole)
    print(len(cases), "cases", flush=True)

    tok = Tokenizer.from_file(str(base / "tokenizer.json"))
    tok.enable_truncation(256 if whole else 128)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")

    def model(layers: int) -> Any:
        m: Any = BertModel.from_pretrained(str(base), local_files_only=True, add_pooling_layer=False)
        m.encoder.layer = m.encoder.layer[:layers]
        return m.eval()

    def mean(h: Any, mask: Any) -> Any:
        w = mask.unsqueeze(-1).float()
        return (h * w).sum(1) / w.sum(1).clamp(min=1e-9)

    def separate(m: Any) -> Score:
        def score(q: str, ps: list[str]) -> list[float]:
            enc = tok.encode_batch([q, *ps])
            ids = torch.tensor([e.ids for e in enc])
            mask = torch.tensor([e.attention_mask for e in enc])
            with torch.no_grad():
                h = m(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
            v = torch.nn.functional.normalize(mean(h, mask), dim=-1)
            return [float(x) for x in v[1:] @ v[0]]
        return score

    def joint(m: Any) -> Score:
        def score(q: str, ps: list[str]) -> list[float]:
            enc = tok.encode_batch([(q, p) for p in ps])
            ids = torch.tensor([e.ids for e in enc])
            mask = torch.tensor([e.attention_mask for e in enc])
            types = torch.tensor([e.type_ids for e in enc])
            with torch.no_grad():
                h = m(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
            qv = torch.nn.functional.normalize(mean(h, mask * (types == 0)), dim=-1)
            pv = torch.nn.functional.normalize(mean(h, mask * (types == 1)), dim=-1)
            return [float(x) for x in (qv * pv).sum(-1)]
        return score

    variants: dict[str, Callable[[], Score]] = {
        "separate-6": lambda: separate(model(6)),
        "separate-3": lambda: separate(model(3)),
        "joint-3-types0": lambda: joint(model(3)),
        "joint-6-types0": lambda: joint(model(6)),
        "late-6": lambda: LateInteraction(max_tokens=128).score,
        "late-6-whole": lambda: LateInteraction().score,
        "separate-6-whole": lambda: separate(model(6)),
    }
    for name in argv:
        score = variants[name]()
        t0 = time.time()
        scored = [dataclasses.replace(c, model=tuple(score(c.query, list(passages[c.id])))) for c in cases]
        results = evaluate(scored)
        k3 = results["k=3"]["per_kind"]
        print(name, f"{time.time() - t0:.0f}s", "AUC", results["auc_first_page"].get("test"), flush=True)
        for kind in ("paraphrase", "question", "keyword", "all"):
            row = k3[kind]
            print("  ", kind, {n: (row[n]["top1"], row[n]["top3"]) for n in ("phase 3", "rerank", "blend", "gated")},
                  flush=True)
        print("   dev", results["k=3"]["dev"], "chosen", list(results["k=3"]["chosen"].values())[:2], flush=True)
        print(long_queries_only(scored), flush=True)
    return 0


LENGTHS = range(2, 16)


def long_queries_only(cases: Sequence[Any], k: int = 3) -> str:
    """Rerank only the queries of at least L words (the paraphrases are the long ones), L chosen
    for each corpus on the other corpora's dev split; k = 3's test rows per kind."""
    from lab.relevance.evaluate import KINDS, choose, kind_score, reorder

    def order(case: Any, length: int) -> list[str]:
        if len(re.findall(r"\w+", case.query)) >= length:
            return reorder(case, k, lambda i: case.model[i])
        return list(case.ranking)

    chosen, test_orders = {}, {}
    for corpus in sorted({c.corpus for c in cases}):
        dev = [c for c in cases if c.split == "dev" and c.corpus != corpus]
        # Longest first: on a tie, `choose` keeps the first, the gate that reranks least.
        length = int(choose(dev, k, [float(n) for n in reversed(LENGTHS)], lambda c, _k, n: order(c, int(n))))
        chosen[corpus] = length
        test_orders.update({c.id: order(c, length) for c in cases if c.split == "test" and c.corpus == corpus})
    test = [c for c in cases if c.split == "test"]
    lines = [f"   long queries only (k = {k}; L per corpus: {sorted(set(chosen.values()))}), test top-1 / top-3:"]
    for kind in (*KINDS, "all"):
        group = [c for c in test if kind in ("all", c.kind)]
        before = kind_score(group, [list(c.ranking) for c in group])
        after = kind_score(group, [test_orders[c.id] for c in group])
        lines.append(f"     {kind} ({len(group)}): {100 * before.top1:.1f} / {100 * before.top3:.1f} -> "
                     f"{100 * after.top1:.1f} / {100 * after.top3:.1f}")
    return "\n".join(lines)


if __name__ == "__main__":  # the rst reader's worker process is spawned: import-safe
    sys.exit(main(sys.argv[1:]))
