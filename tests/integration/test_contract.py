"""The HTTP contract as a client meets it: one error shape, media types, limits
that follow the flags, an offline schema page (issue 14, item 9).

Read-only checks use the shared `service_client`; the flag-changing ones build
their own app on a fresh database.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import PROJECT_ROOT, Settings
from tests.conftest import ADMIN_TOKEN_FOR_TESTS, run_job, wait_until_ready

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN_FOR_TESTS}"}
JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"query": "home", "top_k": "3"}', "top_k"),    # caught by the strict decode
        (b'{"query": "home", "top_k": 0}', "top_k"),      # caught by Litestar's own
        (b'{"query": "home", "top_k": 1.5}', "top_k"),
        (b'{"query": "home", "phase": "2"}', "phase"),
        (b'{"query": "home", "colour": "red"}', "colour"),
        (b'{"query": ""}', "query"),
        (b'{"query": "home", "category": "calendars"}', "category"),
        (b"", "(body)"),
        (b'{"query":', "(body)"),
    ],
)
async def test_every_validation_error_has_one_shape_naming_the_field(
    service_client: Any, body: bytes, field: str
) -> None:
    response = await service_client.post("/retrieve", content=body, headers=JSON)
    assert response.status_code == 400, response.text
    error = response.json()
    assert isinstance(error["error"], str) and error["error"] != "data"
    assert [problem["field"] for problem in error["detail"]] == [field]
    assert all(problem["message"] for problem in error["detail"]), error
    if field != "(body)":
        assert field in error["error"]


async def test_one_query_limit_whatever_the_raw_length(service_client: Any) -> None:
    for query in ("a" * 501, "a" * 2001):
        response = await service_client.post("/retrieve", json={"query": query})
        assert response.status_code == 400
        assert "1–500 characters" in response.json()["error"]
        assert "2000" not in response.text


@pytest.mark.parametrize("content_type", ["text/plain", None, "application/x-www-form-urlencoded"])
async def test_a_body_that_is_not_declared_json_is_415_naming_the_expected_type(
    service_client: Any, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = await service_client.post("/retrieve", content=b'{"query": "home"}', headers=headers)
    assert response.status_code == 415, response.text
    assert "application/json" in response.json()["error"]


async def test_metrics_says_its_media_type_once_and_the_schema_agrees(service_client: Any) -> None:
    response = await service_client.get("/metrics")
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    schema = (await service_client.get("/schema/openapi.json")).json()
    assert list(schema["paths"]["/metrics"]["get"]["responses"]["200"]["content"]) == [
        "text/plain; version=0.0.4"
    ]


async def test_options_on_admin_flags_allows_put(service_client: Any) -> None:
    response = await service_client.options("/admin/flags")
    assert response.status_code == 204
    assert {m.strip() for m in response.headers["allow"].split(",")} == {"GET", "PUT", "OPTIONS"}


async def test_the_schema_page_loads_nothing_from_another_origin(service_client: Any) -> None:
    page = await service_client.get("/schema")
    assert page.status_code == 200
    urls = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page.text)
    assert urls and all(url.startswith("/schema/assets/") for url in urls), urls
    assert "http://" not in page.text and "https://" not in page.text.split("spec:")[0]
    for url in urls:
        asset = await service_client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 100, url


def _settings(db_url: str, seeds: Path) -> Settings:
    return Settings(database_url=db_url, seeds_dir=seeds, admin_token=ADMIN_TOKEN_FOR_TESTS,
                    migrations_dir=PROJECT_ROOT / "migrations", flags_file=PROJECT_ROOT / "flags.yaml",
                    db_connect_timeout=30)


def _top_k_maximum(schema: dict[str, Any]) -> int:
    maximum: int = schema["components"]["schemas"]["RetrieveRequest"]["properties"]["top_k"]["maximum"]
    return maximum


async def test_max_top_k_bounds_requests_and_the_schema_and_overrides_stay_consistent(
    db_url: str, fixture_seeds: Path
) -> None:
    async with AsyncTestClient(app=create_app(_settings(db_url, fixture_seeds)), timeout=60) as client:
        await wait_until_ready(client, semantic=False)
        assert _top_k_maximum((await client.get("/schema/openapi.json")).json()) == 10

        # One key that contradicts another already in force: refused, both named.
        bad = await client.put("/admin/flags", json={"retrieval.default_top_k": 20}, headers=ADMIN)
        assert bad.status_code == 400, bad.text
        assert "`retrieval.default_top_k`" in bad.json()["error"]
        assert "`retrieval.max_top_k`" in bad.json()["error"]
        # Lowering the maximum under the default in force is refused too.
        bad = await client.put("/admin/flags", json={"name": "retrieval.max_top_k", "value": 2},
                               headers=ADMIN)
        assert bad.status_code == 400 and "`retrieval.default_top_k`" in bad.json()["error"]

        ok = await client.put("/admin/flags", headers=ADMIN,
                              json={"retrieval.max_top_k": 2, "retrieval.default_top_k": 2})
        assert ok.status_code == 200, ok.text
        assert _top_k_maximum((await client.get("/schema/openapi.json")).json()) == 2
        refused = await client.post("/retrieve", json={"query": "workspace", "top_k": 3})
        assert refused.status_code == 400
        assert refused.json()["detail"][0]["field"] == "top_k"
        assert "retrieval.max_top_k" in refused.json()["error"]
        assert (await client.post("/retrieve", json={"query": "workspace", "top_k": 2})).status_code == 200


async def test_a_put_of_an_unknown_flag_is_refused_by_the_schema(service_client: Any) -> None:
    schema = (await service_client.get("/schema/openapi.json")).json()
    body = schema["paths"]["/admin/flags"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    mapping = body["oneOf"][-1]
    assert mapping["additionalProperties"] is False and "phase" in mapping["properties"]
    names = {branch["properties"]["name"]["const"] for branch in body["oneOf"][:-1]}
    assert "phase" in names and "no.such.flag" not in names


# -- what the OpenAPI document says is what the service accepts (issue 42 item 6) ---------------
def _string_enum(schema: dict[str, Any]) -> list[str] | None:
    """The enum of `string | null` as Litestar writes it (on the string branch of `oneOf`)."""
    branch = next(b for b in schema.get("oneOf", [schema]) if b.get("type") == "string")
    enum: list[str] | None = branch.get("enum")
    return enum


def _category_enums(schema: dict[str, Any]) -> list[list[str] | None]:
    body = schema["components"]["schemas"]["RetrieveRequest"]["properties"]["category"]
    (query,) = [p for p in schema["paths"]["/documents"]["get"]["parameters"] if p["name"] == "category"]
    return [_string_enum(body), _string_enum(query["schema"])]


async def test_the_schema_names_the_corpus_s_categories_and_follows_a_seed(db_url: str, fixture_seeds: Path) -> None:
    async with AsyncTestClient(app=create_app(_settings(db_url, fixture_seeds)), timeout=60) as client:
        await wait_until_ready(client, semantic=False)
        categories = (await client.get("/documents")).json()["categories"]
        assert categories == ["actions", "concepts", "widgets"]
        assert _category_enums((await client.get("/schema/openapi.json")).json()) == [categories, categories]

        (fixture_seeds / "guides").mkdir()
        (fixture_seeds / "guides" / "first-steps.md").write_text(
            "---\ntitle: First steps\ncategory: guides\n---\n# First steps\n\nOpen the app and make an entry.\n",
            encoding="utf-8")
        assert (await run_job(client, "/admin/seed", ADMIN))["state"] == "done"
        after = [*categories, "guides"]
        assert _category_enums((await client.get("/schema/openapi.json")).json()) == [sorted(after)] * 2
        assert (await client.get("/documents", params={"category": "guides"})).status_code == 200


async def test_reply_to_v_is_the_constant_1_in_the_schema_and_the_service(service_client: Any) -> None:
    schema = (await service_client.get("/schema/openapi.json")).json()
    assert schema["components"]["schemas"]["ClarificationOut"]["properties"]["v"] == {"type": "integer", "const": 1}
    reply_to = {"v": 89206, "kind": "choose", "query": "home", "options": [], "issued_at": 0, "signature": "x"}
    response = await service_client.post("/retrieve", json={"query": "the first", "reply_to": reply_to})
    assert response.status_code == 400, response.text
    (problem,) = response.json()["detail"]
    assert problem["field"] == "reply_to.v" and problem["message"], problem


async def test_a_posted_replay_yaml_is_non_empty_in_the_schema_and_the_service(service_client: Any) -> None:
    schema = (await service_client.get("/schema/openapi.json")).json()
    assert schema["components"]["schemas"]["ReplayRequest"]["properties"]["yaml"]["minLength"] == 1
    response = await service_client.post("/admin/replay", json={"yaml": ""}, headers=ADMIN)
    assert response.status_code == 400, response.text
    (problem,) = response.json()["detail"]
    assert problem["field"] == "yaml" and problem["message"], problem


UNKNOWN_PAGE = "no/such-page"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/feedback", {"request_id": "f" * 32, "verdict": "wrong_page", "expected_slug": UNKNOWN_PAGE}, "expected_slug"),
        ("/admin/review/" + "f" * 32, {"verdict": "should_be", "expected_slug": UNKNOWN_PAGE}, "expected_slug"),
        ("/admin/curations", {"query": "home", "match": "exact", "action": "pin", "doc_slug": UNKNOWN_PAGE},
         "doc_slug"),
    ],
)
async def test_an_unknown_page_is_a_400_whose_detail_says_what_is_wrong(
    service_client: Any, path: str, body: dict[str, Any], field: str,
) -> None:
    response = await service_client.post(path, json=body, headers=ADMIN)
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == [{"field": field, "message": f"no page {UNKNOWN_PAGE!r} in the corpus"}]
