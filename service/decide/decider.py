"""The one place a decision is made: a tier's `Candidates` → Answer | Clarify | NoMatch.

Tiers retrieve (service/tiers.py); the `Decider` decides, for every phase and both policies:

- **which policy** (`decision.policy`, a `Policy`; an unknown name fails with the valid ones):
  `seed_rules`, the seed plan's rules (`seed_rules.py`, and `seed_rules_phase3.py` at phase 3),
  or `calibrated`, P(top page right) from the fitted model (`calibration.py`) when a fit
  applies to the served pages (the corpus's own, else the portable one), else the seed rules;
- **multi-intent** messages: each part's own keyword ranking, two strong distinct pages → both
  (`seed_rules.decide_multi_intent`). The seed rules answer with both; the calibrated policy
  decides the message as one query by p (letting the split decide did not pay on six corpora:
  docs/quality/cross-corpus.md) and, when it answers, offers the other need's page too, so
  the user gets both pages (issue 40: "two needs in one message, under the default");
- **two special cases under `calibrated`**: p against the fit's three points decides, but a first
  page a name of the query pins down is answered from `calibration.NAME_PIN_MIN_P` up (issue 42),
  and a query of one or two content words is answered from `calibration.SHORT_QUERY_ANSWER_P`
  (`point_for`); both paid on twelve corpora, where every special rule once kept in front of p
  was left out for not paying on six;
- **before either policy**: small talk gets its reply, and a query about a name no page
  mentions is a no match (`names.unknown_names`, issue 42);
- **phase 3's keyword leg**: under the seed rules, phase 3 decides with their verdict on it.

`replayed_status` is the same routing on recorded signals: `fit-decisions` replays it over a
grid of operating points without running the service again; a test holds the two equal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

import msgspec

from service.decide import clarify, names
from service.decide.calibration import (
    CLOSEST_MATCHES,
    CalibrationError,
    CalibrationModel,
    SemanticView,
    choose,
    decide_calibrated,
    decision_signals,
    explain,
    load_model,
    pins_page,
    point_for,
    probability,
)
from service.decide.corpus_probes import CorpusProbes, adapted, shift_of
from service.decide.seed_rules import (
    decide,
    decide_multi_intent,
    distinct_documents,
    option_of,
    ranked_by_score,
)
from service.decide.seed_rules_phase3 import decide_hybrid
from service.domain.candidates import Candidates
from service.domain.signals import DecisionSignals
from service.domain.types import Answer, Clarify, Decision, Evidence, NoMatch, NormalizedQuery
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
        self._self_check: CorpusProbes | None = None

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

    def use_self_check(self, figures: CorpusProbes | None) -> None:
        """The served corpus's self-check (`service.corpus_check`); None while there is none."""
        self._self_check = figures

    @property
    def self_check(self) -> CorpusProbes | None:
        return self._self_check

    def corpus_shift(self, flags: DecisionFlags, model: CalibrationModel) -> float:
        """Phase 3's shift of p, in logits, from a self-check made under `model` (0 without one,
        or with `decision.corpus_shift_strength` 0, the default)."""
        check = self._self_check
        if check is None or check.fit != model.version:
            return 0.0
        return shift_of(check.hits, check.probes, check.mean_p, flags.corpus_shift_strength,
                        flags.corpus_shift_reference)

    def policy_in_force(self, flags: Flags) -> Policy:
        """The policy that decides now: `calibrated` only with a fit that applies."""
        policy = Policy.named(flags.decision.policy)
        if policy is Policy.calibrated and self.active_calibration() is None:
            return Policy.seed_rules
        return policy

    def with_points(self, flags: Flags) -> Flags:
        """The flags a request decides with: under `calibrated`, the operating points of the fit
        in force (`CalibrationModel.points`)."""
        model = self.model_in_force(flags)
        return flags if model is None else msgspec.structs.replace(flags, decision=model.points(flags.decision))

    def model_in_force(self, flags: Flags) -> CalibrationModel | None:
        """The fit whose p decides now: None under `seed_rules` or without a fit that applies."""
        if Policy.named(flags.decision.policy) is not Policy.calibrated:
            return None
        return self.active_calibration()

    # -- deciding -----------------------------------------------------------------------
    def decide(self, candidates: Candidates, query: NormalizedQuery, flags: Flags) -> Decided:
        """`flags` as `with_points` made them."""
        model = self.model_in_force(flags)
        if query.intent == "small_talk":  # "hi there", "thanks, that helped!": no page is meant
            reply = clarify.SMALL_TALK.get(query.subject, clarify.NO_MATCH)
            return Decided(NoMatch(message=reply, reason="small_talk"), None)
        if unknown := names.unknown_names(query):  # it asks about a name no page mentions
            closest = () if query.only_identifiers else distinct_documents(
                ranked_by_score(candidates.ranking), CLOSEST_MATCHES)
            return Decided(names.no_match(unknown, closest), None)
        if candidates.phase == 0:  # the Tier-1 cache answers with its one entry
            return Decided(Answer(results=tuple(candidates.ranking), confidence=1.0, reason="tier1_cache"), None)
        if candidates.phase == 3:
            return self._phase3(candidates, query, flags, model)
        return self._keyword(candidates, query, flags, model)

    def _keyword(
        self, candidates: Candidates, query: NormalizedQuery, flags: Flags, model: CalibrationModel | None,
    ) -> Decided:
        """Phases 1 and 2: the fit's p when a fit applies, else the seed rules."""
        ranking = list(candidates.ranking)
        signals = decision_signals(query, ranking, pinned=candidates.pinned, whole_pages=candidates.whole_pages)
        if model is not None:
            decision = _calibrated(model, flags.decision, candidates.phase, query, ranking, signals.features,
                                   candidates.pinned)
            decision = content_first(decision, candidates.is_stub)
            return Decided(self._second_need(decision, candidates, query, flags), signals)
        return Decided(self._seed_rules(candidates, query, flags), signals)

    def _second_need(self, decision: Decision, candidates: Candidates, query: NormalizedQuery, flags: Flags) -> Decision:
        """A calibrated decision on a message with two needs on different pages (each part's own
        ranking has a strong page): an answer offers the other need's page too (the first page
        stays p's); a clarification or no match asks between the two pages when the whole
        message ranks both among its first (`two_needs_question`)."""
        if not query.is_multi_intent or (isinstance(decision, Answer) and not decision.results) \
                or decision.reason == NOTHING_SIMILAR:
            return decision
        thresholds = flags.phases.for_phase(candidates.phase)
        multi = decide_multi_intent([list(p) for p in candidates.parts], query, thresholds)
        if multi is None:
            return decision
        if isinstance(decision, Answer):
            return with_second_need(decision, multi)
        return two_needs_question(decision, candidates.ranking, multi)

    def _seed_rules(self, candidates: Candidates, query: NormalizedQuery, flags: Flags) -> Decision:
        """The seed rules on a keyword ranking (phases 1-2, or phase 3's keyword leg): multi-intent
        from the parts' rankings, else `seed_rules.decide`."""
        ranking = list(candidates.ranking)
        thresholds = flags.phases.for_phase(candidates.phase)
        if query.is_multi_intent:
            multi = decide_multi_intent([list(p) for p in candidates.parts], query, thresholds)
            if multi is not None:
                # The parts' pages with their evidence from the whole query's ranking: one scale.
                return multi_intent_on(ranking, multi)
        return decide(ranking, query, thresholds, is_stub=candidates.is_stub)

    def _phase3(
        self, candidates: Candidates, query: NormalizedQuery, flags: Flags, model: CalibrationModel | None,
    ) -> Decided:
        keyword = list(candidates.keyword or ())
        fused = list(candidates.ranking)
        view = SemanticView(signal=candidates.semantic, pages=dict(candidates.page_similarity)) \
            if candidates.semantic is not None else None
        signals = msgspec.structs.replace(
            decision_signals(query, fused, view, top_page(keyword), candidates.pinned, candidates.whole_pages),
            semantic_ranking=tuple(sorted(candidates.page_similarity, key=lambda s: -candidates.page_similarity[s])[:10]),
        )
        if model is not None:
            shift = self.corpus_shift(flags.decision, model)
            calibrated = content_first(
                _calibrated(model, flags.decision, 3, query, fused, signals.features, candidates.pinned, shift),
                candidates.is_stub)
            return Decided(self._second_need(calibrated, candidates, query, flags), signals)
        leg = Candidates(phase=3, ranking=keyword, parts=candidates.parts, is_stub=candidates.is_stub)
        seed_keyword = self._seed_rules(leg, query, flags)  # the seed rules' view of the keyword leg
        decision: Decision
        if isinstance(seed_keyword, Answer) and seed_keyword.reason == "multi_intent":
            # Multi-intent stays, with phase 3's scores: one scale for every phase-3 result.
            decision = multi_intent_on(fused, seed_keyword)
        else:
            assert candidates.semantic is not None
            decision = decide_hybrid(fused, seed_keyword, candidates.semantic, query, flags.semantic)
        return Decided(decision, signals)


