"""The one place a decision is made: a tier's `Candidates` → Answer | Clarify | NoMatch.

Tiers retrieve (service/tiers.py); the `Decider` decides, for every phase and both policies:

- **which policy** (`decision.policy`, a `Policy`; an unknown name fails with the valid ones):
  `seed_rules`, the seed plan's rules (`seed_rules.py`, and `seed_rules_phase3.py` at phase 3),
  or `calibrated`, P(top page right) from the fitted model (`calibration.py`) when a fit
  applies to the served pages (the corpus's own, else the portable one), else the seed rules;
- **multi-intent** messages: each part's own keyword ranking, two strong distinct pages →
  both (`seed_rules.decide_multi_intent`; under `calibrated` the sure ones first, or none);
- **the reasons a policy keeps**: the calibrated policy keeps the seed rules' decisions that
  no threshold makes (`CERTAIN_REASONS`: out of domain, the query names a page or two);
- **phase 2's view of phase 3's keyword leg**: phase 3 decides with the seed rules' verdict
  on its keyword leg, and under `calibrated` with phase 2's p on it (`KeywordVerdict`).

`replayed_status` is the same routing on recorded signals: `fit-decisions` replays it over a
grid of operating points without running the service again; a test holds the two equal.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

import msgspec

from service.decide import clarify
from service.decide.calibration import (
    CERTAIN_REASONS,
    CalibrationError,
    CalibrationModel,
    KeywordVerdict,
    SemanticView,
    choose,
    decide_calibrated,
    decision_signals,
    explain,
    features_of,
    load_model,
    multi_intent_pages,
    order_of,
    probability,
    third_joins_question,
    words_found,
)
from service.decide.seed_rules import (
    NAMES_PAGES,
    NAMING_REASONS,
    decide,
    decide_multi_intent,
    distinct_documents,
    ranked_by_score,
)
from service.decide.seed_rules_phase3 import decide_hybrid
from service.domain.candidates import Candidates
from service.domain.signals import DecisionSignals
from service.domain.types import Answer, Decision, Evidence, NoMatch, NormalizedQuery
from service.flags import DecisionFlags, DecisionPoint, Flags

log = logging.getLogger(__name__)

CALIBRATION_FILE = Path(__file__).parent / "data" / "calibration.json"
"""The served corpus's own fit (`fit-decisions`): used on the pages it was fitted on."""
PORTABLE_CALIBRATION_FILE = Path(__file__).parent / "data" / "portable.json"
"""The fit for a corpus without one of its own (`fit-decisions --portable`)."""


class Policy(StrEnum):
    """The values of `decision.policy`."""

    seed_rules = "seed_rules"
    calibrated = "calibrated"

    @classmethod
    def named(cls, name: str) -> Policy:
        try:
            return cls(name)
        except ValueError:
            valid = ", ".join(p.value for p in cls)
            raise ValueError(f"unknown decision.policy {name!r}; valid: {valid}") from None


def load_calibration(path: Path = CALIBRATION_FILE) -> tuple[CalibrationModel | None, str | None]:
    """The fitted model, or None and why (`decision.policy: calibrated` then keeps the seed rules)."""
    try:
        return load_model(path), None
    except CalibrationError as err:
        log.warning("calibrated decision unavailable, the seed rules decide: %s", err)
        return None, str(err)


@dataclass(frozen=True)
class Decided:
    decision: Decision
    signals: DecisionSignals | None
    """What the decision was made from, whichever policy made it (None: the Tier-1 cache)."""


