"""Every HTTP route handler of the service lives in `service/api/` (issue 42 item 6): the
decision-fit routes moved there from `service/learning/`. (The MCP endpoint is an ASGI mount
whose handler is Litestar's; its tools call these routes.)"""

from __future__ import annotations

import importlib.util

from service.app import create_app
from service.settings import Settings


def _handlers() -> dict[str, set[str]]:
    """module → the paths its handlers serve, for the service's own handlers."""
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1:1/unused"))
    served: dict[str, set[str]] = {}
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            module = handler.fn.__module__
            if module.startswith("service."):
                served.setdefault(module, set()).add(route.path)
    return served


def test_every_route_is_served_from_service_api() -> None:
    served = _handlers()
    assert {m for m in served if not m.startswith("service.api.")} == set(), served
    assert served["service.api.decision_fits"] >= {
        "/admin/decision-fits", "/admin/decision-fits/jobs/{job_id:str}"}
    assert "/admin/jobs/{job_id:str}" in served["service.api.jobs"]


def test_the_learning_package_serves_no_route() -> None:
    assert importlib.util.find_spec("service.learning.routes") is None
