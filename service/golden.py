"""Golden-query files: the format acceptance suites depend on, and the checks.

```yaml
cases:
  - id: explain-workspace
    query: explain workspace
    phases: [1, 2, 3]            # optional; default: every implemented phase
    phase: 3                     # optional shorthand for `phases: [3]` (not with `phases`)
    top_k: 5                     # optional request fields, sent as written
    category: widgets            #   (`/retrieve`'s `category`)
    ui_context: {screen: home}   #   sent to `/context` instead (no top_k/category there)
    note: why                    # required when `decision` accepts more than one
    known_failure: "reason"      # optional: the service is wrong today; replay reports
                                 # it apart, pytest expects it to fail (strict)
    known_failure_under:         # optional: wrong today under one decision policy only
      calibrated: "@3: reason"   #   (`decision.policy`); "@1,2: " limits it to those phases
    expect:
      decision: answer           # or a list of acceptable decisions (needs a `note`)
      top: concepts/workspace    # optional; slug or list: first result must be one
      includes: [a/b]            # optional; all must appear among the results
      excludes: [c/d]            # optional; none may appear
      min_distinct_docs: 2       # optional
      header_path: true          # optional; first result has a non-empty header path
      message: "Which part..."   # optional; exact UI text
```

A case states what a user should get, written before the code answers it.
A known failure is the service's fault, not the case's: `known_failure`, or a
note starting `known failure @1,2: why`, holds under every policy; one policy's
own failures go under `known_failure_under` (the replay applies the marks of
the policy in force).

Dialogue cases (`dialogues:`, in the same files or their own) are conversations:
ordered turns, each sent to `/retrieve` with the turns before it as `history`
(the assistant's turns carry the pages it answered with), the dialogue's or the
turn's `ui_context`, and — as the chat panel does when the user answers a
question — the previous response's `clarification` as `reply_to`:

```yaml
dialogues:
  - id: remove-widget-then-pick-manager
    phase: 3                     # optional; default 3
    ui_context: {screen: dashboard}   # optional; the screen for every turn
    note: why                    # as for cases
    known_failure: "reason"      # as for cases
    known_failure_under: {calibrated: "reason"}   # as for cases (no phases: one per dialogue)
    policy: seed_rules           # optional: played under this decision policy whatever is in
                                 # force (the dialogue is about that policy's behaviour; needs a `note`)
    turns:
      - say: how do I remove a widget
        expect: {decision: clarify, includes: [widgets/widget-manager]}
      - say: Widget Manager      # answers the clarification (reply_to sent)
        reply: true              # optional; default: reply whenever the last response asked
        ui_context: {screen: x}  # optional; this turn's screen instead of the dialogue's
        expect:
          decision: answer
          top: widgets/widget-manager
          section: Removing      # optional: the first result's header path contains it
          topic: reply           # optional: conversation.topic (message|history|screen|reply)
          from_turn: 0           # optional: the history turn a topic was carried from
```
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args, get_type_hints

import msgspec
import yaml

from service.flags import DecisionFlags

IMPLEMENTED_PHASES: tuple[int, ...] = (1, 2, 3)
CONTEXT_PHASE = 3
"""`/context` has no phase field: a `ui_context` case runs at the configured phase (3)."""
Decision = str
POLICIES: tuple[str, ...] = get_args(get_type_hints(DecisionFlags)["policy"])
"""The values of `decision.policy` a known failure or a dialogue's pin may name."""
_PHASED = re.compile(r"known failure @([\d,\s]+):\s*(.*)", re.DOTALL)
_PHASES_FIRST = re.compile(r"@([\d,\s]+):\s*(.*)", re.DOTALL)


class Expectation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    decision: str | list[str]
    top: str | list[str] | None = None
    includes: list[str] = []
    excludes: list[str] = []
    min_distinct_docs: int | None = None
    header_path: bool = False
    message: str | None = None
    section: str | None = None
    topic: str | None = None
    from_turn: int | None = None


