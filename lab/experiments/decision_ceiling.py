"""How far the decision can go on the rankings and the p it has (issue 40's gates, in arithmetic).

Reads a leave-one-corpus-out run (`python -m service eval-decisions --cross-corpus --json
TABLE.json --signals …`): its fits (each made without the corpus it decides) and its signals.
On the test splits (or `--split dev`) it replays, at phase 3:

- **as fitted**: each corpus decided by the fit made without it (the table's calibrated row);
- **one set of points, chosen on these cases**: every corpus decided by its leave-one-out fit's
  p but with one answer point, no-match point and ambiguity ratio for all, those with the most right
  outcomes whose wrong answers stay within `--max-wrong` of the answers. Chosen on the very
  cases it is scored on: an upper bound on what any single operating point can do with this p;
- **each corpus its own point, chosen on its cases**: the same, per corpus (each corpus within
  `--max-wrong`): an upper bound on what operating points that adapt to the corpus can do with
  this p, however they are found;
- **a perfect decision on these rankings**: an answer exactly when the first page is right, a
  clarification when an ambiguous case's pages are among the first two or three, no match
  otherwise. No wrong answer, and the most the ranking allows.

Usage:
    .venv/bin/python -m lab.experiments.decision_ceiling --table LOCO/table.json \
        --set bench/queries/seed.yaml=LOCO/seed.json ... [--out FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from lab.experiments.gate_tradeoff import load_signals_set
from service.decide.calibration import CalibrationModel
from service.decide.calibration_fit import AMBIGUITY_GRID
from service.decide.decider import replayed_status
from service.evaluation.cross_corpus import CorpusRuns, Tally, clear_answer, tally
from service.evaluation.decision_metrics import CaseRun, clarification_is_right, top_is_right
from service.evaluation.decisions import calibrated_p
from service.evaluation.labelled import LabelledQuery
from service.flags import DecisionFlags, DecisionPoint

PHASE = 3
GRID = tuple(round(0.02 + 0.02 * i, 2) for i in range(49))
"""Answer and no-match points tried: 0.02 … 0.98, finer than the fit's own grid; the ambiguity
ratio from the fit's (`calibration_fit.AMBIGUITY_GRID`)."""


@dataclass(frozen=True)
class Replayable:
    corpus: str
    case: LabelledQuery
    run: CaseRun
    p: float
    point: DecisionPoint


def load(table_path: Path, specs: Sequence[str], split: str) -> list[Replayable]:
    """Every case of `split` at phase 3 with its p and points under the fit made without its corpus."""
    fits = json.loads(table_path.read_text(encoding="utf-8"))["fits"]
    rows: list[Replayable] = []
    for spec in specs:
        cases, collected = load_signals_set(spec)
        model = msgspec.convert(fits[collected.corpus], CalibrationModel)
        point = model.points(DecisionFlags()).at(PHASE)
        for case, run, _ in CorpusRuns(collected.corpus, cases, collected.runs).on_split(split, PHASE):
            rows.append(Replayable(collected.corpus, case, run, calibrated_p(model, run), point))
    return rows


Points = tuple[float, float, float]
"""(answer p, no-match p, ambiguity ratio)"""


def replay(rows: Sequence[Replayable], points: Points | None = None) -> Tally:
    total = Tally()
    for row in rows:
        point = row.point
        if points is not None:
            point = msgspec.structs.replace(point, answer_p=points[0], no_match_p=points[1], ambiguity_ratio=points[2])
        status, shown, options = replayed_status(row.run, row.p, point)
        total.add(tally(row.case, row.run, status, shown, options))
    return total


def grid() -> Iterator[Points]:
    for answer_p, no_match_p, ratio in itertools.product(GRID, GRID, AMBIGUITY_GRID):
        if no_match_p <= answer_p:
            yield answer_p, no_match_p, ratio


def best_point(rows: Sequence[Replayable], max_wrong: float) -> tuple[Points | None, Tally]:
    """The points with the most right outcomes within `max_wrong`; ties: fewer wrong answers."""
    best: tuple[Points | None, Tally] = (None, replay(rows))
    best_key = (-1, 0)
    for points in grid():
        t = replay(rows, points)
        if t.answers and t.wrong > max_wrong * t.answers:
            continue
        key = (t.right, -t.wrong)
        if key > best_key:
            best, best_key = (points, t), key
    return best


