"""Phase advice: the seed plan's metrics over a window and its Phase Triggers evaluated.

Pure: counts in, figures and verdicts out (store.py gathers the counts).
Seed plan ("Metrics (Cross-Phase)", "Phase Triggers (Updated)"):
- Phase 2 when the keyword match rate < 70 %, synonym/typo failures are
  frequent, or manual review shows poor precision;
- Phase 3 when fuzzy ("how do I…") queries fail frequently, keyword retrieval
  success drops on natural-language queries, or the manual relevance score
  falls below a threshold.
The plan fixes only the 70 %; the other thresholds are flags (`insights:`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from service.feedback.store import Counts
from service.flags import InsightsFlags

WINDOW_PATTERN = r"^[1-9][0-9]{0,3}[mhd]$"
_WINDOW = re.compile(r"^([1-9][0-9]{0,3})([mhd])$")
_UNIT_S = {"m": 60, "h": 3600, "d": 86400}


class BadWindow(ValueError):
    pass


def parse_window(text: str) -> int:
    """`30m`, `24h`, `7d` → seconds."""
    match = _WINDOW.match(text.strip())
    if match is None:
        raise BadWindow(f"window must look like 30m, 24h or 7d (got {text!r})")
    return int(match[1]) * _UNIT_S[match[2]]


def bucket_for(window_s: int) -> int:
    """About 24 points on the chart, in whole minutes."""
    return max(60, (window_s // 24 // 60) * 60)


@dataclass(frozen=True)
class Rate:
    part: int
    whole: int

    @property
    def value(self) -> float | None:
        return self.part / self.whole if self.whole else None

    def json(self) -> dict[str, Any]:
        value = self.value
        return {"rate": None if value is None else round(value, 4), "count": self.part, "of": self.whole}


def rates(c: Counts) -> dict[str, Rate]:
    return {
        "keyword_match_rate": Rate(c.keyword_matched, c.keyword_runs),
        "clarify_rate": Rate(c.clarify, c.queries),
        "no_match_rate": Rate(c.no_match, c.queries),
        "not_what_i_meant_rate": Rate(c.not_what_i_meant, c.queries),
        "reviewed_precision": Rate(c.reviews_right, c.reviews),
        "typo_failure_rate": Rate(c.unknown_word_no_match, c.queries),
        "question_failure_rate": Rate(c.question_failures, c.questions),
        "question_keyword_match_rate": Rate(c.question_keyword_matched, c.question_keyword_runs),
    }


def _pct(value: float) -> str:
    return f"{value * 100:.0f} %"


def triggers(c: Counts, limits: InsightsFlags, phase_in_force: int | None = None) -> list[dict[str, Any]]:
    """Each Phase Trigger: fired or not (None: too few samples), with the numbers behind it.

    `advice` is "consider phase N" only for a phase above `phase_in_force` (the configured
    phase): advising the phase already in force, or one below it, tells the operator nothing."""
    r = rates(c)
    specs = [
        (2, "keyword match rate", r["keyword_match_rate"], "<", limits.keyword_match_rate_min),
        (2, "synonym/typo failures (unknown word, no match)", r["typo_failure_rate"], ">",
         limits.typo_failure_rate_max),
        (2, "reviewed precision", r["reviewed_precision"], "<", limits.reviewed_precision_min),
        (3, "\"how do I…\" questions failing (clarify or no match)", r["question_failure_rate"], ">",
         limits.question_failure_rate_max),
        (3, "keyword match rate on natural-language questions", r["question_keyword_match_rate"], "<",
         limits.question_match_rate_min),
        (3, "manual relevance (reviewed precision)", r["reviewed_precision"], "<",
         limits.reviewed_precision_min),
    ]
    out: list[dict[str, Any]] = []
    for phase, name, rate, op, threshold in specs:
        value = rate.value
        in_force = phase_in_force is not None and phase <= phase_in_force
        entry: dict[str, Any] = {"phase": phase, "metric": name, "op": op, "threshold": threshold,
                                 "in_force": in_force, "advice": None, **rate.json()}
        if value is None or rate.whole < limits.min_samples:
            entry["fired"] = None
            entry["text"] = (f"{name}: {rate.whole} samples < {limits.min_samples}: not enough data")
        else:
            fired = value < threshold if op == "<" else value > threshold
            entry["fired"] = fired
            holds = op if fired else ("≥" if op == "<" else "≤")
            entry["text"] = f"{name} {_pct(value)} {holds} {_pct(threshold)} ({rate.part}/{rate.whole})"
            if fired and in_force:
                entry["text"] += f": phase {phase_in_force} is in force already"
            elif fired:
                entry["advice"] = f"consider phase {phase}"
                entry["text"] += f": {entry['advice']}"
        out.append(entry)
    return out
