"""flags.yaml schema, environment precedence, and error messages naming the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.flags import (
    FlagError,
    Flags,
    apply_overrides,
    flag_keys,
    flags_table,
    get_value,
    load_flags,
)

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


def test_the_schema_defaults_are_the_shipped_file() -> None:
    """One default per flag: flags.yaml and the schema agree on every value."""
    assert load_flags(PROJECT_FLAGS, environ={}) == Flags()


@pytest.mark.parametrize(
    ("yaml_text", "keys"),
    [
        ("typo:\n  min_token_length: 20\n  max_token_length: 4\n",
         ["typo.min_token_length", "typo.max_token_length"]),
        ("retrieval:\n  default_top_k: 10\n  max_top_k: 1\n",
         ["retrieval.default_top_k", "retrieval.max_top_k"]),
        ("retrieval:\n  max_top_k: 60\n", ["retrieval.max_top_k", "retrieval.candidate_pool"]),
        ("semantic:\n  similarity_floor: 0.9\n  answer_similarity: 0.1\n",
         ["semantic.similarity_floor", "semantic.answer_similarity"]),
        ("semantic:\n  margin: 0.6\n", ["semantic.margin", "semantic.answer_similarity"]),
        ("semantic:\n  ef_search: 10\n", ["semantic.ef_search", "retrieval.candidate_pool"]),
        ("context:\n  total: 1\n", ["context.total", "context.core_concepts", "context.retrieved_docs"]),
        ("context:\n  ui_context: 5000\n  total: 4000\n", ["context.ui_context", "context.total"]),
        ("fusion:\n  weights:\n    exact: [0.7, 0.7]\n", ["fusion.weights.exact"]),
        ("lexical:\n  title_weight: 0\n  keyword_weight: 0\n  content_weight: 0\n",
         ["lexical.title_weight", "lexical.content_weight"]),
        ("kill_switch:\n  probe_share: 0\n", ["kill_switch.probe_share"]),
    ],
)
def test_contradictory_values_stop_start_up_naming_both_keys(
    tmp_path: Path, yaml_text: str, keys: list[str]
) -> None:
    path = tmp_path / "flags.yaml"
    path.write_text(yaml_text)
    with pytest.raises(FlagError) as caught:
        load_flags(path, environ={})
    for key in keys:
        assert f"`{key}`" in str(caught.value)


def test_a_key_written_twice_names_the_key_and_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "flags.yaml"
    path.write_text("phase: 3\nsemantic:\n  margin: 0.04\n  ef_search: 64\n  margin: 0.1\n")
    with pytest.raises(FlagError, match=r"`margin` is written twice \(lines 3 and 5\)"):
        load_flags(path, environ={})


def test_overrides_are_checked_as_a_whole() -> None:
    # Raising both together is consistent; raising only the default is not.
    both = apply_overrides(Flags(), {"retrieval.default_top_k": 20, "retrieval.max_top_k": 20})
    assert both.retrieval.default_top_k == 20
    with pytest.raises(FlagError, match=r"`retrieval\.default_top_k` .* `retrieval\.max_top_k`"):
        apply_overrides(Flags(), {"retrieval.default_top_k": 20})


@pytest.mark.parametrize(("key", "value"), [("phase", "2"), ("enabled", "true"), ("typo.similarity_cutoff", "90")])
def test_strings_are_not_coerced(key: str, value: str) -> None:
    with pytest.raises(FlagError, match=f"Expected .*, got `str` - at `{key}`"):
        apply_overrides(Flags(), {key: value})


# `key` default / `key` (default) / `key` = default, as the README quotes flags in prose;
# a pair is written 0.3/0.7.
_NUMBER = r"\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)?"
_QUOTED = re.compile(rf"`([a-z_0-9]+(?:\.[a-z_0-9]+)*)`:? (?:({_NUMBER})\b(?![^\s,;.)])|\(({_NUMBER})\)|= ({_NUMBER})\b)")


def test_every_default_the_readme_quotes_is_the_schema_default() -> None:
    readme = (PROJECT_FLAGS.parent / "README.md").read_text(encoding="utf-8")
    # ``...`` spans quote example output (e.g. an error naming a bad value), not defaults.
    readme = re.sub(r"``.*?``", "", readme, flags=re.S)
    defaults = Flags()
    keys = flag_keys(defaults)
    checked = 0
    for name, *forms in _QUOTED.findall(readme):
        quoted = next(form for form in forms if form)
        matches = [key for key in keys if key == name or key.endswith(f".{name}")]
        if len(matches) != 1:
            continue  # not a flag (or ambiguous: the README must then use the dotted key)
        value = get_value(defaults, matches[0])
        numbers = [float(part) for part in quoted.split("/")]
        expected = [float(v) for v in value] if isinstance(value, list | tuple) else [float(value)]
        assert numbers == expected, f"README quotes `{name}` {quoted}; the schema says {value}"
        checked += 1
    assert checked >= 3  # the check found the README's quotes at all


def test_the_readme_flags_table_is_generated_from_the_schema() -> None:
    readme = (PROJECT_FLAGS.parent / "README.md").read_text(encoding="utf-8")
    assert flags_table(PROJECT_FLAGS) in readme, (
        "README's flags table is stale: regenerate it with `python -m service.flags`"
    )
