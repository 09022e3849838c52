"""flags.yaml → frozen, validated `Flags`; environment and runtime overrides.

Precedence: file < environment < runtime overrides.  Every layer goes through
the same msgspec schema, so a bad value anywhere is rejected with the key's
path named (e.g. ``phases.keyword.min_gap``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import yaml

from service.domain.types import Thresholds

Phase = Annotated[int, msgspec.Meta(ge=1, le=3)]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
NonNegative = Annotated[float, msgspec.Meta(ge=0)]
Fraction = Annotated[float, msgspec.Meta(ge=0, le=1)]
Weight = Annotated[float, msgspec.Meta(ge=0, le=1)]


class _Flags(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base for flag groups: every key must be known."""


class RetrievalFlags(_Flags, frozen=True):
    default_top_k: Annotated[int, msgspec.Meta(ge=1, le=10)] = 3
    max_top_k: Annotated[int, msgspec.Meta(ge=1, le=10)] = 10
    max_chunks_per_doc: PositiveInt = 2
    candidate_pool: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 50


class TypoFlags(_Flags, frozen=True):
    min_token_length: Annotated[int, msgspec.Meta(ge=1, le=20)] = 4
    max_token_length: Annotated[int, msgspec.Meta(ge=4, le=100)] = 32
    similarity_cutoff: Annotated[float, msgspec.Meta(ge=50, le=100)] = 88.0


class ThresholdFlags(_Flags, frozen=True):
    min_score: NonNegative = 3.0
    min_conf: Fraction = 0.3
    min_gap: NonNegative = 2.0
    min_matched_terms: Annotated[int, msgspec.Meta(ge=0, le=10)] = 2

    def to_thresholds(self) -> Thresholds:
        return Thresholds(
            min_score=self.min_score,
            min_conf=self.min_conf,
            min_gap=self.min_gap,
            min_matched_terms=self.min_matched_terms,
        )


class PhaseThresholds(_Flags, frozen=True):
    keyword: ThresholdFlags = ThresholdFlags()
    chunks: ThresholdFlags = ThresholdFlags()
    hybrid: ThresholdFlags = ThresholdFlags()

    def for_phase(self, phase: int) -> Thresholds:
        return (self.keyword, self.chunks, self.hybrid)[phase - 1].to_thresholds()


class SemanticFlags(_Flags, frozen=True):
    similarity_floor: Fraction = 0.35
    answer_similarity: Fraction = 0.55
    margin: Fraction = 0.04
    ef_search: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 64


class FusionWeights(_Flags, frozen=True):
    """(keyword, semantic) per query type; the seed plan's 0.3/0.7 is `default`.

    Identifiers and quoted strings must match literally (exact); questions in
    the user's own words lean on meaning (semantic: 0.3/0.7, measured on
    Cranfield against the issue's 0.15/0.85: nDCG@10 0.4160 vs 0.4068).
    """

    default: tuple[Weight, Weight] = (0.3, 0.7)
    exact: tuple[Weight, Weight] = (0.7, 0.3)
    semantic: tuple[Weight, Weight] = (0.3, 0.7)
    mixed: tuple[Weight, Weight] = (0.4, 0.6)


class FusionFlags(_Flags, frozen=True):
    method: Literal["weighted", "rrf"] = "weighted"
    query_type_weights: bool = True
    """Pick weights by query type; off: `weights.default` for every query."""
    rrf_k: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 60
    weights: FusionWeights = FusionWeights()


class LexicalFlags(_Flags, frozen=True):
    """Ranking of the keyword leg (service/scoring/keyword.py, keyword_formulas.py)."""

    scorer: Literal["seed", "bm25"] = "bm25"
    k1: Annotated[float, msgspec.Meta(ge=0, le=10)] = 1.2
    b: Fraction = 0.75
    title_weight: Annotated[float, msgspec.Meta(ge=0, le=20)] = 2.0
    keyword_weight: Annotated[float, msgspec.Meta(ge=0, le=20)] = 1.0
    content_weight: Annotated[float, msgspec.Meta(ge=0, le=20)] = 1.0


class ChunkingFlags(_Flags, frozen=True):
    max_tokens: Annotated[int, msgspec.Meta(ge=32, le=4096)] = 450


class EmbeddingFlags(_Flags, frozen=True):
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 64
    query_cache_size: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] = 1024
    backend: Literal["torch", "onnx", "onnx-int8"] = "onnx"
    """Model runtime (service/embedding/); read at start-up."""
    batch_wait_ms: Annotated[float, msgspec.Meta(ge=0, le=1000)] = 2.0
    """Longest a query waits for others to share its forward pass."""
    batch_max: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 32
    max_queue_ms: Annotated[float, msgspec.Meta(ge=0, le=60_000)] = 250.0
    """A query whose embedding would wait longer goes to phase 2 at once."""
    remote_batch_size: Annotated[int, msgspec.Meta(ge=1, le=4096)] = 64
    remote_concurrency: Annotated[int, msgspec.Meta(ge=1, le=64)] = 4
    remote_retries: Annotated[int, msgspec.Meta(ge=0, le=20)] = 4
    hnsw_m: Annotated[int, msgspec.Meta(ge=2, le=100)] = 16
    hnsw_ef_construction: Annotated[int, msgspec.Meta(ge=4, le=1000)] = 64


