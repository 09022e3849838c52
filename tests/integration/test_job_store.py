"""The job store (service/job_store.py) on a real PostgreSQL, two stores as two replicas.

One job of a kind per corpus at a time across replicas; another kind, or another corpus, is
not held up. A job stopped by a shutdown is written failed (stopped); a runner whose
connection the database ends (as when it restarts, or the runner's process dies) is failed as
interrupted, and what its work raises is the job's error.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from service.job_store import (
    INTERRUPTED,
    LOCK_NAMESPACE,
    STOPPED,
    Job,
    JobFailed,
    JobRunning,
    JobStore,
    Steps,
)

WAIT_S = 60


def gated(gate: asyncio.Event, result: dict[str, Any] | None = None) -> Any:
    async def work() -> dict[str, Any]:
        await gate.wait()
        return result or {"ok": True}

    return work


async def ended(store: JobStore, pool: asyncpg.Pool[Any], job: Job) -> Job:
    final = await store.wait(pool, job, WAIT_S)
    assert final.ended, final
    return final


async def test_one_job_of_a_kind_per_corpus_across_replicas(db_url: str, migrated_pool: asyncpg.Pool[Any]) -> None:
    here, there, elsewhere = JobStore("docs"), JobStore("docs"), JobStore("other-docs")
    for store in (here, there, elsewhere):
        await store.start_store(db_url)
    gate = asyncio.Event()
    steps = Steps()
    job = await here.start("reindex", "test", gated(gate, {"embedded": 3}), steps.snapshot, {"full": True})
    assert (job.state, job.params, job.corpus) == ("running", {"full": True}, "docs")
    for store in (here, there):
        with pytest.raises(JobRunning) as refused:
            await store.start("reindex", "test", gated(gate), steps.snapshot)
        assert refused.value.job is not None and refused.value.job.id == job.id
    # Another kind, another corpus: not held up.
    seed = await there.start("seed", "test", gated(gate), Steps().snapshot)
    other = await elsewhere.start("reindex", "test", gated(gate), Steps().snapshot)
    steps.say("embedded 1/3")
    gate.set()
    final = await ended(there, migrated_pool, job)  # read by the other replica
    assert (final.state, final.result, final.error, final.progress) == ("done", {"embedded": 3}, None,
                                                                        {"step": "embedded 1/3"})
    assert (await ended(here, migrated_pool, seed)).state == "done"
    assert (await ended(here, migrated_pool, other)).state == "done"
    again = await there.start("reindex", "test", gated(gate), Steps().snapshot)  # the lock went with the end
    assert (await ended(here, migrated_pool, again)).state == "done"
    assert [j.id for j in await here.recent(migrated_pool, "reindex")] == [again.id, job.id]


async def test_a_job_ends_failed_when_stopped_interrupted_or_refused(
    db_url: str, migrated_pool: asyncpg.Pool[Any],
) -> None:
    store, reader = JobStore("docs"), JobStore("docs")
    for s in (store, reader):
        await s.start_store(db_url)

    async def refused() -> dict[str, Any]:
        raise JobFailed("seed rejected", {"rejected": [{"file": "a.md", "reason": "bad"}]})

    failed = await ended(reader, migrated_pool, await store.start("seed", "test", refused, Steps().snapshot))
    assert (failed.state, failed.error, failed.result) == (
        "failed", "seed rejected", {"rejected": [{"file": "a.md", "reason": "bad"}]})

    # The database ends the runner's connection (its process died, or the server restarted).
    gate = asyncio.Event()
    cut = await store.start("reindex", "test", gated(gate), Steps().snapshot)
    pid = await migrated_pool.fetchval(
        "select pid from pg_locks where locktype = 'advisory' and objsubid = 2 and granted and classid = $1::int4::oid"
        " and database = (select oid from pg_database where datname = current_database())", LOCK_NAMESPACE)
    assert await migrated_pool.fetchval("select pg_terminate_backend($1)", pid)
    interrupted = await ended(reader, migrated_pool, cut)
    assert (interrupted.state, interrupted.error) == ("failed", INTERRUPTED)

    # A shutdown stops what runs here.
    running = await store.start("reindex", "test", gated(gate), Steps().snapshot)
    await store.stop()
    stopped = await reader.get(migrated_pool, running.id)
    assert stopped is not None and (stopped.state, stopped.error) == ("failed", STOPPED)
    assert stopped.finished_at is not None