# -- the calibrated policy's pieces ---------------------------------------------------------
def top_page(ranking: Sequence[Evidence]) -> str | None:
    pages = distinct_documents(ranked_by_score(ranking), limit=1)
    return pages[0].doc_slug if pages else None


def _calibrated(
    model: CalibrationModel,
    flags: DecisionFlags,
    phase: int,
    query: NormalizedQuery,
    ranking: Sequence[Evidence],
    signals: dict[str, float],
    pinned: Collection[str] = frozenset(),
    shift: float = 0.0,
) -> Decision:
    """`signals`: `features_of` the same ranking; `pinned`: `Candidates.pinned`; `shift`: the
    corpus's self-check shift of p, in logits (`Decider.corpus_shift`)."""
    phase_model = model.phases[str(phase)]
    p = adapted(probability(phase_model, signals), shift)
    point = flags.at(phase)
    if nothing_similar(signals, point):
        return NoMatch(message=clarify.NO_MATCH, reason=NOTHING_SIMILAR, confidence=round(p, 4))
    why = explain(phase_model, signals, p)
    if shift:
        why += f"; the corpus self-check's shift {shift:+.2f} logits included"
    return decide_calibrated(ranking, query, p, why, point, pinned)


NOTHING_SIMILAR = "calibrated_nothing_similar"
STUB_DEPTH = 3
"""How far down an answer's pages a page with content still covers the query a stub was first for."""


