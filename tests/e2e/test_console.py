"""The operator console end to end: the real service in a subprocess, Debian's Chromium.

One browser session walks through what an operator does: a query and its
evidence table, the clarification text exactly as `/retrieve` returns it, the
side-by-side view, the admin token (memory only), a phase switch confirmed
over HTTP by `GET /admin/flags`, kill and reset, the monitors updating after
traffic, and a golden replay. Screenshots (1280 px and 400 px) are written to
`test-output/console/` for reviewers.

Needs `/usr/bin/chromium` (`.ci/run` installs Debian's `chromium`); Playwright
only drives it: no browser is ever downloaded.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.e2e.console_server import AUTH, E2E, SHOTS, TOKEN, Service, launch_chromium

pytestmark = E2E


def _wait_for(predicate: Any, timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_console_end_to_end(service: Service) -> None:
    from playwright.sync_api import expect, sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    # The page must have everything it needs from this origin (no CDN, offline).
    page_html = httpx.get(f"{service.url}/console", timeout=10)
    assert page_html.status_code == 200
    assert "default-src 'none'" in page_html.headers["content-security-policy"]
    assert "http://" not in page_html.text and "https://" not in page_html.text

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            problems: list[str] = []
            page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
            page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url}"))
            page.on("request", lambda req: None if req.url.startswith(service.url)
                    else problems.append(f"off-origin request: {req.url}"))
            page.goto(f"{service.url}/console")
            expect(page.locator("#service-status")).to_contain_text("ready")

            # 1. A query at phase 1: decision and evidence table.
            page.get_by_label("Query", exact=True).fill("explain workspace")
            page.get_by_label("Phase", exact=True).select_option("1")
            page.get_by_label("Top-k").fill("3")
            page.get_by_role("button", name="Retrieve").click()
            rows = page.locator("#results table.evidence tbody tr")
            expect(rows.first).to_be_visible()
            expect(page.locator("#results .decision")).to_have_text("answer")
            assert rows.first.get_attribute("data-doc") == "concepts/workspace"
            assert rows.count() >= 1
            expect(rows.first.locator("td").nth(5)).to_have_text("keyword")  # source column

            # 2. The clarification text exactly as the chat UI gets it, with its options.
            # "links": Quick Links or Links Overview, a question under the default policy
            expected = httpx.post(f"{service.url}/retrieve", json={"query": "links", "phase": 1, "top_k": 3},
                                  timeout=10).json()
            assert expected["status"] == "clarify"
            page.get_by_label("Query", exact=True).fill("links")
            page.keyboard.press("Enter")  # keyboard submit
            expect(page.locator("#results [data-testid=message]")).to_have_text(expected["message"])
            expect(page.locator("#results .options button")).to_have_count(len(expected["options"]))

            # 3. Side by side: three columns, phases 1, 2 and 3.
            page.get_by_label("Side by side (phases 1, 2, 3)").check()
            page.get_by_role("button", name="Retrieve").click()
            expect(page.locator("#results .column")).to_have_count(3)
            for phase in (1, 2, 3):
                column = page.locator(f"#results .column[data-phase='{phase}']")
                expect(column.locator("h3")).to_have_text(f"Phase {phase}")
                expect(column.locator(".decision")).to_be_visible()
            page.screenshot(path=str(SHOTS / "side-by-side-1280.png"), full_page=True)
            page.get_by_label("Side by side (phases 1, 2, 3)").uncheck()
            page.get_by_label("Query", exact=True).fill("explain workspace")
            page.get_by_role("button", name="Retrieve").click()
            expect(page.locator("#results .column")).to_have_count(0)
            expect(page.locator("#results .decision")).to_have_text("answer")

            # 4. The admin token: memory only, never stored.
            set_phase = page.get_by_role("button", name="Set phase")
            expect(set_phase).to_be_disabled()
            page.get_by_label("Admin token").fill(TOKEN)
            page.get_by_role("button", name="Use token").click()
            expect(page.locator("#token-status")).to_contain_text("Token in use")
            expect(page.get_by_label("Admin token")).to_have_value("")
            assert page.evaluate("() => localStorage.length + sessionStorage.length") == 0
            assert page.evaluate("() => document.cookie") == ""
            assert context.cookies() == []
            expect(page.locator("#flags-body tr[data-flag='phase']")).to_be_visible()

            # 5. Switch the phase from the page; GET /admin/flags over HTTP shows it.
            assert service.flag("phase")["value"] == 3
            page.get_by_label("Configured phase").select_option("2")
            set_phase.click()
            expect(page.locator("#flags-status")).to_contain_text("phase set to 2")
            _wait_for(lambda: service.flag("phase") == {"name": "phase", "value": 2, "source": "override"},
                      what="phase override 2 in GET /admin/flags")
            row = page.locator("#flags-body tr[data-flag='phase']")
            expect(row.locator("td").nth(0)).to_have_text("2")
            expect(row.locator("td").nth(1)).to_contain_text("override")

            # Disable and re-enable retrieval; /retrieve follows.
            page.get_by_role("button", name="Disable retrieval").click()
            expect(page.locator("#flags-status")).to_contain_text("retrieval disabled")
            assert service.flag("enabled")["value"] is False
            disabled = httpx.post(f"{service.url}/retrieve", json={"query": "explain workspace"}, timeout=10)
            assert disabled.json()["status"] == "disabled"
            page.get_by_role("button", name="Enable retrieval").click()
            expect(page.locator("#flags-status")).to_contain_text("retrieval enabled")
            assert service.flag("enabled")["value"] is True

            # 6. Traffic: the monitors panel updates (auto-refresh, every 3 s).
            samples_cell = page.locator("#monitor-body tr[data-phase='2'] [data-testid=samples]")
            expect(samples_cell).to_be_visible()
            before = int(samples_cell.inner_text())
            with httpx.Client(base_url=service.url, timeout=10) as client:
                for query in ["explain workspace", "home", "shortcuts", "tell me about panels"] * 6:
                    assert client.post("/retrieve", json={"query": query}).status_code == 200
            http_samples = service.flags()["kill_switch"]["windows"]["phase2"]["samples"]
            assert http_samples >= before + 24
            expect(samples_cell).to_have_text(str(http_samples), timeout=10_000)
            expect(page.locator("#monitor-body tr[data-phase='2'] td").nth(2)).not_to_have_text("–")
            chart_label = page.locator("#latency-chart").get_attribute("aria-label") or ""
            assert "phase 2 no data" not in chart_label, chart_label
            expect(page.locator("#audit")).to_contain_text("phase")
            page.screenshot(path=str(SHOTS / "monitors-1280.png"), full_page=True)

            # 7. Kill and reset from the page (the confirm dialog is accepted).
            page.once("dialog", lambda dialog: dialog.accept())
            page.get_by_role("button", name="Kill switch", exact=True).click()
            expect(page.locator("#kill-state")).to_contain_text("manual")
            assert service.flags()["kill_switch"]["state"] == "manual"
            expect(page.locator("#trips li").first).to_contain_text("manual")
            page.screenshot(path=str(SHOTS / "killed-1280.png"), full_page=True)
            page.get_by_role("button", name="Reset kill switch").click()
            expect(page.locator("#kill-state")).to_contain_text("closed")
            assert service.flags()["kill_switch"]["state"] == "closed"

            # 8. Golden replay on the server, per case with the reason.
            expected_report = httpx.post(f"{service.url}/admin/replay", headers=AUTH,
                                         json={"file": "navigation", "phase": 1}, timeout=60).json()
            page.get_by_label("Golden file (tests/golden/)").fill("navigation")
            page.get_by_label("Replay phase").select_option("1")
            page.get_by_role("button", name="Run replay").click()
            summary = page.locator("[data-testid=replay-summary]")
            expect(summary).to_contain_text(
                f"{expected_report['passed']} passed, {expected_report['failed']} failed", timeout=30_000)
            expect(page.locator("#replay-results tbody tr")).to_have_count(len(expected_report["results"]))
            page.get_by_label("Admin token").focus()  # keep the screenshot free of a focus ring mid-page
            page.locator("#query").scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "console-1280.png"), full_page=True)

            # 9. Narrow screen (~400 px): one column, nothing wider than the viewport.
            narrow = context.new_page()
            narrow.set_viewport_size({"width": 400, "height": 860})
            narrow.goto(f"{service.url}/console")
            narrow.get_by_label("Query", exact=True).fill("explain workspace")
            narrow.get_by_role("button", name="Retrieve").click()
            expect(narrow.locator("#results table.evidence tbody tr").first).to_be_visible()
            overflow = narrow.evaluate("() => document.documentElement.scrollWidth")
            assert overflow <= 400, f"page is {overflow}px wide at a 400px viewport"
            narrow.screenshot(path=str(SHOTS / "console-400.png"), full_page=False)
            narrow.screenshot(path=str(SHOTS / "console-400-full.png"), full_page=True)
            narrow.close()

            expected_404s = [p for p in problems if "favicon" not in p]
            assert expected_404s == [], expected_404s
        finally:
            browser.close()
    # Leave the shared service as found.
    httpx.delete(f"{service.url}/admin/flags/phase", headers=AUTH, timeout=10)


def test_replay_endpoint_rejects_paths_and_bad_yaml(service: Service) -> None:
    post = lambda body: httpx.post(f"{service.url}/admin/replay", headers=AUTH, json=body, timeout=30)  # noqa: E731
    assert httpx.post(f"{service.url}/admin/replay", json={"file": "navigation"}, timeout=10).status_code == 401
    assert post({"file": "../../etc/passwd"}).status_code == 404
    assert post({"file": "navigation", "yaml": "cases: []"}).status_code == 400
    bad = post({"yaml": "cases: [{id: a}]"})
    assert bad.status_code == 400 and "query" in bad.json()["error"]
    ok = post({"yaml": "cases: [{id: a, query: explain workspace, phases: [1], "
                       "expect: {decision: answer, top: concepts/workspace}}]"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["passed"] == 1 and ok.json()["results"][0]["failures"] == []
    assert post({"yaml": "x" * (64 * 1024 + 1)}).status_code == 400
