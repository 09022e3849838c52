"""Issue 42, item 3, "one section once": no response lists the same page and anchor twice.

Every labelled query of the six corpora the test session serves is asked over HTTP at phase 3,
ten results wanted, of the real app seeded and embedded with that corpus (phase 3 fuses chunk
rankings: where two chunks of one section meet). Every labelled set of every corpus, the six
labelled for issue 40 too, is asked at phase 2 in-process (tests/unit/test_one_section_once.py):
embedding six more corpora here would cost the suite minutes. The issue's examples were a phase-3
answer listing `blueprints#templates` twice (two chunks of one long section) and a query log with
one chunk twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from service.evaluation.labelled import load_labelled_set
from service.settings import PROJECT_ROOT
from tests.conftest import (
    LOGSEQ_READY_TIMEOUT_S,
    PgServer,
    _create_database,
    _drop_database,
    app_settings,
    wait_until_ready,
)

QUERIES = PROJECT_ROOT / "bench" / "queries"
CORPORA = PROJECT_ROOT / "tests" / "corpora"
SERVED_BY_SHARED_APPS = {"seed": "service_client", "logseq-docs": "logseq_client", "mkdocs-docs": "mkdocs_client"}
SERVED_HERE = ("requests-docs", "starlight-docs", "vite-docs")


def labelled_sets() -> dict[str, list[str]]:
    """corpus → the queries of its labelled set."""
    sets = {}
    for path in sorted(QUERIES.glob("*.yaml")):
        corpus, cases = load_labelled_set(path)
        sets[corpus] = [case.query for case in cases]
    return sets


SETS = labelled_sets()


def test_every_corpus_served_here_has_its_labelled_set() -> None:
    assert set(SETS) >= {*SERVED_BY_SHARED_APPS, *SERVED_HERE}


async def repeated_sections(client: Any, queries: list[str]) -> list[str]:
    found: list[str] = []
    for query in queries:
        for phase in (3,):
            response = await client.post("/retrieve", json={"query": query, "phase": phase, "top_k": 10})
            assert response.status_code == 200, response.text
            shown = Counter((r["doc_slug"], r["anchor"] or "") for r in response.json()["results"])
            found += [f"{query!r} @{phase}: {slug}#{anchor} x{n}" for (slug, anchor), n in shown.items() if n > 1]
    return found


@pytest.fixture(scope="module", params=SERVED_HERE)
async def vendored_client(request: pytest.FixtureRequest, pg_server: PgServer) -> AsyncIterator[tuple[str, Any]]:
    """A real app seeded and embedded with one vendored corpus (its dialect detected)."""
    from litestar.testing import AsyncTestClient

    from service.app import create_app

    corpus: str = request.param
    name = await _create_database(pg_server)
    settings = app_settings(pg_server.dsn(name), CORPORA / corpus)
    async with AsyncTestClient(app=create_app(settings), timeout=60) as client:
        await wait_until_ready(client, timeout_s=LOGSEQ_READY_TIMEOUT_S)
        yield corpus, client
    await _drop_database(pg_server, name)


async def test_seed_corpus_lists_each_section_once(service_client: Any) -> None:
    assert await repeated_sections(service_client, SETS["seed"]) == []


async def test_logseq_lists_each_section_once(logseq_client: Any) -> None:
    assert await repeated_sections(logseq_client, SETS["logseq-docs"]) == []


async def test_mkdocs_lists_each_section_once(mkdocs_client: Any) -> None:
    assert await repeated_sections(mkdocs_client, SETS["mkdocs-docs"]) == []


async def test_the_other_vendored_corpora_list_each_section_once(vendored_client: tuple[str, Any]) -> None:
    corpus, client = vendored_client
    assert await repeated_sections(client, SETS[corpus]) == []