def content_first(decision: Decision, is_stub: Callable[[str], bool] | None) -> Decision:
    """An answer led by a stub (a page with nothing to say on its own: only properties, links or
    an include) while a page with content is among its first pages: the stub's results go, so the
    page with content answers (issue 42); the rest keep their score order."""
    if not isinstance(decision, Answer) or not decision.results or is_stub is None:
        return decision
    if not content_leads([e.doc_slug for e in distinct_documents(decision.results, limit=STUB_DEPTH)], is_stub):
        return decision
    return msgspec.structs.replace(
        decision, results=tuple(e for e in decision.results if not is_stub(e.doc_slug)),
        options=tuple(o for o in decision.options if not is_stub(o.doc_slug)))


def content_leads(pages: Sequence[str], is_stub: Callable[[str], bool]) -> bool:
    """`pages` (an answer's first, best first) are led by a stub with a page with content
    among the first `STUB_DEPTH`: the stubs give way."""
    first = pages[:STUB_DEPTH]
    return bool(first) and is_stub(first[0]) and not all(is_stub(page) for page in first)


def nothing_similar(features: Mapping[str, float], point: DecisionPoint) -> bool:
    """Phase 3: no chunk of the corpus is near the query (`decision.nothing_similar_below`), so the
    keyword leg's matches on stray words (`{0} %s`, `<script>`) are not a page about it."""
    return bool(features["top_similarity"] < point.nothing_similar_below)


def multi_intent_on(ranking: Sequence[Evidence], multi: Answer) -> Answer:
    """A multi-intent answer's pages with their evidence from `ranking`, the whole query's
    ranking (the scale of every other result of that phase), best score first."""
    best = {e.doc_slug: e for e in reversed(ranked_by_score(ranking))}
    results = [best.get(e.doc_slug, e) for e in multi.results]
    if any(e.doc_slug not in best for e in multi.results):
        return multi  # a page only a part's own search found: keep its scale whole
    return msgspec.structs.replace(multi, results=tuple(ranked_by_score(results)))


