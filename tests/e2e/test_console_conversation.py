"""The console's conversation view in Debian's headless Chromium: type messages, click a
clarification option, see the carried topic and the screen used. Same server set-up as the
other console tests (the module-scoped `service` fixture of tests/e2e/conftest.py: a real
`python -m service serve`)."""

from __future__ import annotations

from tests.e2e.console_server import E2E, SHOTS, Service, launch_chromium

pytestmark = E2E


def test_conversation_view(service: Service) -> None:
    from playwright.sync_api import expect, sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            problems: list[str] = []
            page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
            page.goto(f"{service.url}/console")
            section = page.locator("#conversation-section")
            turns = section.locator("#conv-transcript li.turn.assistant")

            # A question that asks back, answered by clicking an option: the README's example
            # ("links": Links Overview or Quick Links; "remove a widget" is answered at once under
            # the default since 2026-11-29, golden dialogue remove-widget-pick-widget-manager).
            section.get_by_label("Message", exact=True).fill("links")
            section.get_by_role("button", name="Send").click()
            expect(turns).to_have_count(1)
            expect(turns.nth(0)).to_have_attribute("data-status", "clarify")
            option = turns.nth(0).get_by_role("button", name="Quick Links (widgets)")
            option.click()
            expect(turns).to_have_count(2)
            expect(turns.nth(1)).to_have_attribute("data-status", "answer")
            expect(turns.nth(1).locator(".conv-answer")).to_contain_text("Adding a link")
            expect(turns.nth(1).locator(".conv-notes")).to_contain_text("Reply to the clarification")

            # A follow-up without a topic: the carried topic is shown, with its turn.
            section.get_by_label("Message", exact=True).fill("and how do I add one?")
            section.get_by_role("button", name="Send").click()
            expect(turns).to_have_count(3)
            expect(turns.nth(2).locator(".conv-notes")).to_contain_text("Topic carried from turn")

            # The screen: "this" on a workspace screen.
            section.get_by_role("button", name="New conversation").click()
            expect(turns).to_have_count(0)
            section.get_by_label("Screen", exact=True).fill("workspace")
            section.get_by_label("Message", exact=True).fill("how do I rename this")
            page.keyboard.press("Enter")
            expect(turns).to_have_count(1)
            expect(turns.nth(0).locator(".conv-answer")).to_contain_text("Renaming a workspace")
            expect(turns.nth(0).locator(".conv-notes")).to_contain_text("Screen used: workspace")
            section.screenshot(path=str(SHOTS / "conversation-1280.png"))
            assert problems == []
        finally:
            browser.close()
