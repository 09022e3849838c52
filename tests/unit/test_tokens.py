"""Model directory resolution and token counting with the model's tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.ingest.tokens import (
    ModelNotFoundError,
    TokenCounter,
    default_model_dir,
    get_token_counter,
    model_name_for,
)


def test_default_is_bundled_minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMBEDDING_MODEL", raising=False)
    path = default_model_dir()
    assert (path / "config.json").is_file()
    assert model_name_for(path) == "all-MiniLM-L6-v2"


def test_env_names_any_local_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMBEDDING_MODEL", raising=False)
    bundled = default_model_dir()
    monkeypatch.setenv("EMBEDDING_MODEL", str(bundled))
    assert default_model_dir() == bundled


def test_missing_directory_names_the_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    monkeypatch.setenv("EMBEDDING_MODEL", str(missing))
    with pytest.raises(ModelNotFoundError, match="no-such-model"):
        default_model_dir()


def test_directory_without_model_files_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match=r"config\.json"):
        TokenCounter(tmp_path)


def test_counts_word_pieces_without_special_tokens() -> None:
    counter = get_token_counter()
    assert counter.count("") == 0
    assert counter.count("hello") == 1
    # WordPiece splits unknown words; no [CLS]/[SEP] are counted.
    assert counter.count("quicklinksification") > 1
    long_text = "word " * 1000
    assert counter.count(long_text) == 1000  # no truncation at the model window
    assert get_token_counter() is counter  # cached once per process
