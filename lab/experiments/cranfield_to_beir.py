"""Build the Cranfield collection in BEIR layout for `python -m lab eval`.

Input: the SMART-format files of the Cranfield II collection (Cleverdon, Mills
and Keen, Aslib Cranfield Research Project, 1966), as distributed by the
University of Glasgow IR group (ir.dcs.gla.ac.uk/resources/test_collections/cran):
`cran.all.1400`, `cran.qry`, `cranqrel`. No licence is stated by the
distributors; it is a freely redistributed research test collection.

Output (DIR): `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`, `query_id_map.tsv`.

- corpus: one record per `.I`; title = the `.T` lines, text = the `.W` lines,
  whitespace-collapsed; `.A` (authors) and `.B` (reference) dropped.
- queries: the `.W` text, renumbered 1..225 in file order, because `cranqrel`
  numbers queries sequentially while `cran.qry`'s `.I` labels run 001..365
  with gaps (`query_id_map.tsv` keeps the mapping).
- qrels: relevance code 1 (complete answer) .. 4 (minimum interest) becomes
  score 4 .. 1 (higher = more relevant); code -1 lines are dropped.

    python -m lab.experiments.cranfield_to_beir --source DIR_WITH_SMART_FILES --out DIR
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path

_FIELD = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


def smart_records(text: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(`.I` label, {field letter: whitespace-collapsed text}) per record."""
    label: str | None = None
    fields: dict[str, list[str]] = {}
    field = ""
    for line in text.splitlines():
        marker = _FIELD.match(line.rstrip())
        if marker and marker[1] == "I":
            if label is not None:
                yield label, {k: " ".join(" ".join(v).split()) for k, v in fields.items()}
            label, fields, field = (marker[2] or "").strip(), {}, ""
        elif marker:
            field = marker[1]
            fields.setdefault(field, [])
            if marker[2]:
                fields[field].append(marker[2])
        elif field:
            fields[field].append(line)
    if label is not None:
        yield label, {k: " ".join(" ".join(v).split()) for k, v in fields.items()}


def convert(source: Path, out: Path) -> dict[str, int]:
    docs = list(smart_records((source / "cran.all.1400").read_text(encoding="latin-1")))
    queries = list(smart_records((source / "cran.qry").read_text(encoding="latin-1")))
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for label, fields in docs:
            f.write(json.dumps({"_id": label, "title": fields.get("T", ""), "text": fields.get("W", "")}) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f, \
         (out / "query_id_map.tsv").open("w", encoding="utf-8") as ids:
        ids.write("query-id\tcran.qry-.I\n")
        for number, (label, fields) in enumerate(queries, start=1):
            f.write(json.dumps({"_id": str(number), "text": fields.get("W", "")}) + "\n")
            ids.write(f"{number}\t{label}\n")
    judged = 0
    with (out / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for line in (source / "cranqrel").read_text(encoding="latin-1").splitlines():
            parts = line.split()
            if len(parts) != 3 or not 1 <= int(parts[2]) <= 4:
                continue  # code -1 (one per query, unexplained) and blank lines
            f.write(f"{parts[0]}\t{parts[1]}\t{5 - int(parts[2])}\n")
            judged += 1
    return {"documents": len(docs), "queries": len(queries), "qrels": judged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="directory with cran.all.1400, cran.qry, cranqrel")
    parser.add_argument("--out", type=Path, required=True, help="BEIR directory to write")
    args = parser.parse_args()
    print(json.dumps(convert(args.source, args.out)))


if __name__ == "__main__":
    main()
