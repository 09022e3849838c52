import json
from pathlib import Path
from typing import Any

from tests.integration.test_hostile_input import CASES

QUERIES = [
 ("explain workspace", {}), ("home", {}), ("breadcrumb tooltip", {}), ("placeholder", {}),
 ("tell me about panels", {}), ("recent", {}), ("homepage", {}), ("how do I find my notes?", {"top_k": 5}),
 ("what is quick links", {"category": "widgets"}), ("what is quick links", {"category": "concepts"}),
 ("workspace", {"category": "widgets"}), ("explain notes", {"category": "actions"}),
 ("open notes + quick links", {}), ("which notes link here", {}),
 ("how can I see which notes link here?", {}),
]

async def test_probe(service_client: Any) -> None:
    out = []
    for q, extra in QUERIES:
        for phase in (1, 2, 3):
            r = (await service_client.post("/retrieve", json={"query": q, "phase": phase, **extra})).json()
            out.append(f"{q!r} {extra} p{phase}: {r['status']} {r['message']!r} {[x['doc_slug'] for x in r['results']]} ph={r['phase']}")
    for c in CASES:
        if c.expect == "200":
            resp = await service_client.post("/retrieve", content=c.body, headers={"Content-Type": "application/json"})
            r = resp.json()
            out.append(f"HOSTILE {c.kind}: {r['status']} {r['message']!r} {[x['doc_slug'] for x in r['results']]} ph={r['phase']}")
    Path("/tmp/probe.txt").write_text("\n".join(out))
