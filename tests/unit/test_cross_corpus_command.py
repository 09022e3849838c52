"""`python -m service eval-decisions --cross-corpus` end to end on a small fixture: three labelled
sets with their recorded runs (`--signals`, so no service is started), each corpus decided by a
portable fit made on the other two, the table and its JSON written."""

from __future__ import annotations

import json
import random
from pathlib import Path

import msgspec
import pytest
import yaml

from service.__main__ import main
from service.decide.calibration import FEATURES
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.decisions import Collected

CORPORA = ("alpha", "beta", "gamma")


def _features(rng: random.Random, right: bool) -> dict[str, float]:
    """Signals that tell a right first page from a wrong one, with noise: a sure top page when right."""
    sure = rng.gauss(8.0 if right else 3.0, 2.0)
    return dict.fromkeys(FEATURES, 0.0) | {
        "top_score": 1.0, "tokens": 3.0, "score_ratio": rng.uniform(0.2, 0.6), "top_raw": sure,
        "raw_gap": sure / 2, "max_raw": sure, "matched_terms": 2.0, "matched_share": 0.8 if right else 0.3,
        "top_similarity": 0.7 if right else 0.3,
    }


def write_corpus(tmp: Path, name: str, seed: int) -> tuple[Path, Path]:
    """A labelled set of 90 questions and 30 out-of-domain queries, and its recorded runs."""
    rng = random.Random(seed)
    cases, runs = [], []
    for i in range(120):
        case_id = f"{name}-{i:04d}"
        if i < 90:
            case = {"id": case_id, "query": f"how do I use feature {i} of {name}", "kind": "question",
                    "decision": "answer", "pages": [f"page-{i}"]}
            right = rng.random() < 0.8  # the ranking's first page is right four times in five
            ranked = (f"page-{i}", f"other-{i}") if right else (f"other-{i}", f"page-{i}")
        else:
            case = {"id": case_id, "query": f"what is the weather in town {i}", "kind": "out_of_domain",
                    "decision": "no_match"}
            right, ranked = False, (f"other-{i}", f"page-{i}")
        cases.append(case)
        for phase in (1, 2, 3):
            runs.append(CaseRun(
                case_id=case_id, phase=phase, policy="seed_rules", status="clarify", reason="low_score",
                shown=ranked, ranked=ranked, options=ranked, features=_features(rng, right),
                semantic_ranked=ranked,
            ))
    queries = tmp / f"{name}.yaml"
    queries.write_text(yaml.safe_dump({"corpus": name, "cases": cases}), encoding="utf-8")
    signals = tmp / f"{name}.json"
    signals.write_bytes(msgspec.json.encode(Collected(corpus=name, corpus_fingerprint=f"fp-{name}",
                                                      pages_fingerprint=f"pages-{name}", runs=runs)))
    return queries, signals


def cross_corpus_argv(tmp: Path, *options: str) -> list[str]:
    """The command over the three fixture corpora (written to `tmp`), its JSON to `tmp/out.json`."""
    argv = ["eval-decisions", "--cross-corpus", "--max-wrong", "0.05", *options, "--json", str(tmp / "out.json")]
    for i, name in enumerate(CORPORA):
        queries, signals = write_corpus(tmp, name, seed=i)
        argv += ["--queries", str(queries), "--seeds-dir", str(tmp), "--signals", str(signals)]
    return argv


def test_each_corpus_is_reported_under_the_fit_made_without_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(cross_corpus_argv(tmp_path)) == 0
    printed = capsys.readouterr().out
    assert "## Leave-one-corpus-out, test splits, phase 3" in printed
    assert "| calibrated (leave-one-corpus-out) | pooled |" in printed
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    # Each corpus's fit was made on the other two, and is portable.
    for name in CORPORA:
        fit = report["fits"][name]
        assert fit["portable"] and fit["query_set"] == f"all but {name}"
        assert set(fit["corpus"].split("+")) == set(CORPORA) - {name}
    calibrated = report["table"]["calibrated (leave-one-corpus-out)"]
    assert set(calibrated) == {*CORPORA, "pooled"}
    pooled = calibrated["pooled"]
    assert pooled["cases"] == sum(calibrated[name]["cases"] for name in CORPORA)
    # The signals separate right from wrong first pages, so the held-out decisions beat the seed
    # rules' recorded ones (which asked about everything), and decline most out-of-domain queries.
    assert pooled["right_outcome"] > report["table"]["seed_rules"]["pooled"]["right_outcome"]
    assert pooled["ood_no_match"] >= 0.9
    assert report["per_kind"]["question"]["n"] > 0
    assert report["pooled"]["test"]["cases"] == pooled["cases"]


def test_the_command_refuses_a_single_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queries, signals = write_corpus(tmp_path, "alpha", seed=0)
    argv = ["eval-decisions", "--cross-corpus", "--queries", str(queries), "--seeds-dir", str(tmp_path),
            "--signals", str(signals)]
    assert main(argv) == 2
    assert "--cross-corpus needs two or more --queries" in capsys.readouterr().err


def test_other_fold_assignments_show_how_far_the_figures_move_by_themselves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(cross_corpus_argv(tmp_path, "--fold-assignments", "3")) == 0
    printed = capsys.readouterr().out
    assert "## The same runs under 3 assignments of the cross-fitting folds, phase 3" in printed
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    rows = report["fold_assignments"]
    assert list(rows) == ["", "s1:", "s2:"]
    # The first row is the table's own: the figures the rest of the report gives.
    assert rows[""]["test_right"] == report["pooled"]["test"]["right"]
    assert rows[""]["dev_wrong"] == report["pooled"]["dev"]["wrong"]
    lines = {line.split("|")[1].strip(): line for line in printed.splitlines() if line.startswith("| ")}
    low = min(r["test_right"] for r in rows.values())
    high = max(r["test_right"] for r in rows.values())
    assert f"| {low}–{high} |" in lines["range"]
