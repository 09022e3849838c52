"""Reviewed and fed-back queries → golden cases (the format of `service/golden.py`).

What a case expects, from the strongest signal first:
- a review `should_be X`, or feedback naming an `expected_slug` → answer with X on top;
- a review `right`, or `helpful` feedback → the logged decision again (and its top page);
- a review `wrong` → any decision, but not the logged top page.
Feedback without a page (`not_what_i_meant`, `wrong_page`, `missing`) says only
what was wrong; it exports as the `wrong` case. A case is refused when the query
text was not stored (`query_log.store_text: false`) or when a page it names is no
longer in the corpus.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import yaml

from service.golden import IMPLEMENTED_PHASES, Expectation, GoldenCase, GoldenFile

ANY_DECISION = ["answer", "clarify", "no_match"]


@dataclass(frozen=True)
class Refused:
    request_id: str
    reason: str


@dataclass(frozen=True)
class Export:
    cases: list[GoldenCase]
    refused: list[Refused]

    def yaml(self) -> str:
        head = ["# Golden cases grown from reviewed and fed-back traffic (python -m service export-goldens).",
                f"# {len(self.cases)} cases; {len(self.refused)} refused."]
        head += [f"# refused {r.request_id}: {r.reason}" for r in self.refused]
        body = msgspec.to_builtins(GoldenFile(cases=self.cases))
        # Drop empty/None fields so the file reads like a hand-written one.
        for case in body["cases"]:
            for key in [k for k, v in case.items() if v is None]:
                del case[key]
            case["expect"] = {k: v for k, v in case["expect"].items() if v not in (None, [], False)}
        return "\n".join(head) + "\n" + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def expectation_of(row: Mapping[str, Any]) -> tuple[Expectation, str] | str:
    """The expectation and a note, or why there is none (also the labels a fit from review
    learns from: `evaluation/from_review.py`)."""
    review = row.get("review")
    feedback = row.get("feedback") or []
    results = row.get("results") or []
    top = results[0]["doc_slug"] if results else None
    status = row["status"]
    if review:
        who = f"review by {review['reviewer']} at {review['at']}"
        if review["verdict"] == "should_be":
            return Expectation(decision="answer", top=review["expected_slug"]), who
        if review["verdict"] == "right":
            return _same(status, top), who
        return _not(top), who
    named = [f for f in feedback if f.get("expected_slug")]
    if named:
        last = named[-1]
        return Expectation(decision="answer", top=last["expected_slug"]), f"feedback {last['verdict']}"
    verdicts = {f["verdict"] for f in feedback}
    if verdicts & {"not_what_i_meant", "wrong_page", "missing"}:
        return _not(top), "feedback " + ", ".join(sorted(verdicts))
    if "helpful" in verdicts:
        return _same(status, top), "feedback helpful"
    return "no review or feedback"


def _same(status: str, top: str | None) -> Expectation:
    return Expectation(decision=status, top=top if status == "answer" else None)


def _not(top: str | None) -> Expectation:
    return Expectation(decision=ANY_DECISION, excludes=[top] if top else [])


def export_cases(rows: Sequence[Mapping[str, Any]], pages: Collection[str]) -> Export:
    """Cases from `export_candidates` rows; `pages`: the slugs in the corpus now."""
    cases: list[GoldenCase] = []
    refused: list[Refused] = []
    for row in rows:
        rid = row["request_id"]
        if not row.get("query"):
            refused.append(Refused(rid, "query text not stored (query_log.store_text is off)"))
            continue
        made = expectation_of(row)
        if isinstance(made, str):
            refused.append(Refused(rid, made))
            continue
        expect, note = made
        named = [expect.top] if isinstance(expect.top, str) else list(expect.top or [])
        gone = [s for s in named if s not in pages]
        if gone:
            refused.append(Refused(rid, f"page {', '.join(gone)} is no longer in the corpus"))
            continue
        if any(s not in pages for s in expect.excludes):  # a gone page cannot come back: no need to exclude it
            expect = msgspec.structs.replace(expect, excludes=[s for s in expect.excludes if s in pages])
        phase = row.get("phase")
        cases.append(GoldenCase(
            id=f"traffic-{rid[:16]}", query=row["query"], expect=expect,
            phases=[phase] if phase in IMPLEMENTED_PHASES else None,
            note=f"{note}; logged {row['status']} at phase {phase}",
        ))
    return Export(cases=cases, refused=refused)
