"""The pipeline's entry to the calibrated decision: signals → p → decision (pure).

`policy.decide` / `hybrid_policy.decide_hybrid` (the seed plan's rules) and this are the
two values of `decision.policy`.  The fitted file is read once at start-up
(`load_calibration`) and named in /ready.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import msgspec

from service.decide.calibration import (
    CalibrationError,
    CalibrationModel,
    KeywordVerdict,
    SemanticView,
    decide_calibrated,
    explain,
    features_of,
    load_model,
    probability,
    words_found,
)
from service.decide.policy import distinct_documents, ranked_by_score
from service.domain.types import Answer, Decision, Evidence, NormalizedQuery
from service.flags import DecisionFlags

log = logging.getLogger(__name__)

CALIBRATION_FILE = Path(__file__).parent / "data" / "calibration.json"
"""The served corpus's own fit (`fit-decisions`): used on the pages it was fitted on."""
PORTABLE_CALIBRATION_FILE = Path(__file__).parent / "data" / "portable.json"
"""The fit for a corpus without one of its own (`fit-decisions --portable`)."""


def load_calibration(path: Path = CALIBRATION_FILE) -> tuple[CalibrationModel | None, str | None]:
    """The fitted model, or None and why (`decision.policy: calibrated` then keeps the seed rules)."""
    try:
        return load_model(path), None
    except CalibrationError as err:
        log.warning("calibrated decision unavailable, the seed rules decide: %s", err)
        return None, str(err)


def top_page(ranking: Sequence[Evidence]) -> str | None:
    pages = distinct_documents(ranked_by_score(ranking), limit=1)
    return pages[0].doc_slug if pages else None


def keyword_verdict(
    model: CalibrationModel, flags: DecisionFlags, query: NormalizedQuery, keyword: Sequence[Evidence]
) -> KeywordVerdict:
    """Phase 2's p on phase 3's keyword leg (the same ranking phase 2 decides on)."""
    p = probability(model.phases["2"], features_of(query, keyword))
    return KeywordVerdict(p=p, top_doc=top_page(keyword), point=flags.at(2))


def calibrated_decision(
    model: CalibrationModel,
    flags: DecisionFlags,
    phase: int,
    query: NormalizedQuery,
    ranking: Sequence[Evidence],
    signals: dict[str, float],
    *,
    keyword: Sequence[Evidence] | None = None,
) -> Decision:
    """`signals` are `features_of` the same ranking (the pipeline computes them for every policy)."""
    phase_model = model.phases[str(phase)]
    p = probability(phase_model, signals)
    verdict = keyword_verdict(model, flags, query, keyword) if keyword is not None and phase == 3 else None
    return decide_calibrated(
        ranking, query, p, explain(phase_model, signals, p), flags.at(phase), keyword=verdict,
        found=words_found(signals),
    )


def multi_intent_on(ranking: Sequence[Evidence], multi: Answer) -> Answer:
    """A multi-intent answer's pages with their evidence from `ranking`, the whole query's
    ranking (the scale of every other result of that phase), best score first."""
    best = {e.doc_slug: e for e in reversed(ranked_by_score(ranking))}
    results = [best.get(e.doc_slug, e) for e in multi.results]
    if any(e.doc_slug not in best for e in multi.results):
        return multi  # a page only a part's own search found: keep its scale whole
    return msgspec.structs.replace(multi, results=tuple(ranked_by_score(results)))


__all__ = [
    "CALIBRATION_FILE", "PORTABLE_CALIBRATION_FILE", "SemanticView", "calibrated_decision", "keyword_verdict", "load_calibration",
    "multi_intent_on", "top_page",
]
