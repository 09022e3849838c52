"""The console names the decision fit in force (issue 35 item 2), in Debian's headless Chromium,
against a real `python -m service serve` (the `service` fixture of tests/e2e/conftest.py, a server of this
module's own): the fit file first, then a fit learned from reviewed traffic with the number of
reviewed cases it was fitted on and its held-out figures, then the fit file again once restored."""

from __future__ import annotations

from typing import Any

import httpx

from tests.e2e.console_server import AUTH, E2E, Service, launch_chromium
from tests.integration.test_learning_loop import labelled_traffic, verdict

pytestmark = E2E


def _call(method: str, url: str, status: int, **kwargs: Any) -> Any:
    response = httpx.request(method, url, headers=AUTH, timeout=180, **kwargs)
    assert response.status_code == status, response.text
    return response.json()


def _learn(base: str) -> dict[str, Any]:
    """Traffic, reviews and a fit, as test_learning_loop drives them; the fit's result."""
    for query, pages in labelled_traffic().items():
        served = httpx.post(f"{base}/retrieve", json={"query": query}, timeout=30).json()
        _call("POST", f"{base}/admin/review/{served['request_id']}", 200, json=verdict(pages, served))
    job = _call("POST", f"{base}/admin/decision-fits", 202)["job"]
    while job["state"] in ("queued", "running"):
        job = _call("GET", f"{base}/admin/decision-fits/jobs/{job['id']}", 200, params={"wait": 120})["job"]
    assert job["state"] == "done", job
    result: dict[str, Any] = job["result"]
    return result


def test_the_console_names_the_fit_in_force_and_its_held_out_figures(service: Service) -> None:
    from playwright.sync_api import expect, sync_playwright

    base = service.url
    _call("PUT", f"{base}/admin/flags", 200, json={"name": "decision.policy", "value": "calibrated"})
    shipped = httpx.get(f"{base}/ready", timeout=10).json()["calibration"]
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.goto(f"{base}/console")
            line = page.locator("#decision-status")
            expect(line).to_have_text(f"decided by: {shipped} (own fit file)")

            result = _learn(base)
            assert result["activated"], result
            fit = result["figures"]["fit"]
            page.reload()
            expect(line).to_have_text(
                f"decided by: {result['version']} (own, fitted on {result['figures']['fitted_on']} reviewed cases; "
                f"held out: right {100 * fit['right_rate']:.1f} %, wrong {100 * fit['wrong_rate']:.1f} %)")

            _call("POST", f"{base}/admin/decision-fits/deactivate", 200)
            page.reload()
            expect(line).to_have_text(f"decided by: {shipped} (own fit file)")
        finally:
            browser.close()
