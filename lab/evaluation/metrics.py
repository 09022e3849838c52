"""The four reported metrics, computed with ranx (an established implementation).

ranx's `ndcg` uses the graded judgment as the gain (Järvelin & Kekäläinen's
linear gain, as trec_eval/pytrec_eval do); recall and MRR count any judgment
> 0 as relevant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

METRICS: tuple[str, ...] = ("ndcg@10", "recall@10", "recall@100", "mrr@10")

Ranking = Mapping[str, Sequence[str]]
"""Query id → document ids, best first."""


def evaluate(qrels: Mapping[str, Mapping[str, int]], rankings: Ranking) -> dict[str, float]:
    """Mean of each metric over every judged query (a query with no results scores 0)."""
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    qrels_dict = {q: {d: int(r) for d, r in docs.items() if r > 0} for q, docs in qrels.items()}
    qrels_dict = {q: docs for q, docs in qrels_dict.items() if docs}
    # Scores that preserve the given order exactly (ranx sorts by score).
    run_dict: dict[str, dict[str, float]] = {}
    for qid in qrels_dict:
        ranked = list(dict.fromkeys(rankings.get(qid, ())))
        run_dict[qid] = {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}
        if not run_dict[qid]:
            run_dict[qid] = {"__none__": 0.0}  # ranx needs one entry; never relevant
    scores = ranx_evaluate(Qrels(qrels_dict), Run(run_dict), list(METRICS), make_comparable=True)
    return {name: round(float(scores[name]), 4) for name in METRICS}
