"""create_app(): routes, lifespan, OpenAPI, limits and error handlers; nothing else."""

from __future__ import annotations

from typing import cast

from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.types import ControllerRouterHandler

from service.api import admin, admin_index, console, context, documents, health, ops, retrieve
from service.api.body import require_json_body
from service.api.errors import EXCEPTION_HANDLERS
from service.api.openapi import (
    StrictStructSchemaPlugin,
    publish_flag_limits,
    render_plugins,
    swagger_asset,
)
from service.api.retrieve import PIPELINE_KEY
from service.db.migrate import latest_version
from service.flags import Flags
from service.ingest.seeder import Chunker, default_chunker
from service.lifespan import lifespan
from service.operations import OPS_KEY, Operations, build_operations
from service.settings import Settings
from service.state import STATE_KEY, AppState
from service.wiring import build_pipeline

MAX_BODY_BYTES = 16 * 1024  # a query is at most a few hundred characters


def create_app(settings: Settings, *, chunker: Chunker | None = None) -> Litestar:
    """Build the ASGI app. Bad flags.yaml or migrations stop here, before serving."""
    operations = build_operations(settings.flags_file)  # FlagError names a bad key
    flags = operations.flags()
    st = AppState(
        settings=settings,
        flags=flags,
        chunker=chunker or default_chunker(flags.chunking.max_tokens),
        expected_migration=latest_version(settings.migrations_dir),
    )
    pipeline, _semantic = build_pipeline(st, operations)
    cors = (
        CORSConfig(allow_origins=list(settings.cors_allow_origins))
        if settings.cors_allow_origins
        else None  # closed by default: no CORS headers at all
    )
    app = Litestar(
        route_handlers=[health.health, health.ready, *admin.ROUTES, *admin_index.ROUTES, *ops.ROUTES,
                        swagger_asset,
                        *cast("list[ControllerRouterHandler]", retrieve.ROUTES),
                        *cast("list[ControllerRouterHandler]", context.ROUTES),
                        *cast("list[ControllerRouterHandler]", documents.ROUTES),
                        *cast("list[ControllerRouterHandler]", console.ROUTES)],
        lifespan=[lifespan],
        state=State({STATE_KEY: st, PIPELINE_KEY: pipeline, OPS_KEY: operations}),
        openapi_config=OpenAPIConfig(
            title="Documentation retrieval service", version="0.1.0", path="/schema",
            render_plugins=render_plugins(),
        ),
        request_max_body_size=MAX_BODY_BYTES,
        before_request=require_json_body,  # 415 before Litestar parses a non-JSON body
        exception_handlers=EXCEPTION_HANDLERS,
        cors_config=cors,
        plugins=[StrictStructSchemaPlugin()],  # additionalProperties: false where enforced
    )
    publish_flag_limits(app, flags)
    _connect_operations(st, operations, app)
    return app


def _connect_operations(st: AppState, operations: Operations, app: Litestar) -> None:
    """Runtime flags follow the store; the store starts and stops with the pool."""

    def on_change(flags: Flags) -> None:
        st.flags = flags
        publish_flag_limits(app, flags)  # e.g. retrieval.max_top_k in the request schema

    async def start(dsn: str) -> None:
        await operations.store.start(dsn)

    async def stop() -> None:
        await operations.store.stop()
        operations.telemetry.shutdown()

    operations.store.on_change = on_change
    st.on_pool_ready.append(start)
    st.on_shutdown.append(stop)
