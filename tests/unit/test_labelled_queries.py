"""The labelled query sets in bench/queries: format, page slugs, proportions and the split."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.evaluation.labelled import (
    KINDS,
    LabelledQuery,
    QuerySetError,
    load_query_set,
    parse_query_set,
    split_of,
    summary,
)

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ROOT / "bench" / "queries"
SEEDS = ROOT / "seeds"
# The copy in the repo first, else the shared corpus beside the checkout (a worktree sits one
# level deeper than the main tree).
LOGSEQ_DIRS = (
    ROOT / "tests" / "corpora" / "logseq-docs",
    ROOT.parent / "shared" / "corpora" / "logseq-docs",
    ROOT.parent.parent / "shared" / "corpora" / "logseq-docs",
)

# Minimum cases per set and the least share of out-of-domain cases (issue #18).
MINIMUM_CASES = {"seed.yaml": 400, "logseq.yaml": 200}
MIN_OUT_OF_DOMAIN = 0.20


def _seed_slugs() -> set[str]:
    return {f"{path.parent.name}/{path.stem}" for path in SEEDS.glob("*/*.md")}


def _path_slug(relative: Path) -> str:
    # The slug rule of issue #17 for any Markdown tree: per path segment, lower-cased,
    # every run outside a-z0-9 becomes one "-", trimmed.
    parts = [*relative.parent.parts, relative.name.removesuffix(".md")]
    return "/".join(re.sub(r"[^a-z0-9]+", "-", part.lower()).strip("-") for part in parts)


def _logseq_root() -> Path | None:
    return next((path for path in LOGSEQ_DIRS if path.is_dir()), None)


@pytest.fixture(scope="module", params=sorted(MINIMUM_CASES))
def query_set(request: pytest.FixtureRequest) -> tuple[str, list[LabelledQuery]]:
    name: str = request.param
    return name, load_query_set(QUERIES / name)


def test_each_set_is_big_enough_and_has_its_share_of_out_of_domain(
    query_set: tuple[str, list[LabelledQuery]],
) -> None:
    name, cases = query_set
    assert len(cases) >= MINIMUM_CASES[name]
    table = summary(cases)
    assert table["out_of_domain"]["total"] / len(cases) >= MIN_OUT_OF_DOMAIN
    assert {kind for kind in KINDS if table[kind]["total"] == 0} == set()


def test_each_split_holds_every_kind(query_set: tuple[str, list[LabelledQuery]]) -> None:
    _, cases = query_set
    table = summary(cases)
    empty = [(kind, split) for kind in KINDS for split in ("dev", "test") if table[kind][split] == 0]
    assert empty == []
    # Roughly 60 / 40 overall.
    assert 0.5 <= table["all"]["dev"] / table["all"]["total"] <= 0.7


def test_seed_pages_exist() -> None:
    slugs = _seed_slugs()
    cases = load_query_set(QUERIES / "seed.yaml")
    missing = sorted({(case.id, page) for case in cases for page in case.pages if page not in slugs})
    assert missing == []


def test_logseq_pages_exist() -> None:
    root = _logseq_root()
    if root is None:
        pytest.skip(f"no logseq-docs corpus at {' or '.join(map(str, LOGSEQ_DIRS))}")
    slugs = {_path_slug(path.relative_to(root)) for path in root.rglob("*.md") if path.name != "LICENSE.md"}
    cases = load_query_set(QUERIES / "logseq.yaml")
    missing = sorted({(case.id, page) for case in cases for page in case.pages if page not in slugs})
    assert missing == []


def test_slug_rule_examples() -> None:
    assert _path_slug(Path("Block Reference.md")) == "block-reference"
    assert _path_slug(Path("Whiteboard___Action Bar___Reload.md")) == "whiteboard-action-bar-reload"
    assert _path_slug(Path("New to Logseq%3F.md")) == "new-to-logseq-3f"
    assert _path_slug(Path("Plugins/Command palette.md")) == "plugins/command-palette"


def test_split_is_fixed_by_the_id() -> None:
    # Recorded once: a change to the hash or the cut would silently reshuffle dev and test.
    recorded = {
        "seed-kw-0001": "test", "seed-para-0042": "dev", "logseq-q-0007": "test",
        "seed-ood-0100": "dev", "x": "test", "logseq-amb-0003": "dev",
    }
    assert {case_id: split_of(case_id) for case_id in recorded} == recorded


def test_split_is_about_sixty_forty() -> None:
    ids = [f"case-{n}" for n in range(2000)]
    share = sum(split_of(case_id) == "dev" for case_id in ids) / len(ids)
    assert 0.57 <= share <= 0.63


GOOD = """
corpus: seed
cases:
  - {id: a, query: what is home, kind: question, decision: answer, pages: [concepts/home]}
  - {id: b, query: billing, kind: out_of_domain, decision: no_match, pages: []}
  - {id: c, query: pin, kind: ambiguous, decision: clarify, pages: [concepts/notes, widgets/quick-links]}
