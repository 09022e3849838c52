"""Schemathesis against the service's own OpenAPI schema, in-process (ASGI).

Every operation in `/schema/openapi.json` is fuzzed with positive and negative
data (schemathesis' examples, coverage and fuzzing phases; no stateful phase).
`/admin/*` operations are called twice per case: without credentials (must be
401/403, documented) and with the right token. Every response must be
documented (status code, content type, body schema) and none may be a 5xx.

Two dedicated app instances, each on its own database with the 3-document
fixture corpus: one takes the public operations, the other the admin ones,
which mutate for real (seed, reindex, flag overrides, kill switch) without
disturbing the public run or the shared `service_client` app. schemathesis
drives them through its ASGI client, which runs an app's lifespan in a
background event loop. Each example first waits until its app is ready, and
after a flag change that was accepted the overrides are dropped again, so
every example meets the configured flags. A seed or re-index answers 202 with
a job: the example then reads the job until it ends, and it must end done (a
job failing on a schema-valid request is the background's 5xx).

The corpus's categories are in the schema (an enum wherever a request names a
category, written at start-up from the loaded corpus): the schema the operations
are generated from has the fixture corpus's, as the started app serves them.

Every schemathesis check runs on every operation. Three rules JSON Schema
cannot state are documented in prose and enforced with a 400: `query` is
1-500 characters *after* NFKC normalisation, control-character stripping and
whitespace collapsing (`POST /retrieve`, `POST /context`); runtime flag
overrides must leave the flags consistent as a whole (`PUT /admin/flags`,
e.g. `retrieval.default_top_k` <= `retrieval.max_top_k`); posted golden YAML
must be a golden file (`POST /admin/replay`); a `category` must be one of the
served corpus's own (`GET /documents`, now an enum: a safety net); a `reply_to` must be a clarification this
service signed and not expired (`POST /retrieve`, `POST /context`: a made-up one is
a 400 naming `reply_to`); a `/context` budget too small to carry the answer is a 400
naming the budget field and the least it needs. For those operations 400 is an
expected status of `positive_data_acceptance` (configured per operation) and
`rejection_is_justified` asserts that every 400 for schema-valid data is for
exactly that rule, re-checked with the service's own code.

Bounded: MAX_EXAMPLES per operation and mode, a per-request timeout, no
shrinking (a failure is reported as found), a fixed seed (reproducible).
"""

from __future__ import annotations

import functools
import re
import shutil
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from litestar import Litestar
from litestar.serialization import encode_json
from schemathesis.python import asgi

from service.api.openapi import publish_categories
from service.api.schemas import MAX_QUERY_CHARS
from service.app import create_app
from service.flags import FlagError
from service.golden import GoldenFileError, parse_golden
from service.ingest.markdown import parse_seeds
from service.normalize.text import clean
from service.operations import OPS_KEY, Operations
from service.settings import PROJECT_ROOT, Settings
from tests.conftest import FIXTURE_SEEDS, MIGRATIONS_DIR, PgServer, _create_database, _drop_database

FUZZ_TOKEN = "fuzz-admin-token-0123456789abcdef"
MAX_EXAMPLES = 30
REQUEST_TIMEOUT_S = 20
READY_TIMEOUT_S = 120

