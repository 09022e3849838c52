"""`python -m lab eval-relevance`: what the relevance model would change in phase 3, measured offline.

Input: phase 3's first five pages per case of each labelled set, with the chunk that
ranked each page and its fused score (`python -m lab eval-kinds --phase 3 --cases
FILE`, one file per set under `--candidates`). For every case the model scores
(question, passage of that chunk) for each candidate (service/relevance/passage.py
cuts the passage as the service would), and then, for k = 3 and 5:

- **rerank**: the first k pages in the model's order (the rest as they were);
- **blend**: by model score − λ × (phase 3's rank − 1), λ chosen on the dev split;
- **gated**: rerank only where the model scores phase 3's first page below τ (one
  forward pass for every query, k for the unsure ones), τ chosen on the dev split.

λ and τ are chosen leave-one-corpus-out: for each labelled set, on the dev split of
the other five, then applied to its own test split. The model never saw any of these
corpora (it is trained on the pool, lab/relevance/pool.py).

Also: the ROC AUC of the model's score of phase 3's first page for "first page right"
(a decision signal) beside the fused score's, and the time of one forward pass of k
pairs on one thread. Results: `--out` (JSON and Markdown).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.evaluation.kinds import (
    RANKED_KINDS,
    KindScore,
    corpus_dir,
    corpus_of,
    first_relevant_rank,
    read_corpus,
    score_kind,
)
from service.settings import PROJECT_ROOT, Settings

CANDIDATES = PROJECT_ROOT / "lab" / "results" / "relevance" / "candidates"
QUERIES = PROJECT_ROOT / "bench" / "queries"
DEPTHS = (3, 5)
LAMBDAS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
KINDS = RANKED_KINDS


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Case:
    corpus: str
    id: str
    split: str
    kind: str
    query: str
    pages: frozenset[str]
    ranking: tuple[str, ...]
    fused: tuple[float, ...]
    model: tuple[float, ...]
    """The model's score of each page of `ranking` (its best chunk's passage)."""


def reorder(case: Case, k: int, key: Callable[[int], float]) -> list[str]:
    """The first k pages sorted by `key(position)` high to low (ties keep phase 3's order)."""
    head = sorted(range(min(k, len(case.ranking))), key=lambda i: (-key(i), i))
    return [case.ranking[i] for i in head] + list(case.ranking[k:])


def strategies(case: Case, k: int, lam: float, tau: float) -> dict[str, list[str]]:
    return {
        "phase 3": list(case.ranking),
        "rerank": reorder(case, k, lambda i: case.model[i]),
        "blend": reorder(case, k, lambda i: case.model[i] - lam * i),
        "gated": list(case.ranking) if not case.model or case.model[0] >= tau else reorder(case, k, lambda i: case.model[i]),
    }


def kind_score(cases: Sequence[Case], orders: Sequence[Sequence[str]]) -> KindScore:
    """Top-1 and top-3 of one order per case, as eval-kinds scores a kind (0 for no case)."""
    return score_kind([first_relevant_rank(o, c.pages) for c, o in zip(cases, orders, strict=True)])


def top_row(cases: Sequence[Case], orders: Sequence[Sequence[str]]) -> dict[str, float]:
    score = kind_score(cases, orders)
    return {"top1": round(score.top1, 4), "top3": round(score.top3, 4)}


def choose(cases: Sequence[Case], k: int, options: Sequence[float], order_of: Callable[[Case, int, float], list[str]]) -> float:
    """The option with the best top-1 on `cases` (ties: the first, the smaller change)."""
    return max(options, key=lambda v: (kind_score(cases, [order_of(c, k, v) for c in cases]).top1, -options.index(v)))


def evaluate(cases: Sequence[Case]) -> dict[str, Any]:
    """Tables per depth: pooled test per kind and per corpus, with λ and τ chosen per corpus on
    the other corpora's dev split."""
    corpora = sorted({c.corpus for c in cases})
    out: dict[str, Any] = {}
    for k in DEPTHS:
        chosen: dict[str, dict[str, float]] = {}
        test_orders: dict[str, dict[str, list[str]]] = {}
        for corpus in corpora:
            dev = [c for c in cases if c.split == "dev" and c.corpus != corpus]
            taus = [*sorted({c.model[0] for c in dev if c.model}), float("inf")]
            tau_grid = [taus[int(q * (len(taus) - 1))] for q in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)]
            lam = choose(dev, k, LAMBDAS, lambda c, k, v: strategies(c, k, v, 0.0)["blend"])
            tau = choose(dev, k, tau_grid, lambda c, k, v: strategies(c, k, 0.0, v)["gated"])
            chosen[corpus] = {"lambda": lam, "tau": round(tau, 4)}
            for case in (c for c in cases if c.split == "test" and c.corpus == corpus):
                test_orders[case.id] = strategies(case, k, lam, tau)
        test = [c for c in cases if c.split == "test"]
        names = ["phase 3", "rerank", "blend", "gated"]
        table: dict[str, Any] = {"chosen": chosen, "per_kind": {}, "per_corpus": {}}
        for label, group in [*((kind, [c for c in test if c.kind == kind]) for kind in KINDS), ("all", test)]:
            if group:
                table["per_kind"][label] = {"n": len(group), **{
                    name: top_row(group, [test_orders[c.id][name] for c in group]) for name in names}}
        for corpus in corpora:
            group = [c for c in test if c.corpus == corpus]
            table["per_corpus"][corpus] = {"n": len(group), **{
                name: top_row(group, [test_orders[c.id][name] for c in group]) for name in names}}
        gated = [c for c in test if c.model and c.model[0] < chosen[c.corpus]["tau"]]
        table["gated_share"] = round(len(gated) / max(1, len(test)), 4)
        # Plain reranking of the dev split too (no choice made on it): the dev gain.
        dev_all = [c for c in cases if c.split == "dev"]
        table["dev"] = {"n": len(dev_all), **{name: round(kind_score(dev_all, [strategies(c, k, 0.0, 0.0)[name] for c in dev_all]).top1, 4)
                                              for name in ("phase 3", "rerank")}}
        out[f"k={k}"] = table
    out["auc_first_page"] = first_page_auc(cases)
    return out


