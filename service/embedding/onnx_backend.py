"""The ONNX Runtime backend: the same model without PyTorch in the process.

The graph is exported once from the local model directory (onnx_export.py, in
a subprocess) and cached under the data directory, keyed by the model files'
size and modification time, so a new model (or a new export recipe) exports
again and nothing is ever downloaded. Tokenization uses the model's own
`tokenizers` tokenizer; mean pooling over the attention mask and L2
normalisation follow the model's sentence-transformers modules.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from service.embedding.base import Matrix, WindowedEmbedder, model_threads, normalise
from service.ingest.tokens import ModelNotFoundError, default_model_dir, validate_model_dir

# Bump when onnx_export.py changes what it writes: cached graphs are re-exported.
EXPORT_VERSION = 1
EXPORT_TIMEOUT_S = 900


def model_config(model_dir: Path) -> tuple[int, int]:
    """(dimension, max_seq_length); refuses a model whose pooling is not
    mean + normalise, which is all the numpy pooling here reproduces."""
    modules = json.loads((model_dir / "modules.json").read_text()) if (model_dir / "modules.json").is_file() else []
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    pooling_dir = next((m.get("path", "") for m in modules if m.get("type", "").endswith("Pooling")), "1_Pooling")
    pooling_file = model_dir / pooling_dir / "config.json"
    pooling = json.loads(pooling_file.read_text()) if pooling_file.is_file() else {}
    # sentence-transformers >= 6 saves `pooling_mode: mean` (older: `pooling_mode_mean_tokens: true`).
    mean = pooling.get("pooling_mode_mean_tokens") or pooling.get("pooling_mode") == "mean"
    if kinds[:1] != ["Transformer"] or "Normalize" not in kinds or not mean:
        raise ModelNotFoundError(
            f"the onnx backend supports mean-pooled, normalised sentence-transformers models; "
            f"{model_dir} has modules {kinds or 'none'}: use embedding.backend torch"
        )
    st_config = model_dir / "sentence_bert_config.json"
    max_len = int(json.loads(st_config.read_text()).get("max_seq_length", 256)) if st_config.is_file() else 256
    dim = pooling.get("word_embedding_dimension") or pooling.get("embedding_dimension") or json.loads((model_dir / "config.json").read_text())["hidden_size"]
    return int(dim), max_len


def fingerprint(model_dir: Path) -> str:
    """Changes when any model file does (size or mtime), or the export recipe."""
    h = hashlib.sha256(f"export v{EXPORT_VERSION}".encode())
    for f in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        stat = f.stat()
        h.update(f"{f.relative_to(model_dir)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def ensure_onnx(model_dir: Path, cache_root: Path, int8: bool) -> Path:
    """The cached graph for this model, exported now if missing (~15 s)."""
    name = "model-int8.onnx" if int8 else "model.onnx"
    target = cache_root / f"{model_dir.name}-{fingerprint(model_dir)}" / name
    if target.is_file():
        return target
    command = [sys.executable, "-m", "service.embedding.onnx_export", str(model_dir), str(target)]
    if int8:
        command.append("--int8")
    done = subprocess.run(command, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S, check=False)
    if done.returncode != 0 or not target.is_file():
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise ModelNotFoundError(f"ONNX export of {model_dir} to {target} failed: {tail}")
    return target


TOKENS_PER_PASS = 512
"""Padded tokens one forward pass may hold. On 2 cores a passage of ~140 tokens runs faster
alone than in a batch (activations of a batch outgrow the caches), short queries faster
batched: logseq-docs passages took 0.6x the time of batches of 32 at 1 and 2 threads, 64
queries the same time (docs/quality/notes/2026-11-25-forward-passes-by-token-budget.md)."""


class OnnxEmbedder(WindowedEmbedder):
    """One onnxruntime session, threads sized to the cores (called from the model thread)."""

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        cache_dir: Path,
        int8: bool = False,
        model_name: str | None = None,
        num_threads: int | None = None,
        batch_size: int = 32,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.backend = "onnx-int8" if int8 else "onnx"
        path = validate_model_dir(Path(model_dir)) if model_dir else default_model_dir()
        dim, max_len = model_config(path)
        if not (path / "tokenizer.json").is_file():
            raise ModelNotFoundError(f"the onnx backend needs {path / 'tokenizer.json'}")
        self.graph = ensure_onnx(path, cache_dir, int8)
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads or model_threads()
        options.inter_op_num_threads = 1
        # No busy-waiting between calls: idle model threads would spin on the
        # cores the event loop and the keyword scoring need (2 cores, shared).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(self.graph), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        # sentence-transformers pads each batch to its longest input and cuts at
        # max_seq_length (the file itself says: pad to a fixed 128, cut at 128).
        tokenizer.enable_truncation(max_len)
        pad = tokenizer.padding or {}
        tokenizer.enable_padding(pad_id=int(pad.get("pad_id", 0)), pad_token=str(pad.get("pad_token", "[PAD]")))
        self._tokenizer = tokenizer
        self._input_names = {i.name for i in self._session.get_inputs()}
        # Dynamic int8 quantisation scales activations over the whole input
        # tensor, padding included, so a text's vector would depend on the texts
        # sharing its forward pass: int8 runs each text alone (deterministic;
        # measured faster alone than fp32 is batched, docs/operations/embedding.md).
        self.batch_size = 1 if int8 else batch_size
        super().__init__(path, model_name, dim, max_len)

    def _encode(self, texts: list[str]) -> Matrix:
        # Tokenised once, padded on the right to the longest text; each forward pass is
        # sliced to its own longest text, so padding beyond it never reaches the model.
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        lengths = mask.sum(axis=1)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for group in forward_passes(lengths.tolist(), self.batch_size, TOKENS_PER_PASS):
            idx = np.asarray(group)
            width = int(lengths[idx].max())
            feeds: dict[str, Any] = {"input_ids": ids[idx, :width], "attention_mask": mask[idx, :width]}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
            hidden = self._session.run(None, feeds)[0]
            weights = feeds["attention_mask"][..., None].astype(np.float32)
            out[idx] = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise(out)


def forward_passes(lengths: Sequence[int], max_texts: int, token_budget: int) -> list[list[int]]:
    """Indexes of `lengths` (token counts) grouped into forward passes: longest first, each pass
    at most `max_texts` texts and `token_budget` padded tokens (texts × its longest), never
    empty (a text longer than the budget runs alone)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    passes: list[list[int]] = []
    for i in order:
        current = passes[-1] if passes else None
        # Sorted longest first: the pass's first text is its longest.
        if current is not None and len(current) < max_texts and \
                (len(current) + 1) * lengths[current[0]] <= token_budget:
            current.append(i)
        else:
            passes.append([i])
    return passes