def perfect(rows: Sequence[Replayable]) -> Tally:
    """A decision that knows the labels, on the rankings as they are."""
    total = Tally()
    for row in rows:
        case, ranked = row.case, row.run.ranked
        if case.decision == "answer" and top_is_right(case, ranked):
            status, shown, options = "answer", ranked, tuple(case.pages[1:2]) if case.kind == "multi_intent" else ()
        elif case.kind == "ambiguous" and clarification_is_right(case, ranked[:2]):
            status, shown, options = "clarify", ranked, ranked[:2]
        elif case.kind == "ambiguous" and clarification_is_right(case, ranked[:3]):
            status, shown, options = "clarify", ranked, ranked[:3]
        else:
            status, shown, options = "no_match", (), ()
        total.add(tally(case, row.run, status, shown, options))
    return total


def line(name: str, t: Tally, note: str = "") -> str:
    r = t.row()
    wrong = f"{t.wrong / t.answers:.1%} ({t.wrong}/{t.answers})" if t.answers else "-"
    needless = r["needless_clarifications"]
    ood = r["ood_no_match"]
    return (f"| {name} | {t.right}/{t.cases} ({t.right / t.cases:.1%}) | {wrong} | "
            f"{'-' if ood is None else f'{ood:.1%}'} | {'-' if needless is None else f'{needless:.1%}'} | {note} |")


def report(rows: Sequence[Replayable], max_wrong: float, split: str) -> str:
    corpora = sorted({r.corpus for r in rows})
    out = [f"Phase {PHASE}, {split} splits of {len(corpora)} corpora, {len(rows)} cases; wrong answers at most "
           f"{max_wrong:.0%} of answers where a point is chosen.", "",
           "| decision | right outcome | wrong / answers | OOD no match | needless clarify | points |",
           "|---|--:|--:|--:|--:|---|"]
    out.append(line("as fitted (each corpus by the fit made without it)", replay(rows)))
    points, t = best_point(rows, max_wrong)
    out.append(line("one set of points for all, chosen on these cases", t,
                    "answer {:.2f}, no match {:.2f}, ambiguity {:.2f}".format(*points) if points else "none within the bound"))
    own = Tally()
    chosen: list[str] = []
    for corpus in corpora:
        points, t = best_point([r for r in rows if r.corpus == corpus], max_wrong)
        own.add(t)
        chosen.append("{} {:.2f}/{:.2f}/{:.2f}".format(corpus, *points) if points else f"{corpus} as fitted")
    out.append(line("each corpus its own point, chosen on its cases", own, "listed below"))
    out.append(line("a perfect decision on these rankings", perfect(rows), "knows the labels"))
    answerable = [r for r in rows if r.case.decision == "answer"]
    right_first = sum(top_is_right(r.case, r.run.ranked) for r in answerable)
    plain = [r for r in rows if clear_answer(r.case)]
    out += ["", f"First page right: {right_first} of {len(answerable)} answerable cases "
            f"({right_first / len(answerable):.1%}); plain answers (not two needs) {len(plain)}.",
            "", "Each corpus's own points (answer/no match/ambiguity): " + ", ".join(chosen) + "."]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", type=Path, required=True, help="the --json of an eval-decisions --cross-corpus run")
    parser.add_argument("--set", action="append", required=True, help="QUERIES.yaml=SIGNALS.json, one per corpus")
    parser.add_argument("--split", choices=("dev", "test"), default="test")
    parser.add_argument("--max-wrong", type=float, default=0.05)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    text = report(load(args.table, args.set, args.split), args.max_wrong, args.split)
    print(text)
    if args.out is not None:
        command = (f"python -m lab.experiments.decision_ceiling --table {args.table} --split {args.split} "
                   f"--max-wrong {args.max_wrong} " + " ".join(f"--set {s}" for s in args.set))
        args.out.write_text(f"{command}\n\n{text}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
