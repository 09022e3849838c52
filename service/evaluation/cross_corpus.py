"""`python -m service eval-decisions --cross-corpus`: leave-one-corpus-out over several corpora.

Every corpus is served once, under the seed rules, at phases 1-3 (`decisions.run_service`; a
`--signals` file per corpus keeps the runs). Then, for each corpus in turn, the portable
calibrated decision is fitted on the dev splits of all the others (its model and its operating
points, `decisions.fit`) and replayed on the held-out corpus's test split (`replayed_status`, the
`Decider`'s routing on numbers; `tests/unit/test_decision_paths.py` holds the two equal). Nothing
that decides a corpus's figures was chosen on that corpus.

Per corpus and pooled, on the test splits at one phase (3 by default):
top-1 / top-3 of the ranking, right outcome (`decision_metrics.right_outcome`), wrong answers (as a
share of answers and of all queries), out-of-domain no match, needless clarifications (asked
although the first page was right and the case is not an ambiguous one, as a share of in-domain
queries), and, at phase 3, the top-3 of each leg alone beside the fusion on question and
paraphrase cases (the keyword leg is phase 2's ranking of the same case).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from service.decide.calibration import CalibrationModel
from service.decide.decider import replayed_status
from service.evaluation.decision_metrics import CaseRun, right_outcome, top_is_right
from service.evaluation.labelled import LabelledQuery
from service.flags import DecisionFlags

POLICIES = ("seed_rules", "calibrated (leave-one-corpus-out)")
LEG_KINDS = frozenset({"question", "paraphrase"})


@dataclass(frozen=True)
class CorpusRuns:
    name: str
    cases: Sequence[LabelledQuery]
    runs: Sequence[CaseRun]
    """Seed-rules runs at phases 1-3."""

    def on_split(self, split: str, phase: int) -> Iterator[tuple[LabelledQuery, CaseRun, CaseRun | None]]:
        """Each case of `split` with its seed-rules run at `phase` and at phase 2 (None when
        missing), in the labelled set's order; cases without a run at `phase` are left out."""
        by_key = {(r.case_id, r.phase): r for r in self.runs if r.policy == "seed_rules"}
        for case in self.cases:
            run = by_key.get((case.id, phase))
            if case.split == split and run is not None:
                yield case, run, by_key.get((case.id, 2))


