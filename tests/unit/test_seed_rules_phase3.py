"""Phase 3 decisions: neighbours count only when close; ambiguity survives fusion."""

from __future__ import annotations

import msgspec
import pytest

from service.decide.seed_rules_phase3 import decide_hybrid
from service.domain.signals import SemanticSignal
from service.domain.types import Answer, Clarify, Evidence, NoMatch, NormalizedQuery, Option
from service.flags import load_flags_file
from service.scoring.fusion import FusionMethod
from service.scoring.hybrid import fuse_evidence, semantic_signal
from service.scoring.semantic import SemanticHit
from service.settings import PROJECT_ROOT

# The thresholds the service ships with (flags.yaml `semantic:`), never a copy of them.
T = load_flags_file(PROJECT_ROOT / "flags.yaml").semantic
BELOW_FLOOR = T.similarity_floor - 0.1
BETWEEN = (T.similarity_floor + T.answer_similarity) / 2  # close, not confident
CONFIDENT = min(1.0, T.answer_similarity + 0.15)
Q = NormalizedQuery(raw="how do I find my notes?", tokens=("find", "notes"), phrase="find notes")


def ev(slug: str, score: float, index: int = 0) -> Evidence:
    return Evidence(
        doc_slug=slug, title=slug.split("/")[1].title(), category=slug.split("/")[0], snippet="s",
        score=score, content_hash="h", matched_terms=("notes",), source="hybrid", chunk_index=index,
        raw_score=4, title_or_keyword_hit=True,
    )


def hit(slug: str, similarity: float, index: int = 0) -> SemanticHit:
    return SemanticHit(
        chunk_id=f"{slug}#{index}", doc_slug=slug, chunk_index=index, category=slug.split("/")[0],
        title=slug.split("/")[1].title(), header_path="H",
        chunk_hash="c", similarity=similarity,
    )


FUSED = [ev("concepts/notes", 0.9), ev("concepts/workspace", 0.6)]


def test_signal_margin_is_against_another_document() -> None:
    signal = semantic_signal([hit("a/x", 0.7), hit("a/x", 0.69, 1), hit("b/y", 0.6)])
    assert signal.top_doc == "a/x" and round(signal.margin, 3) == 0.1


NO_SIGNAL = SemanticSignal(top_similarity=0.3, margin=0.0, top_doc=None)


def scores(decision: Answer | Clarify | NoMatch) -> list[float]:
    return [e.score for e in decision.results]


def test_keyword_answer_on_the_fused_top_page_answers_in_the_fused_order() -> None:
    keyword = Answer(results=(ev("concepts/notes", 5.0),), confidence=0.8)
    decision = decide_hybrid(FUSED, keyword, NO_SIGNAL, Q, T)
    assert isinstance(decision, Answer) and decision.results == tuple(FUSED)


def test_a_keyword_answer_leads_the_fused_ranking_with_its_scores_in_order() -> None:
    # The "results come back unsorted (0.51, 0.99, 0.69)": the keyword page was moved
    # to the front with its own, lower fused score.
    keyword = Answer(results=(ev("concepts/workspace", 5.0),), confidence=0.8)
    decision = decide_hybrid(FUSED, keyword, NO_SIGNAL, Q, T)
    assert isinstance(decision, Answer)
    assert [e.doc_slug for e in decision.results] == ["concepts/workspace", "concepts/notes"]
    assert scores(decision) == [0.9, 0.9]
    assert decision.results[0].match_explain[-1] == "ranked first: the keyword rules answer with this page (confident)"


def test_what_is_a_title_ranks_that_page_first_and_says_why() -> None:
    query = NormalizedQuery(raw="what is workspace", tokens=("workspace",), phrase="workspace", intent="explain",
                            subject="workspace")
    keyword = Answer(results=(ev("concepts/workspace", 5.0),), confidence=1.0, reason="explain_subject_is_title")
    decision = decide_hybrid(FUSED, keyword, NO_SIGNAL, query, T)
    assert isinstance(decision, Answer) and [e.doc_slug for e in decision.results] == ["concepts/workspace", "concepts/notes"]
    assert scores(decision) == [0.9, 0.9]
    assert decision.results[0].match_explain[-1] == "ranked first: the question names this page (Workspace)"


