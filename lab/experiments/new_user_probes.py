"""Ask a running service a new user's questions and say which it got right (the probe sets of
`lab/results/probes/*.yaml`: 20 questions a helper session wrote from a pool corpus's pages before
the service ran on it, each with the pages that answer it).

Usage: .venv/bin/python -m lab.experiments.new_user_probes --url http://localhost:8000 --set FILE [--out FILE]

Start the service on the corpus first (`SEEDS_DIR=../shared/train-corpora/uv-docs python -m
service serve`). Each question goes to `POST /retrieve` as a user's would; a line per question:
`OK` (the first page is a labelled one), `ok3` (one is among the first three), `--` (neither),
the status, the kind, the question and the first three pages; then the totals (right first pages,
right among three, answered, answered right). A page id's underscores are read as the service's
hyphens (`concepts/json_schema` is the page `concepts/json-schema`).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

import yaml

TOP_K = 5


def ask(url: str, query: str) -> dict[str, Any]:
    body = json.dumps({"query": query, "top_k": TOP_K}).encode()
    request = urllib.request.Request(f"{url.rstrip('/')}/retrieve", body, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answer: dict[str, Any] = json.load(response)
    return answer


def run(url: str, cases: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    first = among_three = answered = answered_right = 0
    for case in cases:
        reply = ask(url, str(case["query"]))
        pages = list(dict.fromkeys(str(r["doc_slug"]) for r in reply.get("results", [])))
        wanted = {str(p).replace("_", "-") for p in case.get("pages") or ()}
        right = bool(pages) and pages[0] in wanted
        near = any(p in wanted for p in pages[:3])
        status = str(reply["status"])
        first += right
        among_three += near
        answered += status == "answer"
        answered_right += status == "answer" and right
        mark = "OK " if right else "ok3" if near else "-- "
        lines.append(f"{mark} {status[:7]:<7} {str(case['kind'])[:5]} {repr(case['query'])[:70]:<72} {pages[:3]}")
    lines.append(f"first {first}/{len(cases)} top3 {among_three} answered {answered} right answers {answered_right}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the running service, e.g. http://localhost:8000")
    parser.add_argument("--set", required=True, type=Path, help="a probe set (lab/results/probes/*.yaml)")
    parser.add_argument("--out", type=Path, help="also write the lines here")
    args = parser.parse_args(argv)
    cases = yaml.safe_load(args.set.read_text(encoding="utf-8"))["cases"]
    lines = run(args.url, cases)
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
