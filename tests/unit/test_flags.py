"""flags.yaml schema, environment precedence, and error messages naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.flags import FlagError, Flags, apply_overrides, flag_keys, load_flags

PROJECT_FLAGS = Path(__file__).resolve().parents[2] / "flags.yaml"


def test_the_shipped_flags_file_is_valid_and_complete() -> None:
    flags = load_flags(PROJECT_FLAGS, environ={})
    assert flags.enabled and flags.phase == 3
    assert flags.kill_switch.p95_ms == 500 and flags.kill_switch.min_samples == 20
    assert flags.phases.for_phase(1).min_gap == 2.0
    assert "fusion.weights.semantic" in flag_keys(flags)


def test_environment_beats_the_file(tmp_path: Path) -> None:
    path = tmp_path / "flags.yaml"
    path.write_text("enabled: true\nphase: 3\n")
    flags = load_flags(path, environ={"DOC_RETRIEVAL_PHASE": "1", "DOC_RETRIEVAL_ENABLED": "false"})
    assert flags.phase == 1 and flags.enabled is False


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        ("phase: 4\n", "`phase`"),
        ("typo:\n  similarity_cutof: 90\n", "similarity_cutof"),
        ("phases:\n  keyword:\n    min_gap: -1\n", "phases.keyword.min_gap"),
        ("kill_switch:\n  p95_ms: fast\n", "kill_switch.p95_ms"),
        ("- just\n- a list\n", "mapping"),
        ("phase: [\n", "not valid YAML"),
    ],
)
def test_bad_files_are_rejected_naming_the_key(tmp_path: Path, yaml_text: str, needle: str) -> None:
    path = tmp_path / "flags.yaml"
    path.write_text(yaml_text)
    with pytest.raises(FlagError) as caught:
        load_flags(path, environ={})
    assert needle in str(caught.value)


@pytest.mark.parametrize(
    ("environ", "needle"),
    [
        ({"DOC_RETRIEVAL_PHASE": "7"}, "DOC_RETRIEVAL_PHASE"),
        ({"DOC_RETRIEVAL_PHASE": "two"}, "DOC_RETRIEVAL_PHASE"),
        ({"DOC_RETRIEVAL_ENABLED": "maybe"}, "DOC_RETRIEVAL_ENABLED"),
    ],
)
def test_bad_environment_values_name_the_variable(environ: dict[str, str], needle: str) -> None:
    with pytest.raises(FlagError) as caught:
        load_flags(PROJECT_FLAGS, environ=environ)
    assert needle in str(caught.value)


def test_overrides_are_validated_through_the_same_schema() -> None:
    assert apply_overrides(Flags(), {"phases.chunks.min_score": 4}).phases.chunks.min_score == 4
    with pytest.raises(FlagError, match=r"unknown flag `phases\.chunks\.min_scor`"):
        apply_overrides(Flags(), {"phases.chunks.min_scor": 4})
