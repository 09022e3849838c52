"""The decision experiments' reader of a signals directory (lab/experiments/signals.py)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import yaml

from lab.experiments.signals import SignalsError, load_runs, seed_rule_runs, signal_sets
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.decisions import Collected
from service.evaluation.labelled import SPLITS, split_of


def ids_in(split: str, count: int) -> list[str]:
    found = (f"t-kw-{i:04d}" for i in range(1000))
    return [case_id for case_id in found if split_of(case_id) == split][:count]


def write_set(queries: Path, name: str, corpus: str, ids: list[str]) -> None:
    cases = [
        {"id": i, "query": f"query {i}", "kind": "keyword", "decision": "answer", "pages": ["a/x"]}
        for i in ids
    ]
    queries.mkdir(exist_ok=True)
    (queries / f"{name}.yaml").write_text(
        yaml.safe_dump({"corpus": corpus, "cases": cases}), encoding="utf-8"
    )


def run(case_id: str, phase: int = 3, policy: str = "seed_rules") -> CaseRun:
    return CaseRun(
        case_id=case_id,
        phase=phase,
        policy=policy,
        status="answer",
        reason="r",
        shown=("a/x",),
        ranked=("a/x",),
        options=(),
        features={},
    )


def write_signals(signals: Path, name: str, corpus: str, runs: list[CaseRun]) -> None:
    signals.mkdir(exist_ok=True)
    collected = Collected(corpus=corpus, corpus_fingerprint="f", pages_fingerprint="p", runs=runs)
    (signals / f"{name}.json").write_bytes(msgspec.json.encode(collected))


def test_the_default_sets_are_the_labelled_ones_with_a_signals_file(tmp_path: Path) -> None:
    queries, signals = tmp_path / "queries", tmp_path / "signals"
    for name in ("b", "a", "c"):
        write_set(queries, name, f"{name}-docs", ids_in("test", 1))
    for name in ("a", "b", "stray"):
        write_signals(signals, name, f"{name}-docs", [])
    assert signal_sets(signals, queries) == ["a", "b"]


def test_signals_of_another_corpus_are_refused(tmp_path: Path) -> None:
    queries, signals = tmp_path / "queries", tmp_path / "signals"
    write_set(queries, "a", "a-docs", ids_in("test", 1))
    write_signals(signals, "a", "b-docs", [])
    with pytest.raises(
        SignalsError, match=r"a\.json: the signals are of b-docs, the set of a-docs"
    ):
        load_runs(signals, ["a"], queries)


def test_the_runs_are_the_seed_rules_at_one_phase_of_the_splits_asked_in_labelled_order(
    tmp_path: Path,
) -> None:
    queries, signals = tmp_path / "queries", tmp_path / "signals"
    tests, devs = ids_in("test", 3), ids_in("dev", 1)
    labelled = [tests[1], devs[0], tests[0], tests[2]]
    write_set(queries, "a", "a-docs", labelled)
    # tests[2] has no phase-3 seed-rules run; the others come in another order than the set's.
    runs = [
        run(tests[0]),
        run(devs[0]),
        run(tests[1]),
        run(tests[0], phase=2),
        run(tests[2], policy="calibrated"),
    ]
    write_signals(signals, "a", "a-docs", runs)
    corpora = load_runs(signals, ["a"], queries)

    assert [(name, case.id, r.phase, r.policy) for name, case, r in seed_rule_runs(corpora)] == [
        ("a", tests[1], 3, "seed_rules"),
        ("a", tests[0], 3, "seed_rules"),
    ]
    assert [case.id for _, case, _ in seed_rule_runs(corpora, SPLITS)] == [
        devs[0],
        tests[1],
        tests[0],
    ]
    assert [case.id for _, case, _ in seed_rule_runs(corpora, phase=2)] == [tests[0]]
