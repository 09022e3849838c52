"""A minimal OpenAI-compatible `POST /v1/embeddings` server for tests only
(no embedding server installs cleanly beside torch 2.13.0 here: infinity-emb
pins numpy 1.x). It serves a local model in-process through ASGI; knobs make
it answer like a wrong model or a flaky server. Not a product component."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from litestar import Litestar, Response, post
from litestar.params import JSONBody


@dataclass
class StandIn:
    embed: Callable[[Sequence[str]], npt.NDArray[np.float32]]
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    transform: Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]] = lambda v: v
    fail_first: int = 0
    """Answer 503 to this many requests before serving."""
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    batch_sizes: list[int] = field(default_factory=list)

    def app(self) -> Litestar:
        @post("/v1/embeddings", status_code=200)
        async def embeddings(data: JSONBody[dict[str, Any]]) -> Response[dict[str, Any]]:
            self.requests += 1
            if self.requests <= self.fail_first:
                return Response({"error": "warming up"}, status_code=503)
            if data.get("model") != self.model:
                return Response({"error": f"model {data.get('model')!r} not found"}, status_code=404)
            texts = data["input"] if isinstance(data["input"], list) else [data["input"]]
            self.batch_sizes.append(len(texts))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                await asyncio.sleep(0.01)  # let concurrent requests overlap
                vectors = self.transform(self.embed(texts))
            finally:
                self.in_flight -= 1
            return Response({
                "object": "list", "model": self.model,
                "data": [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)],
            })

        return Litestar(route_handlers=[embeddings])