"""


def _with_case(case: str) -> str:
    return GOOD + "  - " + case + "\n"


def test_a_well_formed_set_loads() -> None:
    cases = parse_query_set(GOOD)
    assert [case.id for case in cases] == ["a", "b", "c"]
    assert cases[2].pages == ("concepts/notes", "widgets/quick-links")
    assert cases[0].split == split_of("a")


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("{id: d, query: q1, kind: question, decision: answer, pages: [a/b], colour: red}", "colour"),
        ("{id: d, query: q1, kind: quiz, decision: answer, pages: [a/b]}", "kind"),
        ("{id: d, query: q1, kind: question, decision: maybe, pages: [a/b]}", "decision"),
        ("{id: d, query: q1, kind: question, decision: answer, pages: []}", "at least one acceptable page"),
        ("{id: d, query: q1, kind: ambiguous, decision: clarify, pages: [a/b]}", "two or more pages"),
        ("{id: d, query: q1, kind: out_of_domain, decision: no_match, pages: [a/b]}", "no_match case lists no pages"),
        ("{id: d, query: q1, kind: out_of_domain, decision: answer, pages: [a/b]}", "needs decision 'no_match'"),
        ("{id: d, query: q1, kind: question, decision: answer, pages: [Concepts/Home]}", "not a page slug"),
        ("{id: a, query: q1, kind: question, decision: answer, pages: [a/b]}", "duplicate id"),
        ("{id: d, query: '  What is HOME? ', kind: question, decision: answer, pages: [a/b]}", "same query text as case 'a'"),
    ],
)
def test_a_bad_case_fails_naming_the_case(case: str, problem: str) -> None:
    with pytest.raises(QuerySetError) as caught:
        parse_query_set(_with_case(case), "set.yaml")
    message = str(caught.value)
    assert message.startswith("set.yaml: case ")
    assert problem in message
    assert "'a'" in message if problem == "duplicate id" else "'d'" in message


def test_a_case_without_an_id_is_named_by_position() -> None:
    with pytest.raises(QuerySetError, match=r"case #4"):
        parse_query_set(_with_case("{query: q1, kind: question, decision: answer, pages: [a/b]}"))


def test_unknown_top_level_keys_and_broken_yaml_fail() -> None:
    with pytest.raises(QuerySetError, match="extra"):
        parse_query_set(GOOD + "extra: 1\n")
    with pytest.raises(QuerySetError, match=r"^set\.yaml: "):
        parse_query_set("cases: [\n", "set.yaml")


def test_summary_counts_per_kind_and_split() -> None:
    cases = parse_query_set(GOOD)
    table = summary(cases)
    assert table["all"]["total"] == 3
    assert table["question"]["total"] == 1
    assert table["question"][split_of("a")] == 1
    assert table["keyword"] == {"dev": 0, "test": 0, "total": 0}
