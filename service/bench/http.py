"""A minimal HTTP/1.1 keep-alive load generator on raw asyncio streams.

httpx costs ~0.3 ms of CPU per request, which on 2 cores would make the
client the bottleneck; this one parses only the status line and
Content-Length. Run against `/health` it shows its own ceiling.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

Body = dict[str, Any]


@dataclass
class LoadResult:
    concurrency: int
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.seconds if self.seconds > 0 else 0.0


async def _worker(host: str, port: int, requests: list[bytes], deadline: float, out: LoadResult, offset: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    i = offset
    try:
        while time.perf_counter() < deadline:
            raw = requests[i % len(requests)]
            i += 1
            started = time.perf_counter()
            writer.write(raw)
            status_line = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:].strip())
            await reader.readexactly(length)
            elapsed = (time.perf_counter() - started) * 1000
            if status_line[9:12] == b"200":
                out.latencies_ms.append(elapsed)
            else:
                out.errors += 1
    except (ConnectionError, asyncio.IncompleteReadError):
        out.errors += 1
    finally:
        writer.close()


def build_requests(host: str, path: str, bodies: list[Body] | None) -> list[bytes]:
    if not bodies:
        return [f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()]
    out = []
    for body in bodies:
        data = json.dumps(body).encode()
        head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n").encode()
        out.append(head + data)
    return out


async def run_load(host: str, port: int, path: str, bodies: list[Body] | None,
                   concurrency: int, seconds: float) -> LoadResult:
    requests = build_requests(host, path, bodies)
    result = LoadResult(concurrency=concurrency, seconds=seconds)
    started = time.perf_counter()
    deadline = started + seconds
    await asyncio.gather(*(_worker(host, port, requests, deadline, result, i) for i in range(concurrency)))
    result.seconds = time.perf_counter() - started
    return result