class TimeoutFlags(_Flags, frozen=True):
    db_ms: Annotated[int, msgspec.Meta(ge=1, le=60_000)] = 2000
    phase_ms: Annotated[int, msgspec.Meta(ge=1, le=60_000)] = 2500


class KillSwitchFlags(_Flags, frozen=True):
    p95_ms: Annotated[float, msgspec.Meta(gt=0)] = 500.0
    window_s: Annotated[float, msgspec.Meta(gt=0)] = 300.0
    error_rate: Fraction = 0.05
    min_samples: PositiveInt = 20
    cooldown_s: Annotated[float, msgspec.Meta(ge=0)] = 600.0
    probe_share: Fraction = 0.1


class ContextFlags(_Flags, frozen=True):
    core_concepts: PositiveInt = 500
    retrieved_docs: PositiveInt = 1500
    ui_context: PositiveInt = 300
    widget_states: PositiveInt = 200
    recent_messages: PositiveInt = 500
    total: PositiveInt = 3000
    max_chunks_per_doc: PositiveInt = 2


class SeedingFlags(_Flags, frozen=True):
    """How a documentation folder becomes a corpus (service/ingest/markdown.py, links.py)."""

    broken_links: Literal["warn", "fail"] = "warn"
    default_category: Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)] = "general"
    ignore: tuple[Annotated[str, msgspec.Meta(min_length=1)], ...] = ()


class Flags(_Flags, frozen=True):
    enabled: bool = True
    phase: Phase = 3
    retrieval: RetrievalFlags = RetrievalFlags()
    typo: TypoFlags = TypoFlags()
    phases: PhaseThresholds = PhaseThresholds()
    semantic: SemanticFlags = SemanticFlags()
    fusion: FusionFlags = FusionFlags()
    lexical: LexicalFlags = LexicalFlags()
    chunking: ChunkingFlags = ChunkingFlags()
    embedding: EmbeddingFlags = EmbeddingFlags()
    timeouts: TimeoutFlags = TimeoutFlags()
    kill_switch: KillSwitchFlags = KillSwitchFlags()
    context: ContextFlags = ContextFlags()
    seeding: SeedingFlags = SeedingFlags()


class FlagError(ValueError):
    """A flag value or key was rejected; the message names the key."""


# Environment variables and the flag each one sets.
ENV_VARIABLES: dict[str, str] = {
    "DOC_RETRIEVAL_ENABLED": "enabled",
    "DOC_RETRIEVAL_PHASE": "phase",
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _convert(data: Mapping[str, Any], origin: str) -> Flags:
    try:
        return msgspec.convert(data, Flags, strict=False)
    except msgspec.ValidationError as exc:
        # msgspec names the path as `$.phases.keyword.min_gap`; show it as a dotted key.
        message = str(exc).replace("`$.", "`").replace("`$`", "`(root)`")
        raise FlagError(f"{origin}: {message}") from exc


def load_flags_file(path: Path) -> Flags:
    """Read and validate flags.yaml (a missing file means all defaults)."""
    if not path.exists():
        return Flags()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise FlagError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise FlagError(f"{path}: the top level must be a mapping of flag names")
    return _convert(data, str(path))


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """Flag values set through environment variables, as dotted-key overrides."""
    found: dict[str, Any] = {}
    for variable, key in ENV_VARIABLES.items():
        if variable not in environ:
            continue
        raw = environ[variable].strip().lower()
        if key == "enabled":
            if raw not in _TRUE | _FALSE:
                raise FlagError(f"{variable}: expected true/false, got {environ[variable]!r}")
            found[key] = raw in _TRUE
        else:
            try:
                found[key] = int(raw)
            except ValueError as exc:
                raise FlagError(f"{variable}: expected 1, 2 or 3, got {environ[variable]!r}") from exc
    return found


def flag_keys(flags: Flags | None = None) -> list[str]:
    """Every dotted leaf key, e.g. ``phases.keyword.min_gap``."""
    keys: list[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                walk(f"{prefix}{name}.", item)
        else:
            keys.append(prefix[:-1])

    walk("", msgspec.to_builtins(flags or Flags()))
    return keys


def get_value(flags: Flags, key: str) -> Any:
    value: Any = msgspec.to_builtins(flags)
    for part in key.split("."):
        value = value[part]
    return value


def apply_overrides(flags: Flags, overrides: Mapping[str, Any], origin: str = "override") -> Flags:
    """Return new Flags with dotted-key values replaced, validated by the schema."""
    data: dict[str, Any] = msgspec.to_builtins(flags)
    known = set(flag_keys(flags))
    for key, value in overrides.items():
        if key not in known:
            raise FlagError(f"{origin}: unknown flag `{key}`")
        target = data
        *parents, leaf = key.split(".")
        for part in parents:
            target = target[part]
        target[leaf] = value
    return _convert(data, origin)


def apply_env_overrides(flags: Flags, overrides: Mapping[str, Any]) -> Flags:
    """Apply `env_overrides` one by one, so an error names its environment variable."""
    variable_of = {key: variable for variable, key in ENV_VARIABLES.items()}
    for key, value in overrides.items():
        flags = apply_overrides(flags, {key: value}, variable_of.get(key, "environment"))
    return flags


def load_flags(path: Path, environ: Mapping[str, str] | None = None) -> Flags:
    """flags.yaml, then the environment: what the service starts with."""
    base = load_flags_file(path)
    return apply_env_overrides(base, env_overrides(environ if environ is not None else os.environ))
