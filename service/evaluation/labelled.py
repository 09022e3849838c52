"""Labelled query sets (`bench/queries/*.yaml`): the data that decisions are calibrated on.

Each case is a query as a user would type it into the chat panel, with the right decision and
the pages that would satisfy the user. The labels come from reading the documentation, never
from what the service returns, so they can measure the service.

```yaml
corpus: seed                      # which documentation set the slugs refer to
cases:
  - id: seed-para-0042            # stable: the dev/test split is a hash of it
    query: keep my most used pages one click away
    kind: paraphrase              # keyword | question | paraphrase | typo |
                                  # out_of_domain | ambiguous | multi_intent
    decision: answer              # answer | clarify | no_match (fixed by the kind)
    pages: [widgets/quick-links]  # answer: every page that fully answers;
                                  # clarify: the pages a clarification must offer;
                                  # no_match: none
    section: Adding a link        # optional: the heading that answers it
    note: why this label          # optional
```

`python -m service.evaluation.labelled FILE...` prints the cases per kind and split.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import msgspec
import yaml

Kind = Literal["keyword", "question", "paraphrase", "typo", "out_of_domain", "ambiguous", "multi_intent"]
Decision = Literal["answer", "clarify", "no_match"]
Split = Literal["dev", "test"]

KINDS: tuple[Kind, ...] = get_args(Kind)
SPLITS: tuple[Split, ...] = ("dev", "test")

# The kind fixes the right decision: a query the docs do not cover must not be guessed at,
# a genuinely ambiguous one must be asked about, and a two-need message is answered with both.
DECISION_OF_KIND: Mapping[Kind, Decision] = {
    "keyword": "answer",
    "question": "answer",
    "paraphrase": "answer",
    "typo": "answer",
    "out_of_domain": "no_match",
    "ambiguous": "clarify",
    "multi_intent": "answer",
}

# Share of case ids (by hash) that land in the dev split; the rest is test.
DEV_PERCENT = 60

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*(?:/[a-z0-9]+(?:-[a-z0-9]+)*)*$")


class LabelledQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    id: str
    query: str
    kind: Kind
    decision: Decision
    pages: tuple[str, ...] = ()
    section: str | None = None
    note: str | None = None

    @property
    def split(self) -> Split:
        return split_of(self.id)


class _QuerySetFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    corpus: str
    description: str | None = None
    cases: list[dict[str, Any]]


class QuerySetError(ValueError):
    """The query set does not follow the format; the message names the file and the case."""


def split_of(case_id: str) -> Split:
    """`dev` or `test`, from a stable hash of the id (the same on every machine and run)."""
    bucket = int.from_bytes(hashlib.sha256(case_id.encode("utf-8")).digest()[:8], "big") % 100
    return "dev" if bucket < DEV_PERCENT else "test"


def load_query_set(path: Path | str) -> list[LabelledQuery]:
    return load_labelled_set(path)[1]


def load_labelled_set(path: Path | str) -> tuple[str, list[LabelledQuery]]:
    """The corpus a query set labels (its `corpus:`) and its cases."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise QuerySetError(f"{path}: {exc}") from exc
    return parse_labelled_set(text, str(path))


def parse_query_set(text: str, source: str = "<text>") -> list[LabelledQuery]:
    return parse_labelled_set(text, source)[1]


def parse_labelled_set(text: str, source: str = "<text>") -> tuple[str, list[LabelledQuery]]:
    """The corpus and the cases from YAML text; every problem is reported with `source` and the case's id."""
    try:
        data = yaml.safe_load(text)
        query_set = msgspec.convert(data, _QuerySetFile)
    except (yaml.YAMLError, msgspec.ValidationError) as exc:
        raise QuerySetError(f"{source}: {exc}") from exc
    raw_cases = query_set.cases
    cases: list[LabelledQuery] = []
    ids: set[str] = set()
    queries: dict[str, str] = {}
    for index, raw in enumerate(raw_cases):
        name = f"case {raw.get('id')!r}" if isinstance(raw.get("id"), str) else f"case #{index + 1}"
        try:
            case = msgspec.convert(raw, LabelledQuery)
        except msgspec.ValidationError as exc:
            raise QuerySetError(f"{source}: {name}: {exc}") from exc
        problem = _problem(case)
        if problem is None and case.id in ids:
            problem = "duplicate id"
        key = query_key(case.query)
        if problem is None and key in queries:
            problem = f"same query text as case {queries[key]!r}"
        if problem is not None:
            raise QuerySetError(f"{source}: {name}: {problem}")
        ids.add(case.id)
        queries[key] = case.id
        cases.append(case)
    return query_set.corpus, cases


def _problem(case: LabelledQuery) -> str | None:
    if not case.id.strip():
        return "empty id"
    if not case.query.strip():
        return "empty query"
    expected = DECISION_OF_KIND[case.kind]
    if case.decision != expected:
        return f"kind {case.kind!r} needs decision {expected!r}, not {case.decision!r}"
    if case.decision == "no_match" and case.pages:
        return "a no_match case lists no pages"
    if case.decision == "answer" and not case.pages:
        return "an answer case needs at least one acceptable page"
    if case.decision == "clarify" and len(set(case.pages)) < 2:
        return "a clarify case needs the two or more pages a clarification must offer"
    if len(set(case.pages)) != len(case.pages):
        return "a page is listed twice"
    bad = [page for page in case.pages if not _SLUG.match(page)]
    if bad:
        return f"not a page slug: {', '.join(bad)}"
    return None


def query_key(query: str) -> str:
    # Case, spacing and end punctuation do not make a different query.
    return " ".join(query.casefold().split()).strip(" ?!.,")


def summary(cases: Iterable[LabelledQuery]) -> dict[str, dict[str, int]]:
    """Cases per kind and split: `{kind: {"dev": n, "test": n, "total": n}}`, plus `"all"`."""
    counts: Counter[tuple[str, str]] = Counter()
    for case in cases:
        counts[(case.kind, case.split)] += 1
        counts[("all", case.split)] += 1
    table: dict[str, dict[str, int]] = {}
    for kind in (*KINDS, "all"):
        row: dict[str, int] = {split: counts[(kind, split)] for split in SPLITS}
        row["total"] = sum(row.values())
        table[kind] = row
    return table


def format_summary(cases: Sequence[LabelledQuery]) -> str:
    """The summary as a Markdown table (kind, dev, test, total, share of all cases)."""
    table = summary(cases)
    total = table["all"]["total"] or 1
    lines = ["| kind | dev | test | total | share |", "|---|---:|---:|---:|---:|"]
    for kind, row in table.items():
        share = f"{100 * row['total'] / total:.0f} %"
        lines.append(f"| {kind} | {row['dev']} | {row['test']} | {row['total']} | {share} |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    if not argv:
        print("usage: python -m service.evaluation.labelled FILE...", file=sys.stderr)
        return 2
    for name in argv:
        try:
            cases = load_query_set(name)
        except QuerySetError as exc:
            print(exc, file=sys.stderr)
            return 1
        print(f"{name}: {len(cases)} cases\n\n{format_summary(cases)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