def test_keyword_ambiguity_survives_a_confident_neighbour_with_its_pages_first_in_score_order() -> None:
    fused = [ev("concepts/notes", 0.9), ev("widgets/recent", 0.7), ev("concepts/workspace", 0.6)]
    options = (Option(doc_slug="concepts/workspace", title="W", category="concepts"),
               Option(doc_slug="concepts/notes", title="N", category="concepts"))
    keyword = Clarify(results=(), confidence=0.1, message="Do you mean W or N?", options=options, reason="small_gap")
    decision = decide_hybrid(fused, keyword, SemanticSignal(top_similarity=0.8, margin=0.2, top_doc="concepts/notes"), Q, T)
    assert isinstance(decision, Clarify) and decision.message == "Do you mean W or N?"
    assert decision.options == options
    assert [e.doc_slug for e in decision.results] == ["concepts/workspace", "concepts/notes", "widgets/recent"]
    assert scores(decision) == [0.9, 0.9, 0.7]


def test_confident_neighbour_turns_a_weak_match_into_an_answer() -> None:
    keyword = Clarify(results=(), confidence=0.1, message="weak", options=(), reason="no_title_or_keyword_hit")
    decision = decide_hybrid(FUSED, keyword, SemanticSignal(top_similarity=CONFIDENT, margin=T.margin + 0.05, top_doc="concepts/notes"), Q, T)
    assert isinstance(decision, Answer) and decision.reason == "semantic_confident"


def test_far_neighbours_are_not_evidence() -> None:
    keyword = NoMatch(message="Which part should I explain?", reason="out_of_domain")
    decision = decide_hybrid(FUSED, keyword, SemanticSignal(top_similarity=BELOW_FLOOR, margin=0.02, top_doc="concepts/notes"), Q, T)
    assert isinstance(decision, NoMatch) and decision.reason == "below_similarity_floor"


def test_plausible_but_unsure_neighbour_asks() -> None:
    keyword = NoMatch(message="Which part should I explain?", reason="no_match")
    decision = decide_hybrid(FUSED, keyword, SemanticSignal(top_similarity=BETWEEN, margin=0.01, top_doc="concepts/notes"), Q, T)
    assert isinstance(decision, Clarify)
    assert decision.message.startswith("I'm not sure which feature you mean. Are you asking about Notes?")


def test_a_keyword_answer_given_for_want_of_a_second_page_is_decided_by_the_neighbours() -> None:
    # The keyword rules answer a weak match on their only page (no one-option question); at phase
    # 3 the fused ranking has other pages, so an unsure neighbour asks between them as before.
    keyword = Answer(results=(ev("concepts/notes", 5.0),), confidence=0.0, reason="only_page_matched_terms")
    decision = decide_hybrid(FUSED, keyword, SemanticSignal(top_similarity=BETWEEN, margin=0.01, top_doc="concepts/notes"), Q, T)
    assert isinstance(decision, Clarify) and decision.reason == "semantic_weak"
    assert [o.doc_slug for o in decision.options] == ["concepts/notes", "concepts/workspace"]
    only = decide_hybrid(FUSED[:1], keyword, SemanticSignal(top_similarity=BETWEEN, margin=0.01, top_doc="concepts/notes"), Q, T)
    assert isinstance(only, Answer) and only.reason == "only_page_semantic_weak"


def test_no_content_words_is_no_match_whatever_the_neighbours() -> None:
    empty = NormalizedQuery(raw="how do I do it", tokens=(), phrase="")
    keyword = NoMatch(message="Which part should I explain?", reason="no_match")
    assert isinstance(decide_hybrid(FUSED, keyword, SemanticSignal(top_similarity=0.9, margin=0.5, top_doc="x/y"), empty, T), NoMatch)


def test_fused_evidence_covers_both_legs_and_explains_weights() -> None:
    keyword = [msgspec.structs.replace(ev("concepts/notes", 2.0), match_explain=("content 'notes' +1",)),
               ev("actions/notes", 1.0)]
    hits = [hit("concepts/workspace", 0.7), hit("concepts/notes", 0.6)]
    fused = fuse_evidence(
        keyword, hits, method=FusionMethod.weighted, weights=(0.3, 0.7), query_type="mixed",
        rrf_k=60, doc_info=lambda slug: ("doc-hash", "summary"), chunk_text=lambda key: "",
    )
    by_slug = {e.doc_slug: e for e in fused.ranking}
    # notes: 0.3 × 1.0 + 0.7 × 0.0 = 0.3; workspace: 0.7 × 1.0 = 0.7; actions: 0.3 × 0 + 0 = 0.
    assert by_slug["concepts/workspace"].score == 0.7
    assert by_slug["concepts/notes"].score == 0.3
    assert next(e.doc_slug for e in fused.ranking) == "concepts/workspace"
    assert all(e.source == "hybrid" for e in fused.ranking)
    assert by_slug["concepts/workspace"].content_hash == "doc-hash"  # built from the hit
    # Text is built only for the candidates shown: the keyword leg's snippet and lines,
    # then fusion's; a hit found by the semantic leg alone shows its page's summary.
    notes = fused.explained(by_slug["concepts/notes"])
    assert notes.snippet == keyword[0].snippet and "0.3 × keyword" in notes.match_explain[-1]
    assert notes.match_explain[:-1] == keyword[0].match_explain
    workspace = fused.explained(by_slug["concepts/workspace"])
    assert workspace.snippet == "summary" and len(workspace.match_explain) == 1
    # Lines a decision added after fusion stay last; evidence from elsewhere is left alone.
    decided = fused.explained(msgspec.structs.replace(by_slug["concepts/notes"], match_explain=("calibrated p",)))
    assert decided.match_explain == (*notes.match_explain, "calibrated p")
    elsewhere = msgspec.structs.replace(ev("concepts/other", 1.0), source="keyword")
    assert fused.explained(elsewhere) == elsewhere


