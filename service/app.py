"""create_app(): routes, lifespan, OpenAPI, limits and error handlers; nothing else."""

from __future__ import annotations

from typing import Any, cast

from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.plugins.opentelemetry import (
    OpenTelemetryConfig,
    OpenTelemetryInstrumentationMiddleware,
)
from litestar.types import ASGIApp, ControllerRouterHandler, Receive, Scope, Send

from service.api import (
    admin,
    admin_index,
    console,
    context,
    curations,
    decision_fits,
    documents,
    health,
    jobs,
    ops,
    retrieve,
    review,
)
from service.api.body import MAX_BODY_BYTES, require_json_body  # the request limits' home
from service.api.documents import corpus_categories
from service.api.errors import EXCEPTION_HANDLERS
from service.api.feedback import feedback_router
from service.api.openapi import (
    StrictStructSchemaPlugin,
    publish_categories,
    publish_flag_limits,
    render_plugins,
    swagger_asset,
)
from service.curation.curator import CURATOR_KEY, Curator
from service.curation.store import CurationStore
from service.db.migrate import latest_version
from service.feedback.service import FEEDBACK_KEY, Feedback, build_feedback
from service.flags import Flags
from service.ingest.seeder import Chunker, default_chunker
from service.learning.connect import LEARNING_KEY, connect_learning
from service.lifespan import lifespan
from service.mcp.http import McpEndpoint
from service.operations import OPS_KEY, Operations, build_operations
from service.pipeline import TierFaults
from service.settings import Settings
from service.state import STATE_KEY, AppState, CorpusSnapshot
from service.wiring import build_pipeline


def create_app(
    settings: Settings, *, chunker: Chunker | None = None, faults: TierFaults | None = None,
) -> Litestar:
    """Build the ASGI app. Bad flags.yaml or migrations stop here, before serving.
    `faults`: the fault tests' seam into every tier (`pipeline.TierFaults`)."""
    operations = build_operations(settings.flags_file)  # FlagError names a bad key
    flags = operations.flags()
    st = AppState(
        settings=settings,
        flags=flags,
        chunker=chunker or default_chunker(flags.chunking.max_tokens),
        expected_migration=latest_version(settings.migrations_dir),
    )
    feedback = _connect_feedback(st, operations)
    curator = _connect_curations(st)
    pipeline = build_pipeline(st, operations, curate=curator, on_query=feedback.observe_outcome, faults=faults)
    learning = connect_learning(st, pipeline.decider)  # the stored fit from review in force
    _connect_jobs(st)
    cors = (
        CORSConfig(allow_origins=list(settings.cors_allow_origins))
        if settings.cors_allow_origins
        else None  # closed by default: no CORS headers at all
    )
    mcp = McpEndpoint(settings)  # /mcp: the routes below as MCP tools
    app = Litestar(
        route_handlers=[health.health, health.ready, *admin.ROUTES, *admin_index.ROUTES, *ops.ROUTES,
                        swagger_asset, mcp.route,
                        *cast("list[ControllerRouterHandler]", retrieve.ROUTES),
                        *cast("list[ControllerRouterHandler]", context.ROUTES),
                        *cast("list[ControllerRouterHandler]", documents.ROUTES),
                        *cast("list[ControllerRouterHandler]", console.ROUTES),
                        *review.ROUTES, *curations.ROUTES, *decision_fits.ROUTES, *jobs.ROUTES,
                        feedback_router(flags.feedback.rate_limit_per_minute)],
        lifespan=[lifespan, mcp.lifespan],
        state=State({STATE_KEY: st, OPS_KEY: operations, FEEDBACK_KEY: feedback, CURATOR_KEY: curator,
                     LEARNING_KEY: learning}),
        dependencies={"pipeline": Provide(lambda: pipeline, use_cache=True, sync_to_thread=False)},
        openapi_config=OpenAPIConfig(
            title="Documentation retrieval service", version="0.1.0", path="/schema",
            render_plugins=render_plugins(),
        ),
        request_max_body_size=MAX_BODY_BYTES,
        before_request=require_json_body,  # 415 before Litestar parses a non-JSON body
        exception_handlers=EXCEPTION_HANDLERS,
        cors_config=cors,
        plugins=[StrictStructSchemaPlugin()],  # additionalProperties: false where enforced
        # Litestar moves this one outermost (around the exception handlers).
        middleware=[_http_instrumentation(operations).middleware] if settings.http_telemetry else [],
    )
    publish_flag_limits(app, flags)
    _connect_operations(st, operations, app)
    _publish_categories(st, app)
    return app


