"""What is embedded per chunk (issue 19): representation texts, their hashes, and
which vectors an indexing run has to (re-)embed."""

from __future__ import annotations

from typing import Any

from service.ingest.indexer import input_hash, pending_representations
from service.ingest.representations import first_sentence, representation_hash, representations


def reps(**overrides: Any) -> dict[str, Any]:
    chunk = {"title": "Offline mode", "header_path": "Offline mode > Working offline",
             "content": "Edits made without a connection are kept. They sync later.", "chunk_index": 0,
             "summary": "Keep working without internet; changes sync when you are back online."}
    chunk.update(overrides)
    return {r.kind: r for r in representations(**chunk)}


def test_a_page_s_first_chunk_has_body_section_and_page_representations() -> None:
    got = reps()
    assert set(got) == {"body", "section", "page"}
    assert (got["body"].context, got["body"].text) == ("Offline mode > Working offline",
                                                        "Edits made without a connection are kept. They sync later.")
    assert got["section"].text == "Edits made without a connection are kept."
    assert (got["page"].context, got["page"].text) == (
        "Offline mode", "Keep working without internet; changes sync when you are back online.")


def test_later_chunks_have_no_page_vector_and_a_page_without_summary_uses_its_opening() -> None:
    assert "page" not in reps(chunk_index=3)
    page = reps(summary="", page_opening="Offline mode lets you edit on a plane. More text.")["page"]
    assert page.text == "Offline mode lets you edit on a plane."


def test_the_body_hash_is_unchanged_so_existing_vectors_stay_current() -> None:
    body = reps()["body"]
    assert body.input_hash == input_hash(body.context, body.text)


def test_the_kind_is_part_of_the_hash_and_each_input_change_moves_only_its_own_hash() -> None:
    assert representation_hash("section", "a", "b") != representation_hash("page", "a", "b")
    before, renamed, resummarised = reps(), reps(header_path="Offline mode > On a plane"), reps(summary="Other.")
    assert renamed["body"].input_hash != before["body"].input_hash
    assert renamed["section"].input_hash != before["section"].input_hash
    assert renamed["page"].input_hash == before["page"].input_hash
    assert resummarised["page"].input_hash != before["page"].input_hash
    assert resummarised["body"].input_hash == before["body"].input_hash


def test_first_sentence_is_short() -> None:
    assert first_sentence("word " * 100) == " ".join(["word"] * 40)
    assert first_sentence("") == ""


def _row(chunk_id: str, chunk_index: int = 0, **overrides: Any) -> dict[str, Any]:
    row = {"id": chunk_id, "chunk_hash": f"h-{chunk_id}", "chunk_index": chunk_index, "title": "T",
           "header_path": "T > H", "content": "First sentence. Second one.", "summary": "S.", "page_opening": ""}
    row.update(overrides)
    return row


def _stored(rows: list[dict[str, Any]], dim: int = 384) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        for r in representations(title=row["title"], header_path=row["header_path"], content=row["content"],
                                 chunk_index=row["chunk_index"], summary=row["summary"]):
            out.append({"chunk_id": row["id"], "kind": r.kind, "chunk_hash": row["chunk_hash"],
                        "input_hash": r.input_hash, "dim": dim})
    return out


def test_only_the_changed_representations_are_pending() -> None:
    rows = [_row("a"), _row("b", chunk_index=1)]
    kinds = ("body", "section", "page")
    todo, stale, current = pending_representations(rows, [], 384, kinds)
    assert sorted((p.chunk_id, p.rep.kind) for p in todo) == [
        ("a", "body"), ("a", "page"), ("a", "section"), ("b", "body"), ("b", "section")]
    assert (stale, current) == ([], 0)
    stored = _stored(rows)
    assert pending_representations(rows, stored, 384, kinds)[0] == []
    edited = [_row("a", summary="A new summary."), rows[1]]
    todo, _, current = pending_representations(edited, stored, 384, kinds)
    assert [(p.chunk_id, p.rep.kind) for p in todo] == [("a", "page")] and current == 4
    # Another model dimension: everything again.
    assert len(pending_representations(rows, stored, 768, kinds)[0]) == 5


def test_kinds_not_asked_for_are_neither_embedded_nor_deleted_and_vanished_ones_are() -> None:
    rows = [_row("a")]
    stored = _stored(rows)
    todo, stale, current = pending_representations(rows, stored, 384, ("body",))
    assert (todo, stale, current) == ([], [], 1)
    # The chunk lost its text's first sentence: its section vector is stale.
    empty = [_row("a", content="")]
    todo, stale, _ = pending_representations(empty, stored, 384, ("body", "section", "page"))
    assert stale == [("a", "section")] and [p.rep.kind for p in todo] == ["body"]