CONFIG = schemathesis.Config.from_dict({
    "seed": 20240901,
    "request-timeout": REQUEST_TIMEOUT_S,
    "generation": {
        "mode": "all",  # positive and negative data
        "max-examples": MAX_EXAMPLES,
        "no-shrink": True,
        "database": "none",
    },
    "phases": {"stateful": {"enabled": False}},
    # Invalid data may also be refused for its size: a `yaml` over maxLength written as escaped
    # astral characters is 12 bytes a character, past the route's body limit (a documented 413).
    "checks": {"negative_data_rejection": {"expected-statuses": [
        "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]}},
    # schemathesis' default expected statuses plus 400 for the rules above.
    "operations": [
        {"include-path": path, "include-method": method,
         "checks": {"positive_data_acceptance": {"expected-statuses": [
             "2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]}}}
        for path, method in (("/retrieve", "POST"), ("/context", "POST"),
                             ("/admin/replay", "POST"), ("/documents", "GET"))
    ] + [
        # The flags schema has 100+ fields: its coverage phase alone is ~2,800 boundary bodies
        # (each sent twice, without and with the token: 95 s, a tenth of the suite) that check
        # one validator the flags' unit tests check field by field (tests/unit/test_flags.py).
        # Its examples and fuzzing phases stay.
        {"include-path": "/admin/flags", "include-method": "PUT",
         "phases": {"coverage": {"enabled": False}},
         "checks": {"positive_data_acceptance": {"expected-statuses": [
             "2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]}}},
    ],
})

# Responses seen, for the reliability table (docs/quality/reliability.md) (printed at teardown).
SEEN: Counter[str] = Counter()


READY_POLL_S = 0.01


async def _make_app(pg_server: PgServer, seeds: Path) -> tuple[Litestar, str]:
    name = await _create_database(pg_server)
    return create_app(Settings(
        database_url=pg_server.dsn(name), admin_token=FUZZ_TOKEN, seeds_dir=seeds,
        flags_file=PROJECT_ROOT / "flags.yaml", migrations_dir=MIGRATIONS_DIR, db_connect_timeout=30,
    )), name


@pytest.fixture(scope="module")
async def fuzz_apps(pg_server: PgServer, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Litestar]]:
    seeds = tmp_path_factory.mktemp("fuzz") / "seeds"
    shutil.copytree(FIXTURE_SEEDS, seeds)
    public, public_db = await _make_app(pg_server, seeds)
    admin, admin_db = await _make_app(pg_server, seeds)
    yield {"public": public, "admin": admin}
    asgi.shutdown_lifespans()  # ends the apps' lifespans in schemathesis' event-loop thread
    for name in (public_db, admin_db):
        await _drop_database(pg_server, name)
    total = sum(SEEN.values())
    server_errors = sum(n for key, n in SEEN.items() if key.split()[-1].startswith("5"))
    print(f"\nschemathesis: {total} requests, {server_errors} 5xx; by operation and status: "
          f"{dict(sorted(SEEN.items()))}")


@functools.cache
def _seed_categories() -> frozenset[str]:
    """The served corpus's categories: the service validates `category` against them."""
    return frozenset(d.category for d in parse_seeds(FIXTURE_SEEDS))


def _served_schema() -> dict[str, Any]:
    """The OpenAPI document the app serves, from an app that is never started
    (describing routes needs no database), so operations can be parametrised
    at collection time, with the fixture corpus's categories the started app
    publishes; `test_schema_is_the_served_one` checks it is the same."""
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1:1/unused"))
    publish_categories(app, sorted(_seed_categories()))
    loaded: dict[str, Any] = msgspec.json.decode(encode_json(app.openapi_schema.to_schema()))
    return loaded


schema = schemathesis.openapi.from_dict(_served_schema(), config=CONFIG)


def _wait_ready(app: Litestar) -> None:
    ready = schema["/ready"]["GET"]
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        response = ready.Case().call(app=app)
        if response.status_code == 200:
            return
        assert time.monotonic() < deadline, f"fuzz app never ready: {response.text}"
        time.sleep(READY_POLL_S)


def _without_examples(node: Any) -> Any:
    """Litestar fills some `examples` with random values per app instance."""
    if isinstance(node, dict):
        return {k: _without_examples(v) for k, v in node.items() if k != "examples"}
    if isinstance(node, list):
        return [_without_examples(v) for v in node]
    return node


def test_schema_is_the_served_one(fuzz_apps: dict[str, Litestar]) -> None:
    _wait_ready(fuzz_apps["public"])  # the categories are published once the corpus is loaded
    served = schemathesis.openapi.from_asgi("/schema/openapi.json", fuzz_apps["public"], config=CONFIG)
    assert _without_examples(served.raw_schema) == _without_examples(schema.raw_schema)


def _record(case: Any, status: int) -> None:
    SEEN[f"{case.method} {case.path} {status}"] += 1


# Two-key messages of service/flags.py's whole-set checks (never msgspec's "Expected ...").
_WHOLE_SET_RULE = re.compile(r"must be [<>]=?|must be 1|is smaller than|are all 0")


def rejection_is_justified(ctx: Any, response: Any, case: Any, app: Litestar) -> bool | None:
    """A 400 for schema-valid data must be for a rule the module doc names."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    body = response.json()
    assert isinstance(body.get("error"), str) and body["error"], f"400 without a message: {body}"
    if case.path == "/documents":
        # The category set is the served corpus's own, which no static schema can list.
        category = (case.query or {}).get("category")
        assert category is not None and category not in _seed_categories(), body
        return None
    assert isinstance(case.body, dict), f"schema-valid non-object body rejected: {case.body!r}"
    if case.path in ("/retrieve", "/context"):
        query = case.body.get("query")
        cleaned = len(clean(query)) if isinstance(query, str) else -1
        category = case.body.get("category")
        justified = not 1 <= cleaned <= MAX_QUERY_CHARS or (
            category is not None and category not in _seed_categories()
        ) or (case.body.get("reply_to") is not None and "reply_to" in body["error"]) or (
            # /context: a budget too small to carry the answer names the minimum (issue 35 item 4)
            case.path == "/context" and body["error"].startswith("`budget.") and "give at least" in body["error"]
        )
    elif case.path == "/admin/flags":
        changes = ({case.body["name"]: case.body["value"]} if set(case.body) == {"name", "value"}
                   else case.body)
        ops: Operations = app.state[OPS_KEY]
        try:
            ops.store.validate(changes)
            justified = False  # the service accepts it now: the 400 had another cause
        except FlagError as err:
            justified = "Expected" not in str(err) and bool(_WHOLE_SET_RULE.search(str(err)))
    else:  # /admin/replay: posted YAML that is not a golden file
        try:
            parse_golden(case.body.get("yaml") or "", "posted YAML")
            justified = False
        except GoldenFileError:
            justified = "golden file rejected" in body["error"]
    assert justified, f"schema-valid request rejected without cause: {case.body!r} → {body}"
    return None


_JUSTIFIED = {"/retrieve", "/context", "/admin/flags", "/admin/replay"}


@schema.parametrize()
@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=MAX_EXAMPLES)
def test_every_operation_conforms_to_its_schema(case: Any, fuzz_apps: dict[str, Litestar]) -> None:
    is_admin = case.path.startswith("/admin")
    app = fuzz_apps["admin" if is_admin else "public"]
    _wait_ready(app)
    kwargs: dict[str, Any] = {"app": app}  # every check, none excluded
    if (case.path in _JUSTIFIED and case.method.upper() in ("POST", "PUT")) or case.path == "/documents":
        kwargs["additional_checks"] = [
            lambda ctx, response, case: rejection_is_justified(ctx, response, case, app)
        ]
    if is_admin:
        # Without credentials first (none are declared, so schemathesis sends
        # none): nothing but a preflight may succeed.
        headers = dict(case.headers or {})
        headers.pop("Authorization", None)
        case.headers = headers
        response = case.call_and_validate(**kwargs)
        _record(case, response.status_code)
        if case.method.upper() != "OPTIONS":
            assert response.status_code in (401, 403, 405), response.text
        response = case.call_and_validate(headers={"Authorization": f"Bearer {FUZZ_TOKEN}"}, **kwargs)
    else:
        response = case.call_and_validate(**kwargs)
    _record(case, response.status_code)
    assert response.status_code < 500, response.text
    if is_admin and response.status_code == 202:
        _job_done(app, response.json()["job"])
    if is_admin and case.path == "/admin/flags" and response.status_code == 200:
        _drop_overrides(app)


JOB_WAIT_S = 60


def _job_done(app: Litestar, job: dict[str, Any]) -> None:
    """The job the example started, once it ended: done (and the next example meets no 409)."""
    status = schema["/admin/jobs/{job_id}"]["GET"]
    deadline = time.monotonic() + READY_TIMEOUT_S
    while job["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"the job never ended: {job}"
        response = status.Case(path_parameters={"job_id": job["id"]}, query={"wait": JOB_WAIT_S}).call(
            app=app, headers={"Authorization": f"Bearer {FUZZ_TOKEN}"})
        assert response.status_code == 200, response.text
        job = response.json()["job"]
    assert job["state"] == "done", job


def _drop_overrides(app: Litestar) -> None:
    """Every example starts from the configured flags: a fuzzed `timeouts.db_ms` of 1 ms left
    in force would keep the database `down` (and the examples after it waiting) until a
    probe happened to answer within that millisecond."""
    ops: Operations = app.state[OPS_KEY]
    delete = schema["/admin/flags/{name}"]["DELETE"]
    for name in list(ops.store.overrides):
        response = delete.Case(path_parameters={"name": name}).call(
            app=app, headers={"Authorization": f"Bearer {FUZZ_TOKEN}"})
        # 404: a reload the flag listener had in flight dropped it already.
        assert response.status_code in (200, 404), response.text
