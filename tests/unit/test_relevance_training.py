"""`python -m lab train-relevance` end to end on a tiny pool (tests/fixtures/relevance-pool):
mined pairs, two training steps of a one-layer model, the ONNX export, and a model
directory the service's loader accepts; the reserved evaluation sets are never read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.__main__ import main
from lab.relevance.pool import PoolError, set_names
from service.relevance.model import RelevanceModel

POOL = Path(__file__).resolve().parents[1] / "fixtures" / "relevance-pool"


def _train(root: Path, out: str) -> None:
    code = main([
        "train-relevance", "--pool", str(POOL), "--out", str(root / out), "--work-dir", str(root / "work"),
        "--sample", str(root / "sample.md"), "--layers", "1", "--max-steps", "2", "--groups", "8",
        "--batch-groups", "4",
    ])
    assert code == 0


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("relevance")
    _train(root, "model")
    return root


def test_a_rerun_reproduces_the_model(trained: Path) -> None:
    _train(trained, "again")
    first, second = (json.loads((trained / d / "manifest.json").read_text()) for d in ("model", "again"))
    assert second["model"] == first["model"], "the same pool and options must give the same file"
    assert second["recipe"] == first["recipe"]


def test_the_command_writes_a_model_the_service_loads(trained: Path) -> None:
    manifest = json.loads((trained / "model" / "manifest.json").read_text())
    model = RelevanceModel(trained / "model")
    assert model.info.layers == 1
    assert len(model.score("descale the kettle", ["Cleaning: vinegar and water", "Soil: compost"])) == 2
    recipe = manifest["recipe"]
    assert recipe["pool"]["sets"]["kettle-docs"]["commit"] == "1" * 40
    assert recipe["pool"]["sets"]["garden-docs"]["commit"] == "2" * 40
    assert recipe["complete"] is False, "a one-step smoke run is not the full training"
    mined = recipe["pairs"]["mined"]
    # Both kettle links say something other than their target's heading: "how to descale
    # the kettle" → Removing limescale; both definition lists give two terms each.
    assert mined["link"] >= 2 and mined["definition"] == 4 and mined["title"] >= 4, mined
    assert recipe["held_out"]["onnx-int8"]["top1"] is not None
    assert manifest["run"]["peak_rss_mb"] > 0
    # What the service's reading contributes is recorded: another chunk size mines other pairs.
    assert recipe["reading"]["chunking_max_tokens"] > 0
    assert len(recipe["reading"]["flags_sha256"]) == 64 and manifest["run"]["code"]


def test_the_sample_shows_pairs_to_read(trained: Path) -> None:
    text = (trained / "sample.md").read_text()
    assert "| link | kettle-docs | how to descale the kettle |" in text


def test_reserved_sets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PoolError, match="reserved for labelled evaluation"):
        set_names(POOL, ["kettle-docs", "starlette-docs"])
    (tmp_path / "pinia-docs").mkdir()
    (tmp_path / "pinia-docs" / "SOURCE").write_text("commit: 0\n")
    (tmp_path / "ok-docs").mkdir()
    (tmp_path / "ok-docs" / "SOURCE").write_text("commit: 0\n")
    assert set_names(tmp_path) == ["ok-docs"]


def test_the_evaluation_corpora_are_never_a_pool() -> None:
    with pytest.raises(PoolError, match="evaluation corpora"):
        set_names(POOL.parents[1] / "corpora")