def first_page_auc(cases: Sequence[Case]) -> dict[str, Any]:
    """ROC AUC for "phase 3's first page is right": the model's score of it, the fused score."""
    from sklearn.metrics import roc_auc_score

    out: dict[str, Any] = {}
    for split in ("dev", "test", "all"):
        group = [c for c in cases if c.ranking and c.model and (split == "all" or c.split == split)]
        labels = [int(c.ranking[0] in c.pages) for c in group]
        if len(set(labels)) < 2:
            continue
        out[split] = {"n": len(group), "right": sum(labels),
                      "model": round(float(roc_auc_score(labels, [c.model[0] for c in group])), 4)}
        if all(c.fused for c in group):
            out[split]["fused_score"] = round(float(roc_auc_score(labels, [c.fused[0] for c in group])), 4)
    return out


def load_cases(candidates: Path, queries: Path, settings: Settings, score: Callable[[str, list[str]], list[float]],
               passages: dict[str, list[str]], whole_sections: bool = False) -> list[Case]:
    """Every ranked case of every set with a candidates file, scored by the model (each case's
    passages are kept in `passages`, by case id). `whole_sections`: each candidate's heading path
    and whole section, not the relevance model's passage."""
    from lab.relevance.late_interaction import whole_section
    from service.flags import load_flags
    from service.relevance.passage import passage

    flags = load_flags(settings.flags_file)
    out: list[Case] = []
    for path in sorted(candidates.glob("*.json")):
        labelled = queries / f"{path.stem}.yaml"
        corpus = corpus_of(labelled)
        _, chunks = read_corpus(corpus_dir(corpus, settings, None), flags)
        by_id = {(c.doc_slug, c.chunk_index): c for c in chunks}
        rows = json.loads(path.read_text(encoding="utf-8"))["3"]
        for row in rows:
            ranking = row["ranking"]
            texts = []
            for slug, index in zip(ranking, row["chunks"], strict=True):
                chunk = by_id.get((slug, index))
                if chunk is None:
                    texts.append(slug)
                elif whole_sections:
                    texts.append(whole_section(chunk))
                else:
                    texts.append(passage(chunk.header_path, chunk.content))
            scores = score(row["query"], texts) if texts else []
            passages[row["id"]] = texts
            out.append(Case(corpus=corpus, id=row["id"], split=row["split"], kind=row["kind"], query=row["query"],
                            pages=frozenset(row["pages"]), ranking=tuple(ranking),
                            fused=tuple(row.get("scores", ())), model=tuple(scores)))
        say(f"{path.stem} ({corpus}): {len(rows)} cases scored")
    return out


