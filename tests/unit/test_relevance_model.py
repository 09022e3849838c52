"""The shipped relevance model (service/relevance/): the files its manifest names, the
refusal of any other file, and scores a reader would agree with."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from service.relevance.model import (
    MANIFEST,
    MODEL_DIR,
    RelevanceModel,
    RelevanceModelError,
    read_manifest,
)
from service.relevance.passage import opening, passage


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_shipped_files_are_the_ones_the_training_command_wrote() -> None:
    manifest = read_manifest(MODEL_DIR)
    graph = MODEL_DIR / manifest["model"]["file"]
    assert _sha256(graph) == manifest["model"]["sha256"]
    assert _sha256(MODEL_DIR / manifest["tokenizer"]["file"]) == manifest["tokenizer"]["sha256"]
    assert graph.stat().st_size <= 30 * 1024 * 1024, "the shipped model must stay under 30 MB"
    # The recipe names what it was trained from: the pool's commits and the base model's hash.
    recipe = manifest["recipe"]
    assert recipe["base"]["files"]["model.safetensors"]
    assert all(len(s["commit"]) == 40 for s in recipe["pool"]["sets"].values())
    assert not {"starlette-docs", "restic-docs", "prettier-docs", "pinia-docs", "helix-docs",
                "foam-docs"} & set(recipe["pool"]["sets"]), "a reserved evaluation set was mined"


@pytest.fixture(scope="module")
def model() -> RelevanceModel:
    return RelevanceModel()


def test_a_changed_graph_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(MODEL_DIR, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    graph = copy / manifest["model"]["file"]
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF
    graph.write_bytes(bytes(data))
    with pytest.raises(RelevanceModelError, match=r"sha256 \w+ is not the manifest's"):
        RelevanceModel(copy)


def test_a_missing_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RelevanceModelError, match="manifest not found"):
        RelevanceModel(tmp_path)


def test_the_right_section_scores_above_a_wrong_one(model: RelevanceModel) -> None:
    cases = [
        ("how do I run only the tests that failed last time",
         "Usage > Rerunning failures: The --last-failed option reruns only the tests that failed at the last run.",
         "Installation: Install the package with pip and check the version it prints."),
        ("set a timeout for requests",
         "Advanced > Timeouts: Every request takes a timeout in seconds; a request slower than that raises an error.",
         "Authentication > Basic auth: Pass a username and a password to send credentials with each request."),
    ]
    for query, right, wrong in cases:
        scores = model.score(query, [right, wrong])
        assert scores[0] > scores[1], (query, scores)


def test_no_passages_no_scores(model: RelevanceModel) -> None:
    assert model.score("anything", []) == []


def test_ready_names_the_model(model: RelevanceModel) -> None:
    shown = model.info.describe()
    manifest = read_manifest(MODEL_DIR)
    assert shown["file"] == manifest["model"]["file"]
    assert manifest["model"]["sha256"].startswith(shown["sha256"])
    assert shown["layers"] == manifest["model"]["layers"]


def test_passage_is_heading_path_and_opening_sentences() -> None:
    text = "First sentence here. Second one follows. " + "Filler words go on and on. " * 30
    cut = passage("Guide > Setup", text, max_chars=60)
    assert cut == "Guide > Setup: First sentence here. Second one follows."
    # Code is read only where a section has no prose at all.
    assert opening("```python\nimport x\n```\n\nThen call it.") == "Then call it."
    assert opening("```python\nimport x\n```") == "import x"
    # A link's words, not its target.
    assert opening("See [the setup guide](setup.md#install).") == "See the setup guide."
