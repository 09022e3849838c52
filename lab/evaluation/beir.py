"""Loader for the BEIR layout: corpus.jsonl, queries.jsonl, qrels/test.tsv."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path


class DatasetError(ValueError):
    """The directory is not a readable BEIR-layout dataset; the message names the file."""


@dataclass(frozen=True)
class BeirDoc:
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    name: str
    corpus: list[BeirDoc]
    queries: dict[str, str]
    """Query id → text, only queries that have judgments."""
    qrels: dict[str, dict[str, int]]
    """Query id → {doc id: graded relevance}."""


def _jsonl(path: Path) -> list[dict[str, object]]:
    if not path.is_file():
        raise DatasetError(f"{path}: missing")
    rows: list[dict[str, object]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: not JSON: {exc}") from exc
            if not isinstance(row, dict) or "_id" not in row:
                raise DatasetError(f"{path}:{number}: expected an object with `_id`")
            rows.append(row)
    return rows


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """`query-id<TAB>corpus-id<TAB>score` with a header line; score <= 0 is not relevant."""
    if not path.is_file():
        raise DatasetError(f"{path}: missing")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        for number, row in enumerate(reader, start=1):
            if number == 1 and row and not row[-1].strip().lstrip("-").isdigit():
                continue  # header
            if not row:
                continue
            if len(row) < 3:
                raise DatasetError(f"{path}:{number}: expected 3 tab-separated columns")
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def load_beir(directory: Path, split: str = "test") -> BeirDataset:
    corpus = [
        BeirDoc(doc_id=str(r["_id"]), title=str(r.get("title") or ""), text=str(r.get("text") or ""))
        for r in _jsonl(directory / "corpus.jsonl")
    ]
    all_queries = {str(r["_id"]): str(r.get("text") or "") for r in _jsonl(directory / "queries.jsonl")}
    qrels = load_qrels(directory / "qrels" / f"{split}.tsv")
    missing = sorted(set(qrels) - set(all_queries))
    if missing:
        raise DatasetError(f"{directory}: qrels name unknown query ids {missing[:5]}")
    queries = {qid: all_queries[qid] for qid in all_queries if qid in qrels}
    return BeirDataset(name=directory.resolve().name, corpus=corpus, queries=queries, qrels=qrels)