class Decider:
    """Decides every tier's candidates. Built once with the fits it may use; told when the
    served pages change (a fit made on other pages does not decide them)."""

    def __init__(
        self,
        *,
        own: CalibrationModel | None = None,
        portable: CalibrationModel | None = None,
        own_error: str | None = None,
    ) -> None:
        self.own = own
        """The corpus's own fit (`fit-decisions`)."""
        self.portable = portable
        """The fit for any corpus (`fit-decisions --portable`)."""
        self.own_error = own_error
        """Why the own fit did not load (None: it loaded, or none was expected)."""
        self._served_pages = ""

    @classmethod
    def from_files(
        cls, own: Path = CALIBRATION_FILE, portable: Path = PORTABLE_CALIBRATION_FILE
    ) -> Decider:
        own_model, error = load_calibration(own)
        portable_model, _ = load_calibration(portable)
        return cls(own=own_model, portable=portable_model, own_error=error)

    # -- which fit --------------------------------------------------------------------
    def serve_pages(self, pages_fingerprint: str) -> None:
        """The served corpus changed (`calibration.pages_fingerprint` of its slugs)."""
        self._served_pages = pages_fingerprint

    @property
    def served_pages(self) -> str:
        return self._served_pages

    def use_own(self, model: CalibrationModel | None, error: str | None = None) -> None:
        """Swap the corpus's own fit at run time: a fit learned from reviewed traffic, activated
        or restored on any replica (`fit_store`), or the fit file again (`error`: why it is
        not in use). With `serve_pages`, the only change a Decider takes."""
        self.own, self.own_error = model, error

    def active_calibration(self) -> CalibrationModel | None:
        """The fit that decides under `calibrated`: the corpus's own when it was fitted on the
        served pages, else the portable one, else none (the seed rules decide)."""
        for model in (self.own, self.portable):
            if model is not None and model.fits(self._served_pages):
                return model
        return None

    def calibration_problem(self) -> str | None:
        """Why the corpus's own fit does not decide, and what does instead (None: no problem)."""
        if self.own_error is not None:
            return self.own_error
        model = self.own
        if model is None or model.fits(self._served_pages):
            return None
        instead = self.active_calibration()
        then = (f"the portable fit {instead.version} decides" if instead is not None
                else "the seed rules decide")
        return (f"calibration {model.version} was fitted on the pages of corpus {model.corpus!r}, not on the "
                f"served ones: {then}; fit this corpus with `python -m service fit-decisions`")

    def policy_in_force(self, flags: Flags) -> Policy:
        """The policy that decides now: `calibrated` only with a fit that applies."""
        policy = Policy.named(flags.decision.policy)
        if policy is Policy.calibrated and self.active_calibration() is None:
            return Policy.seed_rules
        return policy

    def with_points(self, flags: Flags) -> Flags:
        """The flags a request decides with: under `calibrated`, the operating points of the fit
        in force (`CalibrationModel.points`)."""
        model = self._model(flags)
        return flags if model is None else msgspec.structs.replace(flags, decision=model.points(flags.decision))

    def _model(self, flags: Flags) -> CalibrationModel | None:
        if Policy.named(flags.decision.policy) is not Policy.calibrated:
            return None
        return self.active_calibration()

    # -- deciding -----------------------------------------------------------------------
    def decide(self, candidates: Candidates, query: NormalizedQuery, flags: Flags) -> Decided:
        """`flags` as `with_points` made them."""
        model = self._model(flags)
        if query.intent == "small_talk":  # "hi there", "thanks, that helped!": no page is meant
            reply = clarify.SMALL_TALK.get(query.subject, clarify.NO_MATCH)
            return Decided(NoMatch(message=reply, reason="small_talk"), None)
        if candidates.phase == 0:  # the Tier-1 cache answers with its one entry
            return Decided(Answer(results=tuple(candidates.ranking), confidence=1.0, reason="tier1_cache"), None)
        if candidates.phase == 3:
            return self._phase3(candidates, query, flags, model)
        return self._keyword(candidates, query, flags, model)

    def _keyword(
        self, candidates: Candidates, query: NormalizedQuery, flags: Flags, model: CalibrationModel | None,
    ) -> Decided:
        """Phases 1 and 2 (and phase 3's keyword leg, with `model` None): the seed rules on the
        ranking, multi-intent from the parts' rankings, else the fit's p when it applies."""
        phase = candidates.phase
        ranking = list(candidates.ranking)
        thresholds = flags.phases.for_phase(phase)
        seed = decide(ranking, query, thresholds, is_stub=candidates.is_stub)
        signals = msgspec.structs.replace(decision_signals(query, ranking), keyword_reason=seed.reason)
        if query.is_multi_intent:
            signals = msgspec.structs.replace(signals, parts=tuple(
                _part_signals(_part_query(query, tokens), list(part), flags, phase)
                for tokens, part in zip(query.parts, candidates.parts, strict=True)
            ))
            multi = decide_multi_intent([list(p) for p in candidates.parts], query, thresholds)
            if multi is not None:
                # The parts' pages with their evidence from the whole query's ranking: one scale.
                multi = multi_intent_on(ranking, multi)
            if multi is not None and model is not None:
                # Sure pages first among the options, in the order the answer shows its pages
                # (as fit-decisions replays it: `replayed_status`).
                multi = sure_first(model, flags.decision, phase, multi, signals)
            if multi is not None:
                return Decided(multi, signals)
        if model is not None and seed.reason not in CERTAIN_REASONS:
            return Decided(_calibrated(model, flags.decision, phase, query, ranking, signals.features), signals)
        return Decided(seed, signals)

    def _phase3(
        self, candidates: Candidates, query: NormalizedQuery, flags: Flags, model: CalibrationModel | None,
    ) -> Decided:
        keyword = list(candidates.keyword or ())
        leg = Candidates(phase=3, ranking=keyword, parts=candidates.parts, is_stub=candidates.is_stub)
        on_keyword = self._keyword(leg, query, flags, None)  # the seed rules' view of the keyword leg
        fused = list(candidates.ranking)
        assert on_keyword.signals is not None
        view = SemanticView(signal=candidates.semantic, pages=dict(candidates.page_similarity)) \
            if candidates.semantic is not None else None
        signals = msgspec.structs.replace(
            decision_signals(query, fused, view, top_page(keyword)),
            parts=on_keyword.signals.parts, keyword_reason=on_keyword.signals.keyword_reason,
            semantic_ranking=tuple(sorted(candidates.page_similarity, key=lambda s: -candidates.page_similarity[s])[:10]),
        )
        seed_keyword = on_keyword.decision
        decision: Decision
        if (
            isinstance(seed_keyword, Answer) and seed_keyword.reason == "multi_intent"
            and (model is None or sure_first(model, flags.decision, 2, seed_keyword, on_keyword.signals) is not None)
        ):
            # Multi-intent stays (its parts are keyword searches: phase 2's model judges them),
            # with phase 3's scores: one scale for every phase-3 result.
            decision = multi_intent_on(fused, seed_keyword)
        elif model is not None and signals.keyword_reason == "out_of_domain":
            decision = NoMatch(message=clarify.NO_MATCH, reason="out_of_domain")
        elif model is not None and signals.keyword_reason not in CERTAIN_REASONS:
            decision = _calibrated(model, flags.decision, 3, query, fused, signals.features, keyword=keyword)
        else:
            assert candidates.semantic is not None
            decision = decide_hybrid(fused, seed_keyword, candidates.semantic, query, flags.semantic)
        return Decided(decision, signals)