def with_second_need(answer: Answer, multi: Answer) -> Answer:
    """`answer` offering both needs' pages (the parts' strong pages, `multi`): "Which one should I
    go deeper on?". The results keep their score order (the other need's page is among them)."""
    first = ranked_by_score(answer.results)[0]
    second = second_need(first.doc_slug, [e.doc_slug for e in multi.results])
    if second is None:  # the first page is neither part's: p's answer stands
        return answer
    evidence = next(e for e in multi.results if e.doc_slug == second)
    return msgspec.structs.replace(
        answer, message=clarify.MULTI_INTENT, options=(option_of(first), option_of(evidence)),
        reason="calibrated_two_needs",
    )


TWO_NEEDS_DEPTH = 3
"""A message's two needs are asked about when p does not answer only if the whole message ranks
both pages among its first three: a split on a single need's "and" ("keep passwords out of my
code and load settings from a dotenv file") gives pages the whole message does not rank there.
Over the twelve labelled sets it took multi-intent messages with both pages offered from 62.3 to
72.1 % (test) and changed the question of 7 single needs (24 without the depth); right outcomes
unchanged (`eval-decisions --cross-corpus`, lab/results/decisions/cross-corpus-twelve-2026-11-27f.txt;
without the depth: `python -m lab.experiments.two_needs_on_non_answers clarify`)."""


def two_needs_question(decision: Clarify | NoMatch, ranking: Sequence[Evidence], multi: Answer) -> Decision:
    """The two needs' pages offered as a question ("You asked about two things: A and B. Which one
    first?") when both are among the whole message's first `TWO_NEEDS_DEPTH` pages, else
    `decision` as it was."""
    ranked = ranked_by_score(ranking)
    first = {e.doc_slug for e in distinct_documents(ranked, TWO_NEEDS_DEPTH)}
    pages = multi_intent_on(ranking, multi).results[:2]
    if len(pages) < 2 or not {e.doc_slug for e in pages} <= first:
        return decision
    return Clarify(results=tuple(ranked), confidence=decision.confidence,
                   message=clarify.two_needs(pages[0], pages[1]), options=tuple(option_of(e) for e in pages),
                   reason="calibrated_two_needs_question")


def second_need(first: str, multi_pages: Sequence[str]) -> str | None:
    """The other need's page when `first` is one of the two needs' pages, else None."""
    if first not in multi_pages:
        return None
    return next((p for p in multi_pages if p != first), None)


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
    def stubs(self) -> tuple[str, ...]: ...
    @property
    def pinned(self) -> tuple[str, ...]: ...


def replayed_status(run: RecordedRun, p: float, point: DecisionPoint) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(status, shown pages, options) the calibrated policy gives a seed-rules run's signals at
    `p` and `point`: `Decider` routing, on numbers."""
    f = run.features
    ranked = run.ranked
    point = point_for(point, f["tokens"])  # `decide_calibrated`
    if run.reason == names.REASON:  # decided before p: the closest pages it offered, if any
        return "no_match", (), run.options
    if not ranked or f["top_score"] <= 0 or f["tokens"] == 0:
        return "no_match", (), ()
    if nothing_similar(f, point):  # phase 3 only: other phases' points have no floor
        return "no_match", (), ()
    action = choose(p, score_ratio=f["score_ratio"], has_second=len(ranked) > 1, point=point)
    if action != "answer" and pins_page(ranked[0], run.pinned, p):  # `decide_calibrated`
        action = "answer"
    two_needs = tuple(run.shown[:2]) if run.reason == "multi_intent" else ()
    if action != "answer" and len(two_needs) == 2 and set(two_needs) <= set(ranked[:TWO_NEEDS_DEPTH]):
        return "clarify", ranked, two_needs  # `two_needs_question`
    if action == "no_match":  # the closest pages offered, unless p says they are noise
        return "no_match", (), ranked[:CLOSEST_MATCHES] if p >= point.closest_matches_min_p else ()
    if action == "answer" or (action == "weak" and len(ranked) == 1):  # the only page answers
        if content_leads(ranked, run.stubs.__contains__):  # `content_first`
            ranked = tuple(page for page in ranked if page not in run.stubs)
        second = second_need(ranked[0], run.shown) if run.reason == "multi_intent" else None
        # The seed rules found both needs' pages: `with_second_need` offers them.
        return "answer", ranked, (ranked[0], second) if second is not None else ()
    return "clarify", ranked, ranked[:2] if action == "ambiguous" else ranked[:3]