class _RouteTemplate:
    """What OpenTelemetry's ASGI metrics read for the `http_target` label (the shape
    FastAPI puts in the scope): the route template, so `/documents/{slug:str}` is one
    series rather than one per page."""

    def __init__(self, path_format: str) -> None:
        self.path_format = path_format


class _RoutedTelemetryMiddleware(OpenTelemetryInstrumentationMiddleware):
    """Litestar's OpenTelemetry middleware, telling the instrumentation the matched route."""

    def __init__(self, app: ASGIApp, config: OpenTelemetryConfig) -> None:
        async def routed(scope: Scope, receive: Receive, send: Send) -> None:
            try:
                await app(scope, receive, send)
            finally:
                template = cast("dict[str, Any]", scope).get("path_template")
                if template:
                    cast("dict[str, Any]", scope)["route"] = _RouteTemplate(template)

        super().__init__(app=routed, config=config)


def _http_instrumentation(operations: Operations) -> OpenTelemetryConfig:
    """OpenTelemetry's ASGI instrumentation on the app's own providers: a server span per
    request (parent of the pipeline's and asyncpg's spans) and `http_server_duration_*`
    by route template, method and status, 4xx/413/5xx included (it wraps the whole app)."""
    telemetry = operations.telemetry
    telemetry.instrument_database()
    return OpenTelemetryConfig(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider,
        exclude_spans=["receive", "send"],  # one span per request, not one per ASGI message
        middleware_class=_RoutedTelemetryMiddleware,
    )


def _connect_operations(st: AppState, operations: Operations, app: Litestar) -> None:
    """Runtime flags follow the store; the store starts and stops with the pool."""

    def on_change(flags: Flags) -> None:
        timeout_changed = flags.timeouts.db_ms != st.flags.timeouts.db_ms
        st.flags = flags
        publish_flag_limits(app, flags)  # e.g. retrieval.max_top_k in the request schema
        if timeout_changed and st.database is not None:
            st.database.recheck()  # the probe's verdict depends on this timeout

    async def start(dsn: str) -> None:
        await operations.store.start(dsn)

    async def stop() -> None:
        await operations.store.stop()
        operations.telemetry.shutdown()

    operations.store.on_change = on_change
    st.on_pool_ready.append(start)
    st.on_shutdown.append(stop)


def _publish_categories(st: AppState, app: Litestar) -> None:
    """The schema's `category` enums follow every corpus load (a re-seed may bring new ones)."""

    async def on_corpus(_snapshot: CorpusSnapshot) -> None:
        publish_categories(app, corpus_categories(st))

    st.on_corpus_loaded.append(on_corpus)


def _connect_feedback(st: AppState, operations: Operations) -> Feedback:
    """The query log follows every answered request; its writer runs while the pool does."""
    feedback = build_feedback(
        lambda: st.pool, operations.store.flags, operations.telemetry.meter_provider,
        lambda: [d.slug for d in st.corpus.documents],
    )

    async def start(_dsn: str) -> None:
        feedback.writer.start()

    st.on_pool_ready.append(start)
    st.on_shutdown.append(feedback.writer.stop)
    return feedback


def _connect_jobs(st: AppState) -> None:
    """Jobs interrupted by a dead process are marked failed once the pool is up; the jobs
    running here are stopped (and written failed) at shutdown, before the pool closes."""
    st.on_pool_ready.append(st.jobs.start_store)
    st.on_shutdown.insert(0, st.jobs.stop)  # first: a job's work may use what the others stop


def _connect_curations(st: AppState) -> Curator:
    """Curations follow the store (LISTEN/NOTIFY) and check pages against each corpus load."""
    curator = Curator(CurationStore())

    async def on_corpus(snapshot: CorpusSnapshot) -> None:
        curator.load_corpus(snapshot.documents, snapshot.chunks)

    st.on_corpus_loaded.append(on_corpus)
    st.on_pool_ready.append(curator.store.start)
    st.on_shutdown.append(curator.store.stop)
    return curator