# -- the calibrated policy's pieces ---------------------------------------------------------
def top_page(ranking: Sequence[Evidence]) -> str | None:
    pages = distinct_documents(ranked_by_score(ranking), limit=1)
    return pages[0].doc_slug if pages else None


def keyword_verdict(
    model: CalibrationModel, flags: DecisionFlags, query: NormalizedQuery, keyword: Sequence[Evidence]
) -> KeywordVerdict:
    """Phase 2's p on phase 3's keyword leg (the same ranking phase 2 decides on)."""
    p = probability(model.phases["2"], features_of(query, keyword))
    return KeywordVerdict(p=p, top_doc=top_page(keyword), point=flags.at(2))


def _calibrated(
    model: CalibrationModel,
    flags: DecisionFlags,
    phase: int,
    query: NormalizedQuery,
    ranking: Sequence[Evidence],
    signals: dict[str, float],
    *,
    keyword: Sequence[Evidence] | None = None,
) -> Decision:
    """`signals`: `features_of` the same ranking."""
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


def sure_first(
    model: CalibrationModel, flags: DecisionFlags, phase: int, multi: Answer, signals: DecisionSignals
) -> Answer | None:
    """The multi-intent answer with the pages its parts are sure of first among its options (its
    results stay in the order of their scores), or None when it does not stand under the
    calibrated check (`calibration.multi_intent_pages`)."""
    order = multi_intent_pages(
        model.phases[str(phase)], flags.at(phase), [e.doc_slug for e in multi.results], signals.parts,
    )
    if order is None:
        return None
    place = order_of(order)  # the results stay in the order of their scores
    return msgspec.structs.replace(multi, options=tuple(sorted(multi.options, key=lambda o: place(o.doc_slug))))


