"""`adapt-model` on a tiny corpus: pairs are mined from the pages, training runs
offline from the packaged model, and the result is a model the service loads
under its own (versioned) name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lab.adapt.pairs import batches, mine_pairs
from lab.adapt.train import MANIFEST, TrainOptions, next_version_dir, train
from service.embedding.torch_backend import TorchEmbedder
from service.ingest.chunker import chunk_document
from service.ingest.tokens import default_model_dir
from tests.integration.test_embeddings_index import DOCS


def test_pairs_come_from_headings_titles_and_keywords_and_batches_never_repeat_a_page() -> None:
    chunks = [c for d in DOCS for c in chunk_document(d)]
    pairs = mine_pairs(DOCS, chunks)
    anchors = {p.anchor for p in pairs}
    assert {"Editing links", "Quick Capture", "shortcuts", "inbox"} <= anchors
    editing = next(p for p in pairs if p.anchor == "Editing links")
    assert editing.positive.startswith("Quick Links > Editing links: Right-click a link")
    for batch in batches(pairs, 3):
        assert len({p.page for p in batch}) == len(batch) >= 2


def test_adaptation_on_a_tiny_corpus_produces_a_loadable_versioned_model(tmp_path: Path) -> None:
    chunks = [c for d in DOCS for c in chunk_document(d)]
    pairs = mine_pairs(DOCS, chunks)
    out = next_version_dir(tmp_path, "all-minilm-l6-v2-tiny")
    assert out.name == "all-minilm-l6-v2-tiny-v1"
    report = train(default_model_dir(), pairs, out, TrainOptions(batch_size=3, max_seq_length=64),
                   progress=lambda _line: None, manifest={"corpus": "tiny"})
    assert report.steps >= 1 and report.pairs == len(pairs) and report.max_rss_mb > 0
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["corpus"] == "tiny" and manifest["report"]["steps"] == report.steps
    assert next_version_dir(tmp_path, "all-minilm-l6-v2-tiny").name == "all-minilm-l6-v2-tiny-v2"

    adapted, base = TorchEmbedder(out), TorchEmbedder()
    assert adapted.model_name == "all-minilm-l6-v2-tiny-v1" and adapted.dim == base.dim == 384
    vector = adapted.embed_query("change the label of a shortcut")
    assert vector.shape == (384,) and np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)
    # Training moved the weights: not the base model under another name.
    assert not np.allclose(vector, base.embed_query("change the label of a shortcut"), atol=1e-4)
