"""`python -m lab eval` on a tiny BEIR-layout fixture, against hand-computed metrics."""

from __future__ import annotations

import math
from pathlib import Path

import asyncpg
import pytest

from lab.evaluation.beir import load_beir
from lab.evaluation.command import run_eval
from lab.evaluation.metrics import evaluate
from service.evaluation.harness import database_name
from service.flags import Flags
from service.settings import PROJECT_ROOT, Settings

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "beir_tiny"


def test_metrics_match_hand_computed_values() -> None:
    qrels = {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1}, "q3": {"d5": 3}}
    run = {"q1": ["d2", "d1"], "q2": ["d1", "d3"], "q3": ["d1", "d2"]}
    # q1: DCG = 1/log2(2) + 2/log2(3); ideal = 2/log2(2) + 1/log2(3).
    ndcg_q1 = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    # q2: the one relevant document at rank 2: DCG = 1/log2(3), ideal 1.
    ndcg_q2 = 1 / math.log2(3)
    metrics = evaluate(qrels, run)
    assert metrics["ndcg@10"] == pytest.approx((ndcg_q1 + ndcg_q2 + 0) / 3, abs=1e-4)
    assert metrics["recall@10"] == pytest.approx(2 / 3, abs=1e-4)
    assert metrics["recall@100"] == pytest.approx(2 / 3, abs=1e-4)
    assert metrics["mrr@10"] == pytest.approx((1 + 0.5 + 0) / 3, abs=1e-4)


def test_loader_reads_beir_layout() -> None:
    data = load_beir(TINY)
    assert data.name == "beir_tiny"
    assert [d.doc_id for d in data.corpus] == ["d1", "d2", "d3", "d4", "d5"]
    assert data.qrels == {"q1": {"d1": 2}, "q2": {"d3": 1}, "q3": {"d5": 3}}


async def test_eval_phase1_end_to_end(pg_server: object) -> None:
    """q1 and q2 find their only relevant document first; q3's (d5) shares no word
    with the query: nDCG@10 = recall = MRR = (1 + 1 + 0) / 3."""
    data = load_beir(TINY)
    admin_dsn: str = pg_server.admin_dsn  # type: ignore[attr-defined]
    settings = Settings(migrations_dir=PROJECT_ROOT / "migrations")
    name = database_name(data.name)
    try:
        results = await run_eval(data, admin_dsn, settings, Flags(), [1], 10, baselines=False, variants=False)
    finally:
        conn = await asyncpg.connect(admin_dsn)
        try:
            await conn.execute(f'drop database if exists "{name}" with (force)')
        finally:
            await conn.close()
    assert results["dataset"] == "beir_tiny"
    expected = pytest.approx(2 / 3, abs=1e-4)
    assert results["phases"]["1"] == {"ndcg@10": expected, "recall@10": expected, "recall@100": expected, "mrr@10": expected}
