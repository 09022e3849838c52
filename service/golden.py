"""Golden-query files: the format acceptance suites depend on, and the checks.

```yaml
cases:
  - id: explain-workspace
    query: explain workspace
    phases: [1, 2, 3]            # optional; default: every implemented phase
    expect:
      decision: answer           # or a list of acceptable decisions
      top: concepts/workspace    # optional; slug or list: first result must be one
      includes: [a/b]            # optional; all must appear among the results
      excludes: [c/d]            # optional; none may appear
      min_distinct_docs: 2       # optional
      header_path: true          # optional; first result has a non-empty header path
      message: "Which part..."   # optional; exact UI text
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import yaml

IMPLEMENTED_PHASES: tuple[int, ...] = (1, 2, 3)
Decision = str


class Expectation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    decision: str | list[str]
    top: str | list[str] | None = None
    includes: list[str] = []
    excludes: list[str] = []
    min_distinct_docs: int | None = None
    header_path: bool = False
    message: str | None = None


class GoldenCase(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    query: str
    expect: Expectation
    phases: list[int] | None = None
    note: str | None = None
    top_k: int | None = None


class GoldenFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    cases: list[GoldenCase]


class GoldenFileError(ValueError):
    """The golden file does not follow the format; names the file and field."""


def load_golden(path: Path) -> list[GoldenCase]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GoldenFileError(f"{path}: {exc}") from exc
    return parse_golden(text, str(path))


def parse_golden(text: str, source: str = "<text>") -> list[GoldenCase]:
    """Golden cases from YAML text (`source` names it in error messages)."""
    try:
        data = yaml.safe_load(text)
        cases = msgspec.convert(data, GoldenFile).cases
    except (yaml.YAMLError, msgspec.ValidationError) as exc:
        raise GoldenFileError(f"{source}: {exc}") from exc
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise GoldenFileError(f"{source}: duplicate case id {case.id!r}")
        seen.add(case.id)
    return cases


def phases_of(case: GoldenCase, only: int | None = None) -> list[int]:
    phases = case.phases or list(IMPLEMENTED_PHASES)
    return [p for p in phases if only is None or p == only]


def _as_list(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def check(case: GoldenCase, response: dict[str, Any]) -> list[str]:
    """Every way the response misses the expectation (empty list: pass)."""
    expect = case.expect
    failures: list[str] = []
    status = response.get("status")
    results = response.get("results") or []
    slugs = [r.get("doc_slug") for r in results]
    decisions = _as_list(expect.decision)
    if status not in decisions:
        failures.append(f"decision {status!r}, expected {' or '.join(decisions)}")
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
    return failures
