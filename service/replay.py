"""Golden replay: run each case at each phase it names and report a verdict per run.

Two ways to answer a case (the caller passes a `Post`):
- in-process (`POST /admin/replay`, and `python -m service replay` without
  `--url`, which calls that endpoint inside its own process): each case is
  evaluated at the phase it names, whatever the kill switch and the
  `phase`/`enabled` flags say at that moment — the replay checks the
  retrieval code, not the replica's load;
- over HTTP (`--url`): the service answers as it would any client. A case
  answered below its phase because of the kill switch or the flags is not
  a wrong answer: its verdict is `kill switch active` or `capped by flags at
  phase N` (read from the response's `fallback_path`), and it is not counted
  as a failure.

Known failures are those of the decision policy in force (`policy`, the flags'
`decision.policy`; service.golden.known_failure_at). A dialogue pinned to another
policy is played under it when the caller can (`pinned`), else not evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from service.golden import (
    Dialogue,
    GoldenCase,
    check,
    dialogue_known_failure,
    known_failure_at,
    phases_of,
    request_of,
    turn_request,
    turns_after,
)

Post = Callable[[dict[str, Any]], Awaitable[tuple[int, dict[str, Any]]]]
Verdict = Literal["pass", "fail", "kill switch active", "capped by flags", "pinned to another policy"]
Label = Literal["PASS", "FAIL", "XFAIL", "XPASS", "SKIP"]
"""How a run is printed: XFAIL/XPASS for a case marked `known_failure`, SKIP below its phase."""

IN_PROCESS_NOTE = (
    "in-process: each case evaluated at the phase it names; "
    "the kill switch and the phase/enabled flags are not applied"
)
_FLAGS_PHASE = re.compile(r"^flags: phase (\d)")


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    phase: int
    query: str
    failures: list[str]
    verdict: Verdict = "pass"
    detail: str = ""
    """Why a run was not evaluated at its phase (`skipped` verdicts)."""
    known_failure: str | None = None
    """The case's `known_failure` reason: a fail is expected (XFAIL), a pass is news (XPASS)."""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def skipped(self) -> bool:
        """Answered below its phase by the kill switch or the flags: not a wrong answer."""
        return self.verdict in ("kill switch active", "capped by flags", "pinned to another policy")

    @property
    def ok(self) -> bool:
        """As expected: a pass, a known failure that still fails, or not evaluated at its phase."""
        return self.outcome in ("PASS", "XFAIL", "SKIP")

    @property
    def outcome(self) -> Label:
        """PASS / FAIL / XFAIL / XPASS (service.golden.verdict), or SKIP below its phase."""
        if self.skipped:
            return "SKIP"
        failed = self.verdict == "fail"
        if self.known_failure is None:
            return "FAIL" if failed else "PASS"
        return "XFAIL" if failed else "XPASS"

    def line(self) -> str:
        if self.verdict == "fail":
            reason = f": {'; '.join(self.failures)}"
        elif self.skipped:
            reason = f": {self.detail}"
        else:
            reason = ""
        known = f" [known failure: {self.known_failure}]" if self.known_failure else ""
        return f"{self.outcome} [phase {self.phase}] {self.case_id} ({self.query!r}){reason}{known}"


@dataclass
class Summary:
    results: list[CaseResult] = field(default_factory=list)

    @property
    def failed(self) -> int:
        """Not as expected: a failure, or a known failure that now passes (XPASS: drop the mark)."""
        return sum(not r.ok for r in self.results)

    @property
    def passed(self) -> int:
        return sum(r.outcome == "PASS" for r in self.results)

    @property
    def known(self) -> int:
        """Known failures that still fail (XFAIL)."""
        return sum(r.outcome == "XFAIL" for r in self.results)

    @property
    def unexpected_passes(self) -> int:
        return sum(r.outcome == "XPASS" for r in self.results)

    @property
    def skipped(self) -> int:
        return sum(r.skipped for r in self.results)

    def line(self) -> str:
        text = f"{self.passed} passed, {self.failed} failed"
        if self.known:
            text += f", {self.known} known failures (XFAIL)"
        if self.unexpected_passes:
            text += f", {self.unexpected_passes} known failures now pass (XPASS, counted as failed: drop the mark)"
        if self.skipped:
            kinds = sorted({r.detail for r in self.results if r.skipped})
            text += f", {self.skipped} not evaluated at their phase ({'; '.join(kinds)})"
        return text


