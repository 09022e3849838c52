"""Late interaction (ColBERT's MaxSim) from the packaged MiniLM's token vectors, untrained: a
label-free reranker and decision signal issue 41 (item 6) asks to be tried beside the model.

Question and section are embedded apart by the model's layers; each question word piece takes
its best cosine among the section's word pieces, and the question's score for the section is
the mean of those ([CLS] and [SEP] left out), times `SCALE`. A section is read whole, under its
heading path (`whole_section`), up to the embedding model's 256 word pieces.
"""

from __future__ import annotations

from typing import Any

from service.domain.types import Chunk

SCALE = 10.0
"""So that the blend's λ grid of lab/relevance/evaluate.py (score per rank, 0.25-4) spans cosine
gaps of 0.025-0.4."""
MAX_TOKENS = 256
"""all-MiniLM-L6-v2's own input limit."""
SPECIAL = frozenset({"[CLS]", "[SEP]"})


def whole_section(chunk: Chunk) -> str:
    """What late interaction reads of a section: its heading path, then its whole text."""
    return f"{chunk.header_path}\n{chunk.content}"


class LateInteraction:
    """`score(question, sections)`: one MaxSim score per section, on `threads` CPU threads."""

    def __init__(self, layers: int = 6, max_tokens: int = MAX_TOKENS, threads: int = 2) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import BertModel

        from lab.relevance.train import base_model_dir

        torch.set_num_threads(threads)
        base = base_model_dir()
        self._torch = torch
        self._tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        model: Any = BertModel.from_pretrained(str(base), local_files_only=True, add_pooling_layer=False)
        model.encoder.layer = model.encoder.layer[:layers]
        self._model = model.eval()

    def score(self, question: str, sections: list[str]) -> list[float]:
        torch = self._torch
        encoded = self._tokenizer.encode_batch([question, *sections])
        ids = torch.tensor([e.ids for e in encoded])
        mask = torch.tensor([e.attention_mask for e in encoded])
        keep = (mask == 1) & torch.tensor([[t not in SPECIAL for t in e.tokens] for e in encoded])
        with torch.no_grad():
            hidden = self._model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
        hidden = torch.nn.functional.normalize(hidden, dim=-1)
        asked = hidden[0][keep[0]]
        scores = []
        for i in range(1, len(encoded)):
            read = hidden[i][keep[i]]
            best = (asked @ read.T).max(dim=1).values.mean() if len(asked) and len(read) else torch.tensor(0.0)
            scores.append(SCALE * float(best))
        return scores
