"""`/ready` names the relevance model where `relevance.enabled` loads it, and nothing while it
is off; a model whose files are not the ones its manifest names stops start-up (issue 41 item 3)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.relevance.model import MODEL_DIR, RelevanceModelError, read_manifest
from tests.conftest import app_settings, quiet_flags_file, wait_until_ready

TOKENIZER = "tokenizer.json"


def _flags_with_relevance(tmp_path: Path) -> Path:
    data = yaml.safe_load(quiet_flags_file().read_text(encoding="utf-8")) or {}
    data["relevance"] = {"enabled": True}
    target = tmp_path / "flags.yaml"
    target.write_text(yaml.safe_dump(data), encoding="utf-8")
    return target


async def test_ready_names_the_relevance_model_only_when_enabled(
    db_url: str, fixture_seeds: Path, tmp_path: Path,
) -> None:
    manifest = read_manifest(MODEL_DIR)
    settings = app_settings(db_url, fixture_seeds, flags_file=_flags_with_relevance(tmp_path))
    async with AsyncTestClient(app=create_app(settings)) as client:
        ready = await wait_until_ready(client, semantic=False)
    shown = ready["relevance_model"]
    assert shown["file"] == manifest["model"]["file"], ready
    assert manifest["model"]["sha256"].startswith(shown["sha256"]), ready
    assert shown["layers"] == manifest["model"]["layers"], ready

    async with AsyncTestClient(app=create_app(app_settings(db_url, fixture_seeds))) as client:
        ready = await wait_until_ready(client, semantic=False)
    assert ready["relevance_model"] is None, ready


def test_a_changed_model_stops_start_up(db_url: str, fixture_seeds: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(MODEL_DIR, copy)
    (copy / TOKENIZER).write_text((copy / TOKENIZER).read_text(encoding="utf-8") + " ", encoding="utf-8")
    settings = app_settings(db_url, fixture_seeds, flags_file=_flags_with_relevance(tmp_path), relevance_model=copy)
    with pytest.raises(RelevanceModelError, match="refusing to load it"):
        create_app(settings)