def skipped_because(phase: int, payload: dict[str, Any]) -> tuple[Verdict, str] | None:
    """Whether a response answered below `phase` because of the kill switch or the flags."""
    answered = payload.get("phase")
    if not isinstance(answered, int) or (answered >= phase and payload.get("status") != "disabled"):
        return None
    for step in payload.get("fallback_path") or []:
        reason = str(step.get("reason", ""))
        if reason.startswith("kill switch"):
            return "kill switch active", reason
        found = _FLAGS_PHASE.match(reason)
        if found:
            return "capped by flags", f"capped by flags at phase {found.group(1)}"
        if reason.startswith("flags:"):
            return "capped by flags", reason
    return None


def verdict_of(
    case: GoldenCase, phase: int, status: int, payload: dict[str, Any], policy: str | None = None
) -> CaseResult:
    """The run's verdict; `policy` (the `decision.policy` in force) picks the known failures that apply."""
    known = known_failure_at(case, phase, policy)
    if status != 200:
        return CaseResult(case.id, phase, case.query, [f"HTTP {status}: {payload}"], "fail", known_failure=known)
    skipped = skipped_because(phase, payload)
    if skipped is not None:
        return CaseResult(case.id, phase, case.query, [], skipped[0], skipped[1], known)
    failures = check(case, payload)
    if payload.get("phase") != phase:
        failures.append(f"answered by phase {payload.get('phase')} (fallback: {payload.get('fallback_path')})")
    return CaseResult(case.id, phase, case.query, failures, "fail" if failures else "pass", known_failure=known)


async def replay_cases(
    cases: Sequence[GoldenCase], post: Post, only_phase: int | None = None, policy: str | None = None
) -> list[CaseResult]:
    """POST every case at each of its phases and check the expectations (`policy`: the one in force)."""
    results: list[CaseResult] = []
    for case in cases:
        for phase in phases_of(case, only_phase):
            _, body = request_of(case, phase)
            status, payload = await post(body)
            results.append(verdict_of(case, phase, status, payload, policy))
    return results


async def replay_dialogue(dialogue: Dialogue, post: Post, policy: str | None = None) -> CaseResult:
    """Play a dialogue turn by turn, as the chat panel would; one verdict for the whole conversation.
    `post` answers under `policy` (None: unknown, only the marks of every policy apply)."""
    history: list[dict[str, Any]] = []
    clarification: dict[str, Any] | None = None
    failures: list[str] = []
    known = dialogue_known_failure(dialogue, policy)
    for number, turn in enumerate(dialogue.turns):
        body = turn_request(dialogue, number, history, clarification)
        status, payload = await post(body)
        if status != 200:
            failures.append(f"turn {number} ({turn.say!r}): HTTP {status}: {payload}")
            break
        skipped = skipped_because(dialogue.phase, payload)
        if skipped is not None:
            return CaseResult(dialogue.id, dialogue.phase, dialogue.query, [], skipped[0], skipped[1], known)
        missed = check(GoldenCase(id=dialogue.id, query=turn.say, expect=turn.expect), payload)
        if payload.get("phase") != dialogue.phase:
            missed.append(f"answered by phase {payload.get('phase')}")
        failures.extend(f"turn {number} ({turn.say!r}): {m}" for m in missed)
        history.extend(turns_after(turn.say, payload))
        clarification = payload.get("clarification")
    verdict: Verdict = "fail" if failures else "pass"
    return CaseResult(dialogue.id, dialogue.phase, dialogue.query, failures, verdict, known_failure=known)


PostUnder = Callable[[str], Post]
"""A poster answering under the given `decision.policy` (for a dialogue pinned to one)."""


async def replay_dialogues(
    dialogues: Sequence[Dialogue],
    post: Post,
    only_phase: int | None = None,
    policy: str | None = None,
    pinned: PostUnder | None = None,
) -> list[CaseResult]:
    """Each dialogue under `policy` (the one in force), or under its pin through `pinned`;
    without `pinned`, a dialogue pinned to another policy is not evaluated."""
    results = []
    for d in dialogues:
        if only_phase is not None and d.phase != only_phase:
            continue
        if d.policy is None or d.policy == policy:
            results.append(await replay_dialogue(d, post, policy))
        elif pinned is not None:
            results.append(await replay_dialogue(d, pinned(d.policy), d.policy))
        else:
            detail = f"pinned to {d.policy}; the service runs {policy or 'another policy'}"
            results.append(CaseResult(d.id, d.phase, d.query, [], "pinned to another policy", detail))
    return results