class GoldenCase(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    query: str
    expect: Expectation
    phases: list[int] | None = None
    phase: int | None = None
    note: str | None = None
    top_k: int | None = None
    category: str | None = None
    ui_context: dict[str, Any] | None = None
    known_failure: str | None = None
    known_failure_under: dict[str, str] = {}


TOPIC_SOURCES = ("message", "history", "screen", "reply")
DIALOGUE_PHASE = 3
MAX_DIALOGUE_HISTORY = 10
"""`history` sent with a turn: the last 10 turns (the request's bound)."""


class DialogueTurn(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    say: str
    expect: Expectation
    reply: bool | None = None
    """Send the previous response's clarification as `reply_to` (default: whenever there is one)."""
    ui_context: dict[str, Any] | None = None


class Dialogue(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    turns: list[DialogueTurn]
    phase: int = DIALOGUE_PHASE
    ui_context: dict[str, Any] | None = None
    note: str | None = None
    known_failure: str | None = None
    known_failure_under: dict[str, str] = {}
    policy: str | None = None
    """Play it under this `decision.policy`, whatever is in force (the note says why)."""

    @property
    def query(self) -> str:
        """The dialogue's messages, for a report line."""
        return " → ".join(t.say for t in self.turns)


class GoldenFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A file of cases only (what the goldens export writes)."""

    cases: list[GoldenCase]


class GoldenSuite(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a golden file may hold: cases, dialogues, or both."""

    cases: list[GoldenCase] = []
    dialogues: list[Dialogue] = []


class GoldenFileError(ValueError):
    """The golden file does not follow the format; names the file and field."""


def load_golden(path: Path) -> list[GoldenCase]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GoldenFileError(f"{path}: {exc}") from exc
    return parse_golden(text, str(path))


def _problems(case: GoldenCase) -> list[str]:
    problems = []
    if case.phase is not None and case.phases is not None:
        problems.append("give `phase` or `phases`, not both")
    if any(p not in IMPLEMENTED_PHASES for p in phases_of(case)):
        problems.append(f"phases must be among {list(IMPLEMENTED_PHASES)}")
    if isinstance(case.expect.decision, list) and len(case.expect.decision) > 1 and not case.note:
        problems.append("accepts more than one decision without a `note` saying why each is right")
    if case.ui_context is not None:
        if case.top_k is not None or case.category is not None:
            problems.append("`/context` (ui_context) takes no `top_k` or `category`")
        if phases_of(case) != [CONTEXT_PHASE]:
            problems.append(f"a ui_context case runs at phase {CONTEXT_PHASE} only")
    if case.known_failure is not None and not case.known_failure.strip():
        problems.append("`known_failure` must give the reason")
    problems += _policy_problems(case.known_failure_under)
    for policy, reason in case.known_failure_under.items():
        phased = _PHASES_FIRST.match(reason)
        if phased is not None and not set(_phase_list(phased.group(1))) <= set(phases_of(case)):
            problems.append(f"`known_failure_under.{policy}` names a phase the case does not run at")
    return problems


def _policy_problems(marks: dict[str, str]) -> list[str]:
    problems = []
    for policy, reason in marks.items():
        if policy not in POLICIES:
            problems.append(f"`known_failure_under`: unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
        phased = _PHASES_FIRST.match(reason)
        if not (phased.group(2) if phased else reason).strip():
            problems.append(f"`known_failure_under.{policy}` must give the reason")
    return problems


def _phase_list(text: str) -> list[int]:
    return [int(p) for p in re.split(r"[,\s]+", text.strip()) if p]


def known_failure_at(case: GoldenCase, phase: int, policy: str | None) -> str | None:
    """Why the case is expected to fail at `phase` under `policy` (None: it should pass).
    `policy` None: only the marks that hold under every policy."""
    reasons = []
    if case.known_failure:
        reasons.append(case.known_failure)
    noted = _PHASED.match(case.note or "")
    if noted is not None and phase in _phase_list(noted.group(1)):
        reasons.append(noted.group(2).strip())
    own = case.known_failure_under.get(policy) if policy is not None else None
    if own is not None:
        phased = _PHASES_FIRST.match(own)
        if phased is None:
            reasons.append(f"{policy}: {own}")
        elif phase in _phase_list(phased.group(1)):
            reasons.append(f"{policy}: {phased.group(2).strip()}")
    return "; ".join(reasons) or None


def dialogue_policy(dialogue: Dialogue, in_force: str | None) -> str | None:
    """The policy a dialogue is played under: its pin, else the one in force."""
    return dialogue.policy or in_force


def dialogue_known_failure(dialogue: Dialogue, in_force: str | None) -> str | None:
    """Why the dialogue is expected to fail when played with `in_force` the policy in force."""
    policy = dialogue_policy(dialogue, in_force)
    reasons = [dialogue.known_failure] if dialogue.known_failure else []
    own = dialogue.known_failure_under.get(policy) if policy is not None else None
    if own is not None:
        reasons.append(f"{policy}: {own}")
    return "; ".join(reasons) or None


def parse_golden(text: str, source: str = "<text>") -> list[GoldenCase]:
    """Golden cases from YAML text (`source` names it in error messages)."""
    return parse_golden_file(text, source).cases


def load_dialogues(path: Path) -> list[Dialogue]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GoldenFileError(f"{path}: {exc}") from exc
    return parse_golden_file(text, str(path)).dialogues


def _dialogue_problems(dialogue: Dialogue) -> list[str]:
    problems = []
    if not dialogue.turns:
        problems.append("a dialogue needs at least one turn")
    if dialogue.phase not in IMPLEMENTED_PHASES:
        problems.append(f"phase must be among {list(IMPLEMENTED_PHASES)}")
    if dialogue.known_failure is not None and not dialogue.known_failure.strip():
        problems.append("`known_failure` must give the reason")
    problems += _policy_problems(dialogue.known_failure_under)
    if any(_PHASES_FIRST.match(r) for r in dialogue.known_failure_under.values()):
        problems.append("a dialogue's `known_failure_under` names no phases (it runs at one)")
    if dialogue.policy is not None:
        if dialogue.policy not in POLICIES:
            problems.append(f"unknown policy {dialogue.policy!r}; valid: {', '.join(POLICIES)}")
        if not dialogue.note:
            problems.append("`policy` pins the dialogue without a `note` saying why")
        if set(dialogue.known_failure_under) - {dialogue.policy}:
            problems.append("`known_failure_under` names a policy the pinned dialogue never runs under")
    for number, turn in enumerate(dialogue.turns):
        expect = turn.expect
        if isinstance(expect.decision, list) and len(expect.decision) > 1 and not dialogue.note:
            problems.append(f"turn {number} accepts more than one decision without a `note`")
        if expect.topic is not None and expect.topic not in TOPIC_SOURCES:
            problems.append(f"turn {number}: topic must be one of {', '.join(TOPIC_SOURCES)}")
        if turn.reply and number == 0:
            problems.append("the first turn has no clarification to reply to")
    return problems


def parse_golden_file(text: str, source: str = "<text>") -> GoldenSuite:
    """Cases and dialogues from YAML text (`source` names it in error messages)."""
    try:
        data = yaml.safe_load(text)
        golden = msgspec.convert(data, GoldenSuite)
    except (yaml.YAMLError, msgspec.ValidationError) as exc:
        raise GoldenFileError(f"{source}: {exc}") from exc
    cases = golden.cases
    seen_dialogues: set[str] = set()
    for dialogue in golden.dialogues:
        if dialogue.id in seen_dialogues:
            raise GoldenFileError(f"{source}: duplicate dialogue id {dialogue.id!r}")
        seen_dialogues.add(dialogue.id)
        problems = _dialogue_problems(dialogue)
        if problems:
            raise GoldenFileError(f"{source}: dialogue {dialogue.id!r}: {'; '.join(problems)}")
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise GoldenFileError(f"{source}: duplicate case id {case.id!r}")
        seen.add(case.id)
        problems = _problems(case)
        if problems:
            raise GoldenFileError(f"{source}: case {case.id!r}: {'; '.join(problems)}")
    return golden


def phases_of(case: GoldenCase, only: int | None = None) -> list[int]:
    if case.phase is not None:
        phases = [case.phase]
    elif case.phases:
        phases = case.phases
    elif case.ui_context is not None:
        phases = [CONTEXT_PHASE]
    else:
        phases = list(IMPLEMENTED_PHASES)
    return [p for p in phases if only is None or p == only]


def request_of(case: GoldenCase, phase: int) -> tuple[str, dict[str, Any]]:
    """The endpoint and JSON body a case sends at `phase`."""
    if case.ui_context is not None:
        return "/context", {"query": case.query, "ui_context": case.ui_context}
    body: dict[str, Any] = {"query": case.query, "phase": phase}
    for name in ("top_k", "category"):
        if getattr(case, name) is not None:
            body[name] = getattr(case, name)
    return "/retrieve", body


def endpoint_of(body: dict[str, Any]) -> str:
    """Where a body from `request_of` or `turn_request` goes (replay posters get the body only):
    a case with a screen goes to /context, which has no `phase`; a dialogue's turn always names one."""
    return "/context" if "ui_context" in body and "phase" not in body else "/retrieve"


def turn_request(
    dialogue: Dialogue, number: int, history: list[dict[str, Any]], clarification: dict[str, Any] | None
) -> dict[str, Any]:
    """The /retrieve body of a dialogue's turn, given the turns so far and the last clarification."""
    turn = dialogue.turns[number]
    body: dict[str, Any] = {"query": turn.say, "phase": dialogue.phase}
    if history:
        body["history"] = history[-MAX_DIALOGUE_HISTORY:]
    screen = turn.ui_context if turn.ui_context is not None else dialogue.ui_context
    if screen is not None:
        body["ui_context"] = screen
    if clarification is not None and turn.reply is not False:
        body["reply_to"] = clarification
    return body


def turns_after(say: str, response: dict[str, Any]) -> list[dict[str, Any]]:
    """The two history turns a request and its response add (what the chat panel keeps)."""
    assistant: dict[str, Any] = {"role": "assistant", "content": response.get("message") or ""}
    results = response.get("results") or []
    if response.get("status") == "answer" and results:
        assistant["doc_slugs"] = list(dict.fromkeys(r["doc_slug"] for r in results))[:10]
        if not assistant["content"]:
            first = results[0]
            assistant["content"] = first.get("header_path") or first.get("title") or first["doc_slug"]
    if not assistant["content"]:
        assistant["content"] = str(response.get("status"))
    return [{"role": "user", "content": say}, assistant]


def verdict(case: GoldenCase, failures: list[str]) -> str:
    """PASS / FAIL, or for a `known_failure` case XFAIL (still wrong) / XPASS (fixed: drop the mark)."""
    if case.known_failure is None:
        return "FAIL" if failures else "PASS"
    return "XFAIL" if failures else "XPASS"


def _as_list(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _results(response: dict[str, Any]) -> list[dict[str, Any]]:
    """`/retrieve`'s results, or the documentation citations of a `/context` answer."""
    if "sections" in response:
        return [c for s in response.get("sections") or [] for c in s.get("citations") or []]
    results: list[dict[str, Any]] = response.get("results") or []
    return results


def check(case: GoldenCase, response: dict[str, Any]) -> list[str]:
    """Every way the response misses the expectation (empty list: pass)."""
    expect = case.expect
    failures: list[str] = []
    status = response.get("status")
    results = _results(response)
    slugs = [r.get("doc_slug") for r in results]
    decisions = _as_list(expect.decision)
    if status not in decisions:
        failures.append(f"decision {status!r}, expected {' or '.join(decisions)}")
    options = response.get("options") or []
    if status == "clarify" and "options" in response and len(options) < 2:  # issue 40: a real choice
        failures.append(f"a clarification offering {len(options)} option(s), not a choice")
    tops = _as_list(expect.top)
    if tops and (not slugs or slugs[0] not in tops):
        failures.append(f"top {slugs[0] if slugs else None!r}, expected {' or '.join(tops)}")
    missing = [s for s in expect.includes if s not in slugs]
    if missing:
        failures.append(f"missing {', '.join(missing)} (got {', '.join(map(str, slugs)) or 'nothing'})")
    unwanted = [s for s in expect.excludes if s in slugs]
    if unwanted:
        failures.append(f"unexpected {', '.join(unwanted)}")
    if expect.min_distinct_docs is not None and len(set(slugs)) < expect.min_distinct_docs:
        failures.append(f"{len(set(slugs))} distinct documents, expected ≥ {expect.min_distinct_docs}")
    if expect.header_path and not (results and results[0].get("header_path")):
        failures.append("first result has no header_path")
    if expect.message is not None and response.get("message") != expect.message:
        failures.append(f"message {response.get('message')!r}, expected {expect.message!r}")
    if expect.section is not None:
        path = (results[0].get("header_path") or "") if results else ""
        if expect.section.casefold() not in path.casefold():
            failures.append(f"first section {path!r}, expected one under {expect.section!r}")
    conversation = response.get("conversation") or {}
    if expect.topic is not None and conversation.get("topic", "message") != expect.topic:
        failures.append(f"topic from {conversation.get('topic', 'message')!r}, expected {expect.topic!r}")
    if expect.from_turn is not None and conversation.get("from_turn") != expect.from_turn:
        failures.append(f"topic carried from turn {conversation.get('from_turn')!r}, expected {expect.from_turn}")
    return failures
