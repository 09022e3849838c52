r"""Exploration for issue #19 (not part of the service): representation, fusion and
expansion variants computed in memory over one indexed corpus, scored per kind.

    .venv/bin/python -m lab.experiments.paraphrase_experiments bench/queries/seed.yaml ['^rep max\(body,sentence']
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from lab.evaluation.kinds import (
    corpus_dir,
    corpus_of,
    open_session,
    page_ranking,
    ranked_cases,
    summarise,
)
from service.db.server import run_with_database
from service.evaluation.labelled import load_query_set
from service.flags import load_flags
from service.ingest.indexer import passage_context
from service.ingest.parse import plain_text, sentences
from service.normalize.text import rewrite_for_embedding
from service.scoring.chunks import dedupe_per_document
from service.scoring.fusion import FusionMethod
from service.scoring.hybrid import fuse_evidence
from service.scoring.semantic import SemanticHit
from service.settings import load_settings


def first_sentence(text: str, words: int = 40) -> str:
    parts = sentences(" ".join(text.split()))
    return " ".join((parts[0] if parts else "").split()[:words])


async def main(dsn: str, path: Path) -> None:
    settings = load_settings()
    flags = load_flags(settings.flags_file)
    corpus = corpus_of(path)
    cases = ranked_cases(load_query_set(path))
    session, pool = await open_session(dsn, settings, flags, corpus_dir(corpus, settings, None), corpus)
    try:
        await run(session, cases, flags)
    finally:
        await pool.close()


async def run(session: Any, cases: list[Any], flags: Any) -> None:
    pipe = session.pipeline
    emb = session.embedder
    idx = pipe.require_indexes()
    chunks = sorted(idx.chunks_by_id.values(), key=lambda c: (c.doc_slug, c.chunk_index))
    docs = idx.documents_by_slug
    body = emb.embed_passages([(passage_context(c.header_path, c.title), c.content) for c in chunks])
    section = emb.embed_passages([(c.header_path or c.title, first_sentence(c.content)) for c in chunks])
    first_of: dict[str, int] = {}
    for i, c in enumerate(chunks):
        first_of.setdefault(c.doc_slug, i)
    page_slugs = list(first_of)
    page = emb.embed_passages([
        (docs[s].title, docs[s].summary or first_sentence(docs[s].content)) for s in page_slugs
    ])
    page_sim_index = np.array([first_of[s] for s in page_slugs])
    # Sentence vectors: a chunk scores by its best sentence (with its heading as context).
    sentence_texts: list[tuple[str, str]] = []
    sentence_chunk: list[int] = []
    for i, c in enumerate(chunks):
        for sentence in sentences(" ".join(plain_text(c.content).split())) or [c.title]:
            sentence_texts.append((passage_context(c.header_path, c.title), sentence))
            sentence_chunk.append(i)
    sentence_vectors = emb.embed_passages(sentence_texts)
    sentence_of = np.array(sentence_chunk)
    sentence_words = np.array([len(text.split()) for _, text in sentence_texts])
    sentences_per_chunk = np.bincount(sentence_of, minlength=len(chunks))
    print(f"{len(sentence_texts)} sentences in {len(chunks)} chunks", file=sys.stderr)
    doc_of_chunk = np.array([page_slugs.index(c.doc_slug) for c in chunks])
    page_chars = {slug: len(docs[slug].content.strip()) for slug in page_slugs}
    # The best of many chunks is high by chance: a page's chunk count, for a size discount.
    log_chunks_of_page = np.log(np.bincount(doc_of_chunk)[doc_of_chunk])

    variants: dict[str, dict[str, list[str]]] = {}

    wanted = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None  # optional variant-name filter

    def put(name: str, cid: str, ranking: list[str]) -> None:
        if wanted is None or wanted.search(name) or name == "base (body)":
            variants.setdefault(name, {})[cid] = ranking

    def hits_from(sim: np.ndarray, k: int = 50) -> list[SemanticHit]:
        order = np.argsort(-sim)[:k]
        return [SemanticHit(chunk_id=str(i), doc_slug=chunks[i].doc_slug, chunk_index=chunks[i].chunk_index,
                            category=chunks[i].category, title=chunks[i].title, header_path=chunks[i].header_path,
                            chunk_hash=chunks[i].chunk_hash, similarity=float(sim[i])) for i in order]


    def fused(query: Any, keyword: list[Any], hits: list[SemanticHit], w: tuple[float, float],
              method: FusionMethod = FusionMethod.weighted) -> list[str]:
        ev = fuse_evidence(keyword, hits, method=method, weights=w, query_type=query.query_type,
                           rrf_k=60, doc_info=idx.doc_info, chunk_text=idx.chunk_text,
                           page_prior=pipe.hybrid().page_prior(flags, query)).ranking
        if not query.is_multi_intent:
            ev, _ = dedupe_per_document(ev, 2)
        return page_ranking(e.doc_slug for e in ev)

    from service.scoring.fusion import fusion_weights

    for case in cases:
        query, notes = pipe.normalise(case.query, flags)
        text = rewrite_for_embedding(query.raw, pipe.synonyms.phrases, pipe.synonyms.words)
        q = emb.embed_query(text)
        keyword = idx.chunks.search(query.tokens, limit=50, notes=notes, lexical=flags.lexical)
        w = fusion_weights(flags, query.query_type)
        s_body = body @ q
        s_sec = section @ q
        s_page_doc = page @ q
        s_page = np.full(len(chunks), -1.0)
        s_page[page_sim_index] = s_page_doc
        s_page_all = s_page_doc[doc_of_chunk]
        overlap = 0.0
        if keyword and query.tokens:
            overlap = len(set(keyword[0].matched_terms)) / len(query.tokens)
        put("base (body)", case.id, fused(query, keyword, hits_from(s_body), w))
        # A page with almost no text answers little: a length prior on the fused page scores.
        base_ev = fuse_evidence(keyword, hits_from(s_body), method=FusionMethod.weighted, weights=w,
                                query_type=query.query_type, rrf_k=60, doc_info=idx.doc_info,
                                chunk_text=idx.chunk_text).ranking
        for floor in (100, 200, 400):
            for power in (0.25, 0.5, 1.0):
                best: dict[str, float] = {}
                for e in base_ev:
                    prior = min(1.0, max(page_chars[e.doc_slug], 1) / floor) ** power
                    best[e.doc_slug] = max(best.get(e.doc_slug, 0.0), e.score * prior)
                put(f"length prior {floor} chars ^{power}", case.id, sorted(best, key=lambda d: -best[d])[:10])
        put("semantic only body", case.id, page_ranking(h.doc_slug for h in hits_from(s_body)))
        s_sentence = np.full(len(chunks), -1.0)
        sentence_sims = sentence_vectors @ q
        np.maximum.at(s_sentence, sentence_of, sentence_sims)

        def long_sentence(words: int, sims: np.ndarray = sentence_sims) -> np.ndarray:
            """A chunk's best sentence among those of at least `words` words (short fragments out)."""
            out = np.full(len(chunks), -1.0)
            keep = sentence_words >= words
            np.maximum.at(out, sentence_of[keep], sims[keep])
            return out
        combos = {
            "max(body,sentence)": np.maximum(s_body, s_sentence),
            **{f"max(body,sentence) chunks>={n} sentences": np.where(
                sentences_per_chunk >= n, np.maximum(s_body, s_sentence), s_body) for n in (4, 6, 8)},
            **{f"max(body,sentence-{d})": np.maximum(s_body, s_sentence - d) for d in (0.02, 0.05)},
            **{f"max(body,sentence>={n} words)": np.maximum(s_body, long_sentence(n)) for n in (6, 8, 12, 16)},
            **{f"body-{b}*log(page chunks)": s_body - b * log_chunks_of_page for b in (0.005, 0.01, 0.02, 0.03)},
            "sentence": s_sentence,
            "body+sentence": (s_body + s_sentence) / 2,
            "max(body,sec)": np.maximum(s_body, s_sec),
            "max(body,page1)": np.maximum(s_body, s_page),
            "max(body,sec,page1)": np.maximum(np.maximum(s_body, s_sec), s_page),
            "body+0.5max(sec,pageall)": (s_body + 0.5 * np.maximum(s_sec, s_page_all)) / 1.5,
            "body+0.5page_all": (s_body + 0.5 * s_page_all) / 1.5,
        }
        base_hits = hits_from(s_body)
        # pseudo-relevance feedback: heading words and keywords of the best semantic hits
        for depth in (1, 3):
            extra: list[str] = []
            for h in base_hits[:depth]:
                head = h.header_path.split(" > ")[-1] if h.header_path else h.title
                words = " ".join([head, *chunks[int(h.chunk_id)].keywords])
                extra.extend(pipe.normalise(words, flags)[0].tokens)
            tokens = tuple(dict.fromkeys([*query.tokens, *extra]))
            kw2 = idx.chunks.search(tokens, limit=50, notes=notes, lexical=flags.lexical)
            put(f"prf top{depth}", case.id, fused(query, kw2, base_hits, w))
            pm = hits_from(np.maximum(s_body, s_page))
            put(f"prf top{depth} + max(body,page1)", case.id, fused(query, kw2, pm, w))
        # page aggregation: best chunk vs best + half of the second
        ev = fuse_evidence(keyword, base_hits, method=FusionMethod.weighted, weights=w,
                           query_type=query.query_type, rrf_k=60, doc_info=idx.doc_info, chunk_text=idx.chunk_text).ranking
        agg: dict[str, list[float]] = {}
        for e in ev:
            agg.setdefault(e.doc_slug, []).append(e.score)
        for a in (0.25, 0.5):
            sc = {d: v[0] + a * (v[1] if len(v) > 1 else 0.0) for d, v in agg.items()}
            put(f"agg best+{a}*second", case.id, sorted(sc, key=lambda d: -sc[d])[:10])
        for name, sim in combos.items():
            hits = hits_from(sim)
            put(f"rep {name}", case.id, fused(query, keyword, hits, w))
            put(f"rep {name} sem-only", case.id, page_ranking(h.doc_slug for h in hits))
            put(f"rep {name} rrf", case.id, fused(query, keyword, hits, w, FusionMethod.rrf))
            for thr in (0.34, 0.5):
                for low in (0.1, 0.2):
                    wq = (low, 1 - low) if overlap < thr else w
                    put(f"rep {name} overlap<{thr} kw={low}", case.id, fused(query, keyword, hits, wq))
        put("body rrf", case.id, fused(query, keyword, base_hits, w, FusionMethod.rrf))
        for thr in (0.34, 0.5):
            for low in (0.0, 0.1, 0.2):
                wq = (low, 1 - low) if overlap < thr else w
                put(f"body overlap<{thr} kw={low}", case.id, fused(query, keyword, base_hits, wq))

    rows = []
    for name, rankings in variants.items():
        table = summarise(cases, rankings)
        rows.append((name, table))
    print("| variant | dev para t1 | dev para t3 | dev q t1 | dev kw t1 | dev typo t1 | dev all t1 | dev all mrr |"
          " test para t1 | test para t3 | test q t1 | test kw t1 | test all t1 | test all mrr |")
    for name, t in rows:
        d, te = t["dev"], t["test"]

        def g(tab: Any, k: str, f: str) -> str:
            s = tab.get(k)
            return "-" if s is None else f"{getattr(s, f):.3f}"
        print(f"| {name} | {g(d,'paraphrase','top1')} | {g(d,'paraphrase','top3')} | {g(d,'question','top1')} | "
              f"{g(d,'keyword','top1')} | {g(d,'typo','top1')} | {g(d,'all','top1')} | {g(d,'all','mrr10')} | "
              f"{g(te,'paraphrase','top1')} | {g(te,'paraphrase','top3')} | {g(te,'question','top1')} | "
              f"{g(te,'keyword','top1')} | {g(te,'all','top1')} | {g(te,'all','mrr10')} |")


if __name__ == "__main__":
    target = Path(sys.argv[1])
    settings = load_settings()
    run_with_database(settings, lambda dsn: main(dsn, target))