@dataclass
class Tally:
    """Counts behind one row of the table."""

    cases: int = 0
    ranked: int = 0
    top1: int = 0
    top3: int = 0
    right: int = 0
    answers: int = 0
    wrong: int = 0
    ood: int = 0
    ood_no_match: int = 0
    in_domain: int = 0
    needless: int = 0
    multi: int = 0
    multi_both: int = 0
    legs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("n", "fused", "keyword", "semantic"), 0))

    def add(self, other: Tally) -> None:
        for name in ("cases", "ranked", "top1", "top3", "right", "answers", "wrong", "ood", "ood_no_match",
                     "in_domain", "needless", "multi", "multi_both"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for leg, n in other.legs.items():
            self.legs[leg] += n

    def row(self) -> dict[str, float | int | None]:
        def share(num: int, den: int) -> float | None:
            return round(num / den, 4) if den else None

        return {
            "cases": self.cases, "top1": share(self.top1, self.ranked), "top3": share(self.top3, self.ranked),
            "right_outcome": share(self.right, self.cases), "answers": self.answers, "wrong_answers": self.wrong,
            "wrong_of_answers": share(self.wrong, self.answers), "wrong_of_all": share(self.wrong, self.cases),
            "ood": self.ood, "ood_no_match": share(self.ood_no_match, self.ood),
            "needless_clarifications": share(self.needless, self.in_domain),
            "multi_intent": self.multi, "multi_intent_both_pages": share(self.multi_both, self.multi),
            "legs_n": self.legs["n"], "fused_top3": self.legs["fused"], "keyword_top3": self.legs["keyword"],
            "semantic_top3": self.legs["semantic"],
        }


def in_top3(case: LabelledQuery, pages: Sequence[str]) -> bool:
    return any(page in case.pages for page in pages[:3])


def tally(
    case: LabelledQuery, run: CaseRun, status: str, shown: Sequence[str], options: Sequence[str],
    keyword_ranked: Sequence[str] = (),
) -> Tally:
    """One case's counts under one policy."""
    t = Tally(cases=1, right=int(right_outcome(case, status, shown, options)))
    if case.pages:
        t.ranked = 1
        t.top1 = int(top_is_right(case, run.ranked))
        t.top3 = int(in_top3(case, run.ranked))
    if status == "answer":
        t.answers = 1
        t.wrong = int(not top_is_right(case, shown))
    if case.kind == "out_of_domain":
        t.ood = 1
        t.ood_no_match = int(status == "no_match")
    else:
        t.in_domain = 1
        t.needless = int(clear_answer(case) and status == "clarify" and top_is_right(case, run.ranked))
    if case.kind == "multi_intent":
        t.multi = 1
        t.multi_both = int(both_needs_shown(case, status, shown, options))
    if run.phase == 3 and case.kind in LEG_KINDS:
        t.legs["n"] = 1
        t.legs["fused"] = int(in_top3(case, run.ranked))
        t.legs["keyword"] = int(in_top3(case, keyword_ranked))
        t.legs["semantic"] = int(in_top3(case, run.semantic_ranked))
    return t


BOTH_NEEDS_DEPTH = 3
"""How far down an answer's pages a second need's page still counts as given (issue 40)."""


def both_needs_shown(case: LabelledQuery, status: str, shown: Sequence[str], options: Sequence[str]) -> bool:
    """A message with two needs: both labelled pages among the answer's first pages or its options,
    or among a clarification's options (issue 40's "both pages among the results")."""
    need = case.pages[:2]
    if status == "answer":  # listed near the top, or offered with it ("Which one should I go deeper on?")
        return all(page in shown[:BOTH_NEEDS_DEPTH] or page in options for page in need)
    return status == "clarify" and all(page in options for page in need)


def clear_answer(case: LabelledQuery) -> bool:
    """An in-domain case whose right decision is one plain answer: where a question is needless
    when the first page is right."""
    return case.decision == "answer" and case.kind != "multi_intent"


def replay_calibrated(
    model: CalibrationModel, run: CaseRun, answer_floor: float | None = None,
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What `decision.policy: calibrated` with `model` (and its own points) decides on a seed-rules
    run; `answer_floor`: its answer point raised to at least that."""
    from service.evaluation.decisions import calibrated_p

    point = model.points(DecisionFlags()).at(run.phase)
    if answer_floor is not None:
        point = msgspec.structs.replace(point, answer_p=max(answer_floor, point.answer_p))
    return replayed_status(run, calibrated_p(model, run), point)


def calibrated_tally(
    corpus: CorpusRuns, model: CalibrationModel, split: str, phase: int = 3, answer_floor: float | None = None,
) -> Tally:
    """One corpus's counts on `split` under the calibrated policy with `model` (`replay_calibrated`)."""
    total = Tally()
    for case, run, _ in corpus.on_split(split, phase):
        status, shown, options = replay_calibrated(model, run, answer_floor)
        total.add(tally(case, run, status, shown, options))
    return total


def leave_one_out(
    corpora: Sequence[CorpusRuns], fit_without: dict[str, CalibrationModel], phase: int = 3,
) -> dict[str, dict[str, dict[str, float | int | None]]]:
    """{policy: {corpus | "pooled": row}} on the test splits; `fit_without[name]`: the portable fit
    made on every corpus but `name`."""
    table: dict[str, dict[str, dict[str, float | int | None]]] = {policy: {} for policy in POLICIES}
    pooled = {policy: Tally() for policy in POLICIES}
    for corpus in corpora:
        totals = {policy: Tally() for policy in POLICIES}
        for case, run, phase2 in corpus.on_split("test", phase):
            keyword_ranked = phase2.ranked if phase2 is not None else ()
            totals[POLICIES[0]].add(tally(case, run, run.status, run.shown, run.options, keyword_ranked))
            status, shown, options = replay_calibrated(fit_without[corpus.name], run)
            totals[POLICIES[1]].add(tally(case, run, status, shown, options, keyword_ranked))
        for policy in POLICIES:
            table[policy][corpus.name] = totals[policy].row()
            pooled[policy].add(totals[policy])
    for policy in POLICIES:
        table[policy]["pooled"] = pooled[policy].row()
    return table


def per_kind(corpora: Sequence[CorpusRuns], phase: int = 3) -> dict[str, dict[str, float | int | None]]:
    """Top-1 and top-3 of the ranking per kind of case (keyword, question, paraphrase, typo, …),
    pooled over the corpora's test splits at `phase`: where the ranking, not the decision, fails."""
    counts: dict[str, Tally] = {}
    for corpus in corpora:
        for case, run, _ in corpus.on_split("test", phase):
            if not case.pages:
                continue
            t = counts.setdefault(case.kind, Tally())
            t.ranked += 1
            t.top1 += int(top_is_right(case, run.ranked))
            t.top3 += int(in_top3(case, run.ranked))
    return {kind: {"n": t.ranked, "top1": round(t.top1 / t.ranked, 4), "top3": round(t.top3 / t.ranked, 4)}
            for kind, t in sorted(counts.items())}


def is_identifier_case(case: LabelledQuery) -> bool:
    """A case whose query is or holds a name from the code (`note: identifier`, issue 42)."""
    return "identifier" in {part.strip() for part in (case.note or "").split(";")}


def identifier_cases(corpora: Sequence[CorpusRuns], phase: int = 3) -> dict[str, dict[str, int]]:
    """Per corpus, its in-domain identifier cases (both splits) and how many have a right first
    page at `phase` (issue 42's ≥ 95 % per corpus)."""
    rows: dict[str, dict[str, int]] = {}
    for corpus in corpora:
        row = rows.setdefault(corpus.name, {"n": 0, "top1": 0})
        for split in ("dev", "test"):
            for case, run, _ in corpus.on_split(split, phase):
                if case.pages and is_identifier_case(case):
                    row["n"] += 1
                    row["top1"] += int(top_is_right(case, run.ranked))
    return {name: row for name, row in rows.items() if row["n"]}


def identifiers_markdown(rows: dict[str, dict[str, int]]) -> str:
    lines = ["| corpus | identifier cases | right first page |", "|---|--:|--:|"]
    lines += [f"| {name} | {r['n']} | {r['top1']} ({100 * r['top1'] / r['n']:.1f} %) |" for name, r in rows.items()]
    return "\n".join(lines)


def kinds_markdown(kinds: dict[str, dict[str, float | int | None]]) -> str:
    lines = ["| kind | cases | top-1 | top-3 |", "|---|--:|--:|--:|"]
    lines += [f"| {kind} | {r['n']} | {_pct(r['top1'])} | {_pct(r['top3'])} |" for kind, r in kinds.items()]
    return "\n".join(lines)


def _pct(x: float | int | None) -> str:
    return "–" if x is None else f"{100 * float(x):.1f} %"


def markdown(table: dict[str, dict[str, dict[str, float | int | None]]]) -> str:
    head = ("| policy | corpus | cases | top-1 | top-3 | right outcome | wrong / answers | wrong / all | "
            "OOD no match | needless clarify | two needs: both pages (n) | top-3 fused / keyword / semantic (n) |\n"
            "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    lines = [head]
    for policy, rows in table.items():
        for corpus, r in rows.items():
            legs = f"{r['fused_top3']} / {r['keyword_top3']} / {r['semantic_top3']} ({r['legs_n']})"
            lines.append(
                f"| {policy} | {corpus} | {r['cases']} | {_pct(r['top1'])} | {_pct(r['top3'])} | "
                f"{_pct(r['right_outcome'])} | {_pct(r['wrong_of_answers'])} ({r['wrong_answers']}/{r['answers']}) | "
                f"{_pct(r['wrong_of_all'])} | {_pct(r['ood_no_match'])} | {_pct(r['needless_clarifications'])} | "
                f"{_pct(r['multi_intent_both_pages'])} ({r['multi_intent']}) | {legs} |"
            )
    return "\n".join(lines)


@dataclass(frozen=True)
class Assignment:
    """What one assignment of the cross-fitting folds gives the leave-one-out fits (`assignment_row`)."""

    dev_right: int
    dev_wrong: int
    test_right: int
    test_wrong: int
    test_answers: int
    needless: float | None
    ood_no_match: float | None
    worst_corpus: str
    worst_wrong: float | None


def assignment_row(
    table: dict[str, dict[str, dict[str, float | int | None]]], pooled: Mapping[str, Mapping[str, int]],
) -> Assignment:
    """The calibrated policy's pooled test row, the dev and test totals and the corpus with the
    most wrong answers."""
    rows = table[POLICIES[1]]
    corpora = {name: r for name, r in rows.items() if name != "pooled"}
    worst = max(corpora, key=lambda name: float(corpora[name]["wrong_of_answers"] or 0.0))
    test, dev = pooled["test"], pooled["dev"]

    def share(value: float | int | None) -> float | None:
        return None if value is None else float(value)

    return Assignment(
        dev_right=dev["right"], dev_wrong=dev["wrong"], test_right=test["right"], test_wrong=test["wrong"],
        test_answers=test["answers"], needless=share(rows["pooled"]["needless_clarifications"]),
        ood_no_match=share(rows["pooled"]["ood_no_match"]), worst_corpus=worst,
        worst_wrong=share(corpora[worst]["wrong_of_answers"]),
    )


def assignments_markdown(rows: Mapping[str, Assignment]) -> str:
    """One line per fold assignment, then each figure's range over them."""
    lines = ["| folds | dev right | dev wrong | test right | test wrong / answers | needless | OOD no match | "
             "most wrong answers |", "|---|--:|--:|--:|--:|--:|--:|---|"]
    for salt, r in rows.items():
        lines.append(f"| {salt or 'as shipped'} | {r.dev_right} | {r.dev_wrong} | {r.test_right} | "
                     f"{r.test_wrong}/{r.test_answers} | {_pct(r.needless)} | {_pct(r.ood_no_match)} | "
                     f"{r.worst_corpus} {_pct(r.worst_wrong)} |")

    def span(values: list[float | int | None], pct: bool = False) -> str:
        known = [float(v) for v in values if v is not None]
        if not known:
            return "–"
        low, high = min(known), max(known)
        return f"{_pct(low)}–{_pct(high)}" if pct else f"{low:.0f}–{high:.0f}"

    a = list(rows.values())
    lines.append(
        f"| range | {span([r.dev_right for r in a])} | {span([r.dev_wrong for r in a])} | "
        f"{span([r.test_right for r in a])} | {span([r.test_wrong for r in a])} | "
        f"{span([r.needless for r in a], True)} | {span([r.ood_no_match for r in a], True)} | "
        f"{span([r.worst_wrong for r in a], True)} |")
    return "\n".join(lines)


def write(path: Path, table: dict[str, dict[str, dict[str, float | int | None]]], meta: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**meta, "table": table}, indent=2) + "\n", encoding="utf-8")


def split_totals(
    corpora: Sequence[CorpusRuns], fits: Mapping[str, CalibrationModel], split: str, phase: int = 3,
) -> dict[str, int]:
    """Pooled right outcomes and wrong answers of the calibrated policy on one split, every corpus
    decided by the fit made without it: what an ablation compares (a ranking rule is left out by
    collecting the runs with its flag off)."""
    total = Tally()
    for corpus in corpora:
        total.add(calibrated_tally(corpus, fits[corpus.name], split, phase))
    return {"cases": total.cases, "right": total.right, "wrong": total.wrong, "answers": total.answers}