def time_forward(score: Callable[[str, list[str]], list[float]], cases: Sequence[Case],
                 passages: Mapping[str, Sequence[str]], runs: int = 60) -> dict[str, Any]:
    """Median wall time (ms) of one forward pass of k pairs, k = 1, 3 and 5, on one thread,
    over the first `runs` cases with five candidates (one warm-up pass first)."""
    import os

    chosen = [c for c in cases if len(passages.get(c.id, ())) >= max(DEPTHS)][:runs]
    out: dict[str, Any] = {"cases": len(chosen), "load_average": round(os.getloadavg()[0], 2)}
    if chosen:
        score(chosen[0].query, list(passages[chosen[0].id]))
    for k in (1, *DEPTHS):
        times = []
        for case in chosen:
            t0 = time.perf_counter()
            score(case.query, list(passages[case.id][:k]))
            times.append(time.perf_counter() - t0)
        out[f"{k} pairs"] = round(1000 * statistics.median(times), 2) if times else None
    return out


def format_tables(results: Mapping[str, Any]) -> str:
    lines: list[str] = []
    for depth in DEPTHS:
        table = results[f"k={depth}"]
        lines += [f"### k = {depth} (test splits pooled; top-1 / top-3 %)", "",
                  "| | n | phase 3 | rerank | blend | gated |", "|---|--:|--:|--:|--:|--:|"]
        for section in ("per_kind", "per_corpus"):
            for label, row in table[section].items():
                cells = " | ".join(f"{100 * row[n]['top1']:.1f} / {100 * row[n]['top3']:.1f}"
                                   for n in ("phase 3", "rerank", "blend", "gated"))
                lines.append(f"| {label} | {row['n']} | {cells} |")
        chosen = ", ".join(f"{c}: λ {v['lambda']:g}, τ {v['tau']:g}" for c, v in table["chosen"].items())
        lines += ["", f"Chosen on the other corpora's dev split: {chosen}. Gated: "
                  f"{100 * table['gated_share']:.1f} % of test queries reranked. Dev top-1 (all "
                  f"{table['dev']['n']}): phase 3 {100 * table['dev']['phase 3']:.1f} %, rerank "
                  f"{100 * table['dev']['rerank']:.1f} %.", ""]
    auc = results["auc_first_page"]
    lines.append("First page right, ROC AUC: " + "; ".join(
        f"{split} (n {v['n']}): model {v['model']:.3f}" + (f", fused score {v['fused_score']:.3f}" if "fused_score" in v else "")
        for split, v in auc.items()))
    if "model" in results:
        model = results["model"]
        lines += ["", f"Model: {model['file']} ({model['layers']} layers, {model['precision']}, sha256 "
                  f"{model['sha256']}…); resident memory it adds, loaded and run once: {model['memory_mb']} MB."]
    if "timing" in results:
        timing = results["timing"]
        lines += ["", "One forward pass, one thread, median ms over " + f"{timing['cases']} queries (load average "
                  f"{timing['load_average']}): " + ", ".join(
                      f"{k} {v:.1f}" for k, v in timing.items() if k.endswith("pairs") and v is not None)]
    return "\n".join(lines)


def add_parser(sub: Any) -> None:
    from service.relevance.model import MODEL_DIR

    p = sub.add_parser(
        "eval-relevance", help="rerank phase 3's candidates with the relevance model, offline, per kind and corpus",
        description="Score phase 3's first five pages per labelled case (eval-kinds --cases files) with the "
        "relevance model and print top-1/top-3 with and without reranking, the first page's ROC AUC and "
        "the forward pass's time.",
    )
    p.add_argument("--candidates", type=Path, default=CANDIDATES, help="eval-kinds --phase 3 --cases files, one per set")
    p.add_argument("--queries", type=Path, default=QUERIES, help="the labelled sets (bench/queries)")
    p.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    p.add_argument("--out", type=Path, help="write the results as JSON (and .md beside it)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    import onnxruntime  # noqa: F401  (the service has both loaded already: the embedding backend's)
    import psutil
    import tokenizers  # noqa: F401

    from service.relevance.model import RelevanceModel, RelevanceModelError

    process = psutil.Process()
    before = process.memory_info().rss
    try:
        model = RelevanceModel(args.model_dir, threads=1)
    except RelevanceModelError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    model.score("warm up", ["the first pass allocates the session's buffers"] * max(DEPTHS))
    memory_mb = round((process.memory_info().rss - before) / 2**20, 1)
    passages: dict[str, list[str]] = {}
    cases = load_cases(args.candidates, args.queries, settings, model.score, passages)
    if not cases:
        print(f"error: no candidates files in {args.candidates}", file=sys.stderr)
        return 2
    results = evaluate(cases)
    results["model"] = {"dir": str(args.model_dir), **model.info.describe(), "memory_mb": memory_mb}
    results["timing"] = time_forward(model.score, cases, passages)
    text = format_tables(results)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        args.out.with_suffix(".md").write_text(text + "\n", encoding="utf-8")
        say(f"wrote {args.out}")
    return 0
