"""`POST /feedback`: the chat backend reports what a user thought of an answer.

Unauthenticated like `/retrieve`, so bounded: the app's 16 KiB body limit (413),
a comment length (400; `feedback.max_comment_chars`, at most 2,000), and a per-client-address rate limit (429 with `Retry-After`,
Litestar's RateLimitMiddleware). One feedback per request id and verdict:
sending it again answers 200 with `recorded: false`.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, Router, post
from litestar.datastructures import State
from litestar.exceptions import NotFoundException, ServiceUnavailableException
from litestar.middleware.rate_limit import CacheObject, RateLimitConfig, RateLimitMiddleware
from litestar.params import JSONBody
from litestar.types import Receive, Scope, Send

from service.api.body import invalid, strict_required
from service.api.errors import client_errors
from service.domain.types import Base
from service.feedback.log_writer import DB_ERRORS
from service.feedback.service import FEEDBACK_KEY, Feedback
from service.feedback.store import UnknownRequest, add_feedback
from service.state import get_state

MAX_COMMENT_CHARS = 2000
"""The schema's bound (even \\u-escaped it fits the 16 KiB body); the flag may set a lower one."""
RETRY_AFTER_S = 5
"""What a client is told to wait while the database is away."""
RequestId = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$",
                                        description="`request_id` of a /retrieve or /context response")]
Slug = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[a-z0-9][a-z0-9/_.-]*$")]


class FeedbackRequest(Base, frozen=True):
    request_id: RequestId
    verdict: Literal["helpful", "not_what_i_meant", "wrong_page", "missing"]
    expected_slug: Slug | None = None
    """The page the user wanted, when the chat UI knows it."""
    comment: Annotated[str, msgspec.Meta(max_length=MAX_COMMENT_CHARS)] | None = None


class FeedbackResponse(Base, frozen=True):
    request_id: str
    verdict: str
    recorded: bool
    """False: this request already had this verdict (nothing changed)."""


def feedback_of(state: State) -> Feedback:
    value: Feedback = state[FEEDBACK_KEY]
    return value


def unavailable(detail: str) -> ServiceUnavailableException:
    return ServiceUnavailableException(detail, headers={"Retry-After": str(RETRY_AFTER_S)})


def check_page(slug: str | None, pages: Any, field: str) -> None:
    if slug is not None and pages and slug not in pages:
        raise invalid(field, f"no page {slug!r} in the corpus")


@post("/feedback", status_code=200,
      responses=client_errors(400, 404, 413, 429, 503),
      summary="Feedback on one answer: helpful | not_what_i_meant | wrong_page | missing")
async def feedback(
    data: JSONBody[FeedbackRequest], state: State, request: Request[Any, Any, Any]
) -> FeedbackResponse:
    body = await strict_required(request, FeedbackRequest)
    fb = feedback_of(state)
    limit = fb.flags().feedback.max_comment_chars
    if body.comment is not None and len(body.comment) > limit:
        raise invalid("comment", f"at most {limit} characters (got {len(body.comment)})")
    check_page(body.expected_slug, set(fb.pages()), "expected_slug")
    pool = get_state(state).pool
    if pool is None:
        raise unavailable("the database is not reachable; try again later")
    try:
        if fb.writer.pending(body.request_id):  # answered a moment ago: its log row is still queued
            await fb.writer.flush()
        created = await add_feedback(
            pool, body.request_id, body.verdict, body.expected_slug, body.comment,
            request.client.host if request.client else "",
        )
    except UnknownRequest as err:
        raise NotFoundException(f"no logged request with id {body.request_id!r}") from err
    except DB_ERRORS as err:
        raise unavailable(f"the database is not reachable ({type(err).__name__}); try again later") from err
    if created:
        fb.metrics.feedback(body.verdict)
    return FeedbackResponse(request_id=body.request_id, verdict=body.verdict, recorded=created)


class _RateLimit(RateLimitMiddleware):
    """Litestar's limiter, plus `Retry-After` (it sends only the RateLimit-* draft headers),
    with its limit read from the runtime flags on each request (a flag change applies at once)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        feedback: Feedback = scope["litestar_app"].state[FEEDBACK_KEY]
        self.max_requests = feedback.flags().feedback.rate_limit_per_minute
        await super().__call__(scope, receive, send)

    def create_response_headers(self, cache_object: CacheObject) -> dict[str, str]:
        headers = super().create_response_headers(cache_object)
        if len(cache_object.history) >= self.max_requests:
            headers["Retry-After"] = str(max(1, cache_object.reset - int(time.time())))
        return headers


def feedback_router(per_minute: int) -> Router:
    """The route behind its own limiter (so /retrieve is never rate-limited by it);
    `per_minute` is the start-up value, the flag's current one applies per request."""
    config = RateLimitConfig(rate_limit=("minute", per_minute), middleware_class=_RateLimit,
                             store="feedback_rate_limit")
    return Router(path="/", route_handlers=[feedback], middleware=[config.middleware])
