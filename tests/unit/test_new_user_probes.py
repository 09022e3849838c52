"""The new-user probe runner counts what a user would: right first page, among three, answered."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from lab.experiments.new_user_probes import run

REPLIES: dict[str, dict[str, Any]] = {
    "schema": {"status": "answer", "results": [{"doc_slug": "concepts/json-schema"}, {"doc_slug": "concepts/models"}]},
    "strict": {"status": "clarify", "results": [{"doc_slug": "concepts/models"}, {"doc_slug": "concepts/strict-mode"}]},
    "mars": {"status": "no_match", "results": []},
}


class _Service(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        reply = json.dumps(REPLIES[body["query"]]).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:  # quiet
        return


@pytest.fixture
def service_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Service)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_each_question_is_marked_and_counted(service_url: str) -> None:
    cases = [
        {"query": "schema", "kind": "question", "pages": ["concepts/json_schema"]},  # underscores read as hyphens
        {"query": "strict", "kind": "identifier", "pages": ["concepts/strict-mode"]},
        {"query": "mars", "kind": "question", "pages": ["concepts/models"]},
    ]
    lines = run(service_url, cases)
    assert [line[:3] for line in lines[:3]] == ["OK ", "ok3", "-- "]
    assert lines[-1] == "first 1/3 top3 2 answered 1 right answers 1"