def _part_query(query: NormalizedQuery, tokens: tuple[str, ...]) -> NormalizedQuery:
    """One part of a multi-intent query as a query of its own (for its decision signals)."""
    return msgspec.structs.replace(query, tokens=tokens, phrase=" ".join(tokens), parts=(), is_multi_intent=False)


def _part_signals(query: NormalizedQuery, ranking: list[Evidence], flags: Flags, phase: int) -> DecisionSignals:
    """A multi-intent part's signals, with the seed rules' reason on its ranking."""
    reason = decide(ranking, query, flags.phases.for_phase(phase)).reason
    return msgspec.structs.replace(decision_signals(query, ranking), keyword_reason=reason)


# -- the same routing on recorded signals (fit-decisions' grid) -----------------------------------
class RecordedRun(Protocol):
    """One run's decision and the signals it was made from, as `Outcome` reports them
    (`evaluation.decision_metrics.CaseRun`)."""

    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def shown(self) -> tuple[str, ...]: ...
    @property
    def options(self) -> tuple[str, ...]: ...
    @property
    def ranked(self) -> tuple[str, ...]: ...
    @property
    def features(self) -> dict[str, float]: ...
    @property
    def second_same_need(self) -> bool: ...
    @property
    def third_score_ratio(self) -> float: ...
    @property
    def keyword_reason(self) -> str: ...


RULES: dict[str, str] = {
    "named_page": "a query that is a page's title answers with that page ('what is X', 'advanced queries')",
    "synonym_named_pages": "a query the corpus's synonyms make the title of two pages asks between them",
    "out_of_domain_words": "a word the corpus never uses while only body text matched: no match",
    "multi_intent": "two needs in one message, each a sure page: both pages",
    "third_contender": "a third page as level as the second joins the question",
    "phase2_verdict": "phase 3 also reads phase 2's p on its keyword leg",
    "same_need": "a second page under the same heading is named related, not asked about",
    "words_found": "a query whose every word is on the top page is asked about, never declined",
}
"""The calibrated policy's special rules by name: `replayed_status(without=…)` replays the
decision without them (the ablation, `eval-decisions --cross-corpus`)."""


def replayed_status(
    run: RecordedRun, p: float, point: DecisionPoint, keyword: KeywordVerdict | None,
    multi: Sequence[str] | None = (), *, without: frozenset[str] = frozenset(),
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(status, shown pages, options) the calibrated policy gives a seed-rules run's signals at
    `p` and `point`: `Decider` routing, on numbers. `multi`: a multi-intent answer's pages in
    the calibrated order (`multi_intent_pages`; empty: as shown), None when it does not stand.
    `without`: `RULES` left out."""
    if run.reason == "multi_intent" and multi is not None and "multi_intent" not in without:
        place = order_of(multi)  # sure pages first among the options; results keep their scores' order
        return run.status, run.shown, tuple(sorted(run.options, key=place))
    kept = run.reason != "multi_intent"
    if kept and run.keyword_reason == "out_of_domain" and "out_of_domain_words" not in without:
        return "no_match", (), ()
    if kept and run.keyword_reason in NAMING_REASONS and "named_page" not in without:
        return "answer", run.shown, ()  # the seed rules' answer: the named page first
    if kept and run.keyword_reason == NAMES_PAGES and "synonym_named_pages" not in without:
        return "clarify", run.shown, run.options  # the seed rules' question between the named pages
    f = run.features
    ranked = run.ranked
    if not ranked or f["top_score"] <= 0 or f["tokens"] == 0:
        return "no_match", (), ()
    action = choose(
        p, score_ratio=f["score_ratio"], has_second=len(ranked) > 1,
        second_same_need=run.second_same_need and "same_need" not in without, point=point,
        keyword=None if "phase2_verdict" in without else keyword, top_doc=ranked[0],
        found=words_found(f) and "words_found" not in without,
    )
    if action == "no_match":
        return "no_match", (), ()
    if action == "ambiguous":
        third = "third_contender" not in without and third_joins_question(run.third_score_ratio, point)
        options = ranked[:3] if third else ranked[:2]
    elif action == "weak":
        options = ranked[:3]
    else:
        options = ()
    return ("answer" if action == "answer" else "clarify"), ranked, options
