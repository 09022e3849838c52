"""Why two of issue 34's gates cannot both be met with the decision's signals: the arithmetic.

Usage:
    .venv/bin/python -m lab.experiments.gate_tradeoff \
        --set bench/queries/seed.yaml=/tmp/loco/seed.json --set bench/queries/logseq.yaml=/tmp/loco/logseq.json ... \
        [--out lab/results/decisions/gate-tradeoff-DATE.txt]

Each `--set` is a labelled set and the signals file `eval-decisions --cross-corpus --signals`
wrote for its corpus (the service's recorded runs; nothing is served here). For each corpus in
turn the portable fit is made on the other corpora's dev splits (`decisions.fit`, as the
cross-corpus table does) and replayed on the held-out test split at phase 3:

1. the fit's own points, then its answer point raised to a floor (0.90 … 0.975): pooled right
   outcome, wrong answers, needless clarifications, and each corpus's wrong answers. Raising the
   floor is the only lever a threshold has on a corpus's wrong answers, and every step that
   lowers them raises the needless clarifications;
2. the oracle: on the pooled test splits themselves (hindsight, not a policy), the lowest single
   threshold on p whose answers keep ≤ 5 % wrong, and how many in-domain queries with a right,
   clear first page it still leaves unanswered; with ROC AUC of p against "the first page is
   right". If even hindsight leaves more than 5 % unanswered, no threshold on p meets both gates;
3. other separators on the same runs (`--separators`), each fitted on the other corpora's dev
   splits and scored by ROC AUC on the held-out test splits: the logistic model at other
   regularisation strengths, with two more signals the runs hold (where the fused first page
   stands in each leg's own ranking), and gradient-boosted trees. If none separates clearly
   better than p, the gates wait for a new signal (a reranker's relevance), not a new fit.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lab.experiments.signals import SignalsError, read_signals
from service.decide.calibration import CORPUS_SCALED, FEATURES, CalibrationModel
from service.evaluation.cross_corpus import CorpusRuns, Tally, calibrated_tally, clear_answer
from service.evaluation.decision_metrics import CaseRun, best_threshold, risk_coverage, top_is_right
from service.evaluation.decisions import Collected, calibrated_p, fit, merge
from service.evaluation.labelled import LabelledQuery

FLOORS = (0.90, 0.92, 0.94, 0.95, 0.96, 0.975)
MAX_WRONG = 0.05
PHASE = 3


def load_signals_set(spec: str) -> tuple[list[LabelledQuery], Collected]:
    """`QUERIES.yaml=SIGNALS.json`: a labelled set and the runs collected on its corpus."""
    queries, _, signals = spec.partition("=")
    if not signals:
        raise SystemExit(f"--set {spec}: expected QUERIES.yaml=SIGNALS.json")
    try:
        return read_signals(Path(queries), Path(signals))
    except SignalsError as err:
        raise SystemExit(f"--set {spec}: {err}") from None


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """ROC AUC (scikit-learn's; NaN when only one class is present): the chance a right first
    page's p is above a wrong one's, ties counting half."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores)) if len(set(labels)) == 2 else float("nan")


def at_floor(
    corpora: Sequence[CorpusRuns], fits: Mapping[str, CalibrationModel], floor: float | None,
) -> tuple[Tally, dict[str, Tally]]:
    """Pooled and per-corpus counts on the test splits, each corpus decided by the fit made without
    it, its answer point raised to `floor` (None: the fit's own points)."""
    pooled, per = Tally(), {}
    for corpus in corpora:
        per[corpus.name] = calibrated_tally(corpus, fits[corpus.name], "test", PHASE, floor)
        pooled.add(per[corpus.name])
    return pooled, per


@dataclass(frozen=True)
class Oracle:
    """The lowest single threshold on p, chosen on the test cases themselves, whose answers keep
    ≤ `MAX_WRONG` wrong (None when no threshold does), and what it leaves unanswered."""

    cases: int
    in_domain: int
    clear_right: int
    """In-domain cases to be answered plainly whose first page is right."""
    auc: float
    threshold: float | None = None
    answers: int = 0
    wrong: int = 0
    unanswered: int = 0
    """Of `clear_right`, those below the threshold: needless clarifications at best."""


def oracle(corpora: Sequence[CorpusRuns], fits: Mapping[str, CalibrationModel]) -> Oracle:
    scored = [(calibrated_p(fits[corpus.name], run), case, top_is_right(case, run.ranked))
              for corpus in corpora for case, run, _ in corpus.on_split("test", PHASE)]
    clear_right = [p for p, case, right in scored if clear_answer(case) and right]
    base = Oracle(cases=len(scored), in_domain=sum(case.kind != "out_of_domain" for _, case, _ in scored),
                  clear_right=len(clear_right), auc=auc([p for p, _, _ in scored], [right for _, _, right in scored]))
    best = best_threshold(risk_coverage([(p, True, right) for p, _, right in scored]), MAX_WRONG)
    if best is None:
        return base
    return replace(base, threshold=best.threshold, answers=best.answers, wrong=round(best.risk * best.answers),
                   unanswered=sum(p < best.threshold for p in clear_right))


def _leg_ranks(run: CaseRun, keyword: Sequence[str]) -> list[float]:
    """1 / (1 + rank) of the fused first page in the semantic leg's ranking and in the keyword leg's."""
    top = run.ranked[0] if run.ranked else ""

    def inverse_rank(pages: Sequence[str]) -> float:
        return 1.0 / (1 + list(pages).index(top)) if top in pages else 0.0

    return [inverse_rank(run.semantic_ranked), inverse_rank(keyword)]


def separators(corpora: Sequence[CorpusRuns]) -> list[str]:
    """ROC AUC on the held-out test splits of other models of "the first page is right"."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    used = [name for name in FEATURES if name not in CORPUS_SCALED]

    def rows(corpus: CorpusRuns, split: str, legs: bool) -> tuple[list[list[float]], list[bool]]:
        x, y = [], []
        for case, run, phase2 in corpus.on_split(split, PHASE):
            extra = _leg_ranks(run, phase2.ranked if phase2 else ()) if legs else []
            x.append([run.features[name] for name in used] + extra)
            y.append(top_is_right(case, run.ranked))
        return x, y

    def logistic(c: float) -> Callable[[], Any]:
        return lambda: make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=3000))

    models: dict[str, tuple[bool, Callable[[], Any]]] = {
        **{f"logistic, C = {c}{' (shipped)' if c == 1.0 else ''}": (False, logistic(c))
           for c in (0.03, 0.1, 0.3, 1.0, 3.0)},
        "logistic, C = 1, + each leg's rank of the first page": (
            True, lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))),
        "gradient-boosted trees (scikit-learn defaults)": (
            False, lambda: HistGradientBoostingClassifier(random_state=0)),
        "gradient-boosted trees, + each leg's rank": (True, lambda: HistGradientBoostingClassifier(random_state=0)),
    }
    lines = ["| separator (phase 3, fitted without the corpus it scores) | ROC AUC |", "|---|--:|"]
    for label, (legs, make) in models.items():
        scores: list[float] = []
        labels: list[bool] = []
        for held in corpora:
            train_x: list[list[float]] = []
            train_y: list[bool] = []
            for other in corpora:
                if other is not held:
                    x, y = rows(other, "dev", legs)
                    train_x += x
                    train_y += y
            model = make().fit(np.array(train_x), np.array(train_y))
            x, y = rows(held, "test", legs)
            scores += model.predict_proba(np.array(x))[:, 1].tolist()
            labels += y
        lines.append(f"| {label} | {auc(scores, labels):.3f} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", required=True, help="QUERIES.yaml=SIGNALS.json, one per corpus")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--separators", action="store_true", help="also score other models of the same runs")
    args = parser.parse_args(argv)
    loaded = [load_signals_set(spec) for spec in args.set]
    corpora = [CorpusRuns(name=col.corpus, cases=cases, runs=col.runs) for cases, col in loaded]
    fits = {}
    for i, held in enumerate(corpora):
        others = [j for j in range(len(loaded)) if j != i]
        fits[held.name] = fit(merge([loaded[j][1] for j in others]), [c for j in others for c in loaded[j][0]],
                              f"all but {held.name}", portable=True, max_wrong=MAX_WRONG)
    lines = ["| answer point | right outcome | wrong / answers | needless clarify | wrong answers per corpus |",
             "|---|--:|--:|--:|---|"]
    for floor in (None, *FLOORS):
        pooled, per = at_floor(corpora, fits, floor)
        label = "the fit's own" if floor is None else f"≥ {floor:.3f}"
        lines.append(f"| {label} | {pooled.right / pooled.cases:.1%} | {pooled.wrong / pooled.answers:.1%} "
                     f"({pooled.wrong}/{pooled.answers}) | {pooled.needless / pooled.in_domain:.1%} | "
                     + ", ".join(f"{name} {t.wrong}/{t.answers}" for name, t in per.items()) + " |")
    best = oracle(corpora, fits)
    lines += ["", f"ROC AUC of p (first page right), pooled held-out test cases: {best.auc:.3f} over {best.cases} cases"]
    if best.threshold is not None:
        lines.append(f"oracle: answer iff p ≥ {best.threshold:.3f} keeps {best.wrong}/{best.answers} wrong; it leaves "
                     f"{best.unanswered} of {best.clear_right} right, clear first pages unanswered = "
                     f"{best.unanswered / best.in_domain:.1%} of {best.in_domain} in-domain queries (the gate: ≤ 5 %)")
    if args.separators:
        lines += ["", *separators(corpora)]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
