"""flags.yaml schema, environment precedence, and error messages naming the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from service.flags import (
    FLAG_MEANINGS,
    FlagError,
    Flags,
    apply_overrides,
    flag_keys,
    flags_table,
    get_value,
    load_flags,
    with_flags_table,
)

PROJECT_FLAGS = Path(__file__).resolve().parents[2] / "flags.yaml"
CONFIGURATION_PAGE = PROJECT_FLAGS.parent / "docs" / "configuration.md"


def _documentation() -> list[Path]:
    """The README and every page of the documentation site."""
    return [PROJECT_FLAGS.parent / "README.md", *sorted((PROJECT_FLAGS.parent / "docs").rglob("*.md"))]


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
    """The shipped service runs on the schema's defaults: flags.yaml changes none of them."""
    assert load_flags(PROJECT_FLAGS, environ={}) == Flags()


def test_the_shipped_flags_file_repeats_no_default() -> None:
    """One home per default: a key in flags.yaml is an override, never a copy of the schema."""
    data = yaml.safe_load(PROJECT_FLAGS.read_text(encoding="utf-8")) or {}
    defaults = Flags()

    def repeated(prefix: str, value: object) -> list[str]:
        if isinstance(value, dict):
            return [key for name, item in value.items() for key in repeated(f"{prefix}{name}.", item)]
        key = prefix[:-1]
        default = get_value(defaults, key)
        same = list(value) == list(default) if isinstance(value, list) else value == default
        return [key] if same else []

    assert repeated("", data) == [], "flags.yaml repeats schema defaults; delete those keys"


def test_a_key_left_out_of_the_file_is_the_schema_default(tmp_path: Path) -> None:
    path = tmp_path / "flags.yaml"
    path.write_text("# only comments\n")
    assert load_flags(path, environ={}) == Flags()
    path.write_text("semantic:\n  margin: 0.05\n")
    flags = load_flags(path, environ={})
    assert flags.semantic.margin == 0.05
    assert apply_overrides(flags, {"semantic.margin": Flags().semantic.margin}) == Flags()


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


# `key` default / `key` (default) / `key` = default, as the README and docs quote flags in prose;
# a pair is written 0.3/0.7.
_NUMBER = r"\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)?"
_QUOTED = re.compile(rf"`([a-z_0-9]+(?:\.[a-z_0-9]+)*)`:? (?:({_NUMBER})\b(?![^\s,;.)])|\(({_NUMBER})\)|= ({_NUMBER})\b)")


def _quoted_defaults(text: str, where: str) -> int:
    """Assert every default `text` quotes in prose is the schema's; how many it checked."""
    # ``...`` spans quote example output (e.g. an error naming a bad value), not defaults.
    text = re.sub(r"``.*?``", "", text, flags=re.S)
    defaults = Flags()
    keys = flag_keys(defaults)
    checked = 0
    for name, *forms in _QUOTED.findall(text):
        quoted = next(form for form in forms if form)
        matches = [key for key in keys if key == name or key.endswith(f".{name}")]
        if len(matches) != 1:
            continue  # not a flag (or ambiguous: the text must then use the dotted key)
        value = get_value(defaults, matches[0])
        numbers = [float(part) for part in quoted.split("/")]
        expected = [float(v) for v in value] if isinstance(value, list | tuple) else [float(value)]
        assert numbers == expected, f"{where} quotes `{name}` {quoted}; the schema says {value}"
        checked += 1
    return checked


# Dated experiment notes quote the values of their day (history, not defaults).
_HISTORY = "quality/notes/"


def test_every_default_the_documentation_quotes_is_the_schema_default() -> None:
    checked = 0
    for page in _documentation():
        if _HISTORY in page.as_posix():
            continue
        checked += _quoted_defaults(page.read_text(encoding="utf-8"), str(page.relative_to(PROJECT_FLAGS.parent)))
    assert checked >= 3  # the check found the documentation's quotes at all


def test_a_wrong_quoted_default_is_caught() -> None:
    with pytest.raises(AssertionError, match=r"semantic\.margin"):
        _quoted_defaults("a `semantic.margin` 0.5 gap", "example")


def test_the_documented_flags_table_is_generated_from_the_schema() -> None:
    page = CONFIGURATION_PAGE.read_text(encoding="utf-8")
    assert flags_table() in page and with_flags_table(page) == page, (
        "docs/configuration.md's flags table is stale: regenerate it with `python -m service.flags --write`"
    )


def test_the_documented_table_shows_every_schema_default() -> None:
    """Row by row: each flag's documented default is the schema's, and no flag is missing."""
    page = CONFIGURATION_PAGE.read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([a-z_0-9.]+)` \| `([^`]*)` \|", page, flags=re.M))
    defaults = Flags()
    assert sorted(rows) == sorted(flag_keys(defaults))
    for key, shown in rows.items():
        assert yaml.safe_load(shown) == _as_yaml(get_value(defaults, key)), key


def _as_yaml(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def test_every_flag_has_a_meaning_and_every_meaning_a_flag() -> None:
    keys = set(flag_keys())
    assert set(FLAG_MEANINGS) <= keys, f"meanings of unknown flags: {set(FLAG_MEANINGS) - keys}"
    missing = {key for key in keys - set(FLAG_MEANINGS) if not key.startswith("phases.")}
    assert not missing, f"flags without a meaning in service/flags.py FLAG_MEANINGS: {missing}"