@pytest.mark.parametrize(("factor", "shown"), [(0.5, " × page prior 0.50 = 0.3500"), (2.0, " × page prior 2.00 = 1.4000")])
def test_a_page_prior_that_lowers_or_raises_a_page_is_in_its_explanation(factor: float, shown: str) -> None:
    # An operator reading why a page ranked where it did sees the boost as well as the demotion.
    fused = fuse_evidence(
        [], [hit("concepts/workspace", 0.7), hit("concepts/notes", 0.6)], method=FusionMethod.weighted,
        weights=(0.3, 0.7), query_type="mixed", rrf_k=60, doc_info=lambda slug: ("doc-hash", "summary"),
        chunk_text=lambda key: "", page_prior=lambda slug: factor if slug == "concepts/workspace" else 1.0,
    )
    by_slug = {e.doc_slug: e for e in fused.ranking}
    assert by_slug["concepts/workspace"].score == pytest.approx(0.7 * factor)
    assert fused.explained(by_slug["concepts/workspace"]).match_explain[-1].endswith(shown)
    assert "page prior" not in fused.explained(by_slug["concepts/notes"]).match_explain[-1]


def test_a_semantic_hit_without_a_page_summary_shows_its_chunk_text_from_the_corpus() -> None:
    texts = {("concepts/workspace", 0): "## Canvas\n\nA workspace holds **notes** on a canvas."}
    fused = fuse_evidence(
        [], [hit("concepts/workspace", 0.7)], method=FusionMethod.weighted, weights=(0.3, 0.7),
        query_type="mixed", rrf_k=60, doc_info=lambda slug: ("doc-hash", ""),
        chunk_text=lambda key: texts.get(key, ""),
    )
    shown = fused.explained(fused.ranking[0])
    assert shown.snippet.startswith("Canvas A workspace holds notes") and "**" not in shown.snippet


FAX = NormalizedQuery(raw="send this page as a fax", tokens=("send", "page", "fax"), phrase="send page fax",
                      unknown_tokens=("fax",))


def test_a_keyword_answer_on_part_of_the_query_gives_way_when_the_meaning_points_elsewhere() -> None:
    # "fax" is no word of the corpus and the nearest neighbour is another page: the keyword
    # rules' page was matched on "send" and "page" only, so phase 3 does not vouch for it.
    keyword = Answer(results=(ev("settings/send-usage-data", 5.0),), confidence=0.8)
    fused = [ev("settings/send-usage-data", 0.7), ev("actions/export", 0.6)]
    elsewhere = SemanticSignal(top_similarity=BETWEEN, margin=0.0, top_doc="actions/export")
    assert isinstance(decide_hybrid(fused, keyword, elsewhere, FAX, T), Clarify)
    far = SemanticSignal(top_similarity=BELOW_FLOOR, margin=0.0, top_doc="actions/export")
    assert isinstance(decide_hybrid(fused, keyword, far, FAX, T), NoMatch)


def test_a_partial_keyword_answer_stands_when_the_meaning_agrees_or_every_word_is_known() -> None:
    keyword = Answer(results=(ev("settings/send-usage-data", 5.0),), confidence=0.8)
    fused = [ev("settings/send-usage-data", 0.7), ev("actions/export", 0.6)]
    agrees = SemanticSignal(top_similarity=BETWEEN, margin=0.0, top_doc="settings/send-usage-data")
    assert isinstance(decide_hybrid(fused, keyword, agrees, FAX, T), Answer)
    known = NormalizedQuery(raw="send notes", tokens=("send", "notes"), phrase="send notes")
    elsewhere = SemanticSignal(top_similarity=BETWEEN, margin=0.0, top_doc="actions/export")
    # ev() matched "notes": one of two words, not fewer than half.
    assert isinstance(decide_hybrid(fused, keyword, elsewhere, known, T), Answer)
