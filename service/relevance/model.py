"""Load and run the relevance model: ONNX Runtime, one thread, no PyTorch.

The model directory holds the graph, the tokenizer and `manifest.json`, all
written by `python -m lab train-relevance` (lab/relevance/command.py). Both files'
sha256 are checked against the manifest before anything is loaded: the graph is
read once, hashed, and those very bytes are given to ONNX Runtime, so what runs is
what was checked. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from service.ingest.tokens import ModelNotFoundError

MODEL_DIR = Path(__file__).parent / "model"
"""The model shipped with the service (package data)."""
MANIFEST = "manifest.json"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "logits"
FORMAT = 1


class RelevanceModelError(ModelNotFoundError):
    """The model directory is missing a file, or a file is not the one its manifest names
    (a model that cannot be used stops start-up, as a missing embedding model does)."""


@dataclass(frozen=True)
class ModelInfo:
    """What /ready shows of the model in use."""

    file: str
    sha256: str
    layers: int
    max_length: int
    precision: str

    def describe(self) -> dict[str, Any]:
        return {"file": self.file, "sha256": self.sha256[:12], "layers": self.layers,
                "max_length": self.max_length, "precision": self.precision}


def read_manifest(model_dir: Path) -> dict[str, Any]:
    path = model_dir / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RelevanceModelError(f"relevance model manifest not found: {path}") from None
    except ValueError as err:
        raise RelevanceModelError(f"{path}: not JSON ({err})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RelevanceModelError(f"{path}: not a relevance model manifest of format {FORMAT}")
    return manifest


def _checked_bytes(model_dir: Path, entry: Any, what: str) -> tuple[str, bytes]:
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str) or not isinstance(entry.get("sha256"), str):
        raise RelevanceModelError(f"{model_dir / MANIFEST}: no {what} file and sha256")
    path = model_dir / entry["file"]
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RelevanceModelError(f"relevance model {what} not found: {path}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise RelevanceModelError(
            f"{path}: sha256 {digest} is not the manifest's {entry['sha256']}: refusing to load it "
            "(rebuild the model with `python -m lab train-relevance`)"
        )
    return digest, data


class RelevanceModel:
    """Scores (question, passage) pairs: higher is more likely to answer the question."""

    def __init__(self, model_dir: Path = MODEL_DIR, *, threads: int = 1) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        manifest = read_manifest(model_dir)
        graph = manifest.get("model")
        digest, data = _checked_bytes(model_dir, graph, "graph")
        _, tokenizer_json = _checked_bytes(model_dir, manifest.get("tokenizer"), "tokenizer")
        assert isinstance(graph, dict)  # checked by _checked_bytes
        self.info = ModelInfo(file=str(graph["file"]), sha256=digest, layers=int(graph["layers"]),
                              max_length=int(graph["max_length"]), precision=str(graph.get("precision", "")))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # No busy-waiting between calls: the cores are the event loop's and the keyword scoring's too.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
        tokenizer.enable_truncation(self.info.max_length, strategy="longest_first")
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One logit per passage, in one forward pass."""
        if not passages:
            return []
        encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        feeds = {
            "input_ids": np.asarray([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.asarray([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.asarray([e.type_ids for e in encodings], dtype=np.int64),
        }
        logits = self._session.run([OUTPUT], feeds)[0]
        return [float(x) for x in np.asarray(logits).reshape(-1)]
