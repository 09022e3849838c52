"""Two baselines computed independently of the service's scorers.

- BM25: bm25s (method "lucene", k1 = 1.5, b = 0.75), its English stopword
  list and a Snowball English stemmer (PyStemmer), over title + " " + text.
- Dense: all-MiniLM-L6-v2 through plain sentence-transformers (cut at the
  model window, no chunking), exact cosine top-k with numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lab.evaluation.beir import BeirDataset
from service.evaluation.cache import CachedEmbedder

BM25_K1 = 1.5
BM25_B = 0.75


def _doc_text(title: str, text: str) -> str:
    return f"{title} {text}".strip()


def bm25_rankings(dataset: BeirDataset, k: int) -> dict[str, list[str]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    ids = [d.doc_id for d in dataset.corpus]
    corpus_tokens = bm25s.tokenize(
        [_doc_text(d.title, d.text) for d in dataset.corpus], stopwords="en",
        stemmer=stemmer, show_progress=False,
    )
    retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B, method="lucene")
    retriever.index(corpus_tokens, show_progress=False)
    qids = list(dataset.queries)
    out: dict[str, list[str]] = {}
    for qid in qids:
        tokens = bm25s.tokenize(
            [dataset.queries[qid]], stopwords="en", stemmer=stemmer, show_progress=False,
            return_ids=False,
        )
        if not tokens or not tokens[0]:
            out[qid] = []
            continue
        docs, scores = retriever.retrieve(tokens, k=min(k, len(ids)), show_progress=False)
        out[qid] = [ids[int(i)] for i, s in zip(docs[0], scores[0], strict=True) if s > 0]
    return out


def dense_rankings(
    dataset: BeirDataset, embedder: CachedEmbedder, k: int, batch: int = 64,
    progress: object = None,
) -> dict[str, list[str]]:
    ids = [d.doc_id for d in dataset.corpus]
    texts = [_doc_text(d.title, d.text) for d in dataset.corpus]
    parts = []
    for start in range(0, len(texts), batch):
        parts.append(embedder.embed_truncated_many(texts[start : start + batch]))
        if callable(progress):
            progress(min(start + batch, len(texts)), len(texts))
    docs = np.vstack(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)
    qids = list(dataset.queries)
    queries = embedder.embed_truncated_many([dataset.queries[q] for q in qids])
    sims = queries @ docs.T  # both normalised: cosine
    out: dict[str, list[str]] = {}
    for row, qid in enumerate(qids):
        top = _top_k(sims[row], k)
        out[qid] = [ids[i] for i in top]
    return out


def _top_k(scores: Sequence[float] | np.ndarray, k: int) -> list[int]:
    arr = np.asarray(scores)
    k = min(k, len(arr))
    part = np.argpartition(-arr, k - 1)[:k] if k < len(arr) else np.arange(len(arr))
    return [int(i) for i in sorted(part, key=lambda i: (-arr[i], i))]
