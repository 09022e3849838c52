"""Identifiers through the real service (issue 42 item 1): MkDocs' documentation seeded into
PostgreSQL and embedded once per session (`mkdocs_client`), asked over HTTP at phase 3.

- A name in code finds the page that defines it: "mkdocs_theme.yml" is the theme developer's
  file (dev-guide/themes, "Theme Meta Files"); with names no field of their own
  (`lexical.identifier_weight: 0`, a runtime override) the page about choosing a theme, which
  says "mkdocs", "theme" and "yml" more, comes first, as it did before names were read.
- A query made only of names no page mentions is a no match naming them, under both policies;
  the same name beside other words is decided as before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.conftest import ADMIN_TOKEN_FOR_TESTS, decision_policy

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"}


@asynccontextmanager
async def flag(client: Any, name: str, value: Any) -> AsyncIterator[None]:
    response = await client.put("/admin/flags", json={"name": name, "value": value}, headers=AUTH)
    assert response.status_code == 200, response.text
    try:
        yield
    finally:
        response = await client.delete(f"/admin/flags/{name}", headers=AUTH)
        assert response.status_code in (200, 204), response.text


async def _ask(client: Any, query: str) -> dict[str, Any]:
    response = await client.post("/retrieve", json={"query": query, "phase": 3, "top_k": 5})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["phase"] == 3, body
    return body


def _first_page(body: dict[str, Any]) -> str | None:
    pages = body["results"] or body["options"]
    return pages[0]["doc_slug"] if pages else None


async def test_a_name_in_code_finds_the_page_that_defines_it(mkdocs_client: Any) -> None:
    body = await _ask(mkdocs_client, "mkdocs_theme.yml")
    assert body["status"] in ("answer", "clarify")
    assert _first_page(body) == "dev-guide/themes"
    async with flag(mkdocs_client, "lexical.identifier_weight", 0):
        without = await _ask(mkdocs_client, "mkdocs_theme.yml")
    assert _first_page(without) != "dev-guide/themes"


@pytest.mark.parametrize("policy", ["seed_rules", "calibrated"])
async def test_a_name_no_page_mentions_is_a_no_match(mkdocs_client: Any, policy: str) -> None:
    async with decision_policy(mkdocs_client, policy):
        unknown = await _ask(mkdocs_client, "sticky_navbar")
        asked = await _ask(mkdocs_client, "what does theme.sticky_navbar do?")
        beside = await _ask(mkdocs_client, "sticky_navbar in the readthedocs theme")
    assert (unknown["status"], unknown["results"], unknown["options"]) == ("no_match", [], [])
    assert unknown["message"] == "The documentation never mentions `sticky_navbar`."
    assert (asked["status"], asked["message"]) == ("no_match", unknown["message"].replace(
        "sticky_navbar", "theme.sticky_navbar"))
    # Other words beside it: the option still does not exist, and the user is told so; the
    # pages about the rest of the message (the readthedocs theme exists) are offered to pick.
    assert (beside["status"], beside["results"]) == ("no_match", [])
    assert beside["message"].startswith("The documentation never mentions `sticky_navbar`. The closest matches are ")
    assert beside["options"] and all(o["title"] in beside["message"] for o in beside["options"])
