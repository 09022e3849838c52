"""The console's operator-loop panels in Debian's headless Chromium: review queue,
insights with its chart, curations. Same server set-up as the other console tests (the
module-scoped `service` fixture of tests/e2e/conftest.py: a real `python -m service serve`)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.e2e.console_server import AUTH, E2E, SHOTS, TOKEN, Service, launch_chromium

pytestmark = E2E

QUERIES = ["explain workspace", "where are my shortcuts?", "what is home", "quick links",
           "how do I open the navigator", "send an email"]


def _ask(svc: Service, query: str) -> dict[str, Any]:
    r = httpx.post(f"{svc.url}/retrieve", json={"query": query, "phase": 1}, timeout=10)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_review_insights_and_curations_panels(service: Service) -> None:
    from playwright.sync_api import expect, sync_playwright

    answers = [_ask(service, q) for q in QUERIES]
    answered = [a for a in answers if a["status"] == "answer"]
    assert len(answered) >= 3
    fb = httpx.post(f"{service.url}/feedback", json={"request_id": answered[0]["request_id"],
                                                     "verdict": "not_what_i_meant"}, timeout=10)
    assert fb.status_code == 200, fb.text
    SHOTS.mkdir(parents=True, exist_ok=True)

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            problems: list[str] = []
            page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
            page.goto(f"{service.url}/console")
            page.get_by_label("Admin token").fill(TOKEN)
            page.get_by_role("button", name="Use token").click()
            expect(page.locator("#token-status")).to_contain_text("Token in use")

            # Review queue: this week's sample, the user's feedback shown, a review stored.
            rows = page.locator("#review-body tr[data-request-id]")
            expect(rows.first).to_be_visible()
            assert rows.count() == len(answered)  # fewer answers than the sample size: all of them
            fed = page.locator(f"#review-body tr[data-request-id='{answered[0]['request_id']}']")
            expect(fed.locator("td").nth(3)).to_have_text("not_what_i_meant")
            fed.get_by_role("button", name="right", exact=True).click()
            expect(page.locator("#review-status")).to_contain_text("Reviewed")
            expect(fed.locator("td.review-state")).to_contain_text("right by admin@127.0.0.1 (1)")
            logged = httpx.get(f"{service.url}/admin/queries/{answered[0]['request_id']}", headers=AUTH,
                               timeout=10).json()
            assert logged["review"]["verdict"] == "right"
            page.locator("#review-section").screenshot(path=str(SHOTS / "review-queue-1280.png"))

            # Insights: the rates table, the triggers and the chart.
            page.get_by_label("Window", exact=True).select_option("24h")
            page.get_by_role("button", name="Load", exact=True).click()
            expect(page.locator("#insights-body")).to_contain_text("keyword match rate")
            expect(page.locator("#insights-body")).to_contain_text("not what i meant rate")
            expect(page.locator("#insights-triggers li")).to_have_count(6)
            expect(page.locator("#insights-triggers")).to_contain_text("not enough data")
            label = page.locator("#insights-chart").get_attribute("aria-label") or ""
            assert "latest keyword match" in label, label
            page.locator("#insights-section").screenshot(path=str(SHOTS / "insights-1280.png"))

            # Curations: pin a page for a query, see it in /retrieve, remove it.
            page.locator("#curation-query").fill("where are my shortcuts?")
            page.locator("#curation-slug").fill("concepts/home")
            page.get_by_role("button", name="Add curation").click()
            expect(page.locator("#curations-status")).to_contain_text("Added curation #")
            expect(page.locator("#curations-body tr")).to_have_count(1)
            expect(page.locator("#curations-body")).to_contain_text("concepts/home")
            pinned = _ask(service, "where are my shortcuts?")
            assert pinned["results"][0]["doc_slug"] == "concepts/home"
            assert any(s["tier"] == "curation" for s in pinned["fallback_path"])
            page.locator("#curations-section").screenshot(path=str(SHOTS / "curations-1280.png"))
            page.set_viewport_size({"width": 400, "height": 900})
            page.screenshot(path=str(SHOTS / "operator-panels-400.png"), full_page=True)
            page.set_viewport_size({"width": 1280, "height": 900})
            page.locator("#curations-body").get_by_role("button", name="Remove").click()
            expect(page.locator("#curations-status")).to_contain_text("Removed curation")
            expect(page.locator("#curations-body")).to_contain_text("No curations.")
            assert _ask(service, "where are my shortcuts?")["results"][0]["doc_slug"] != "concepts/home"
            assert problems == []
        finally:
            browser.close()
