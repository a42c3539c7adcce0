"""An accessibility audit of every screen by axe-core (npm), at a phone's width and a desktop's, in the light and
the dark theme: no serious or critical finding (colour contrast included, so the dark theme is checked too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from tests.browser.conftest import TIMEOUT_MS, Served, log_in
from tests.browser.test_console_usability import (
    Shelf,
    screens,
    shelf,  # noqa: F401 - the fixture, shared
)

AXE = Path(__file__).parents[2] / "tools" / "node" / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1920, "height": 1080}}
SERIOUS = ("serious", "critical")


def _findings(page: Page) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(AXE))
    found: dict[str, Any] = page.evaluate(
        """async () => {
             const results = await axe.run(document, { resultTypes: ["violations"] });
             return { passed: results.passes.length, violations: results.violations.map((v) => ({
               id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) })) };
           }"""
    )
    assert found["passed"] > 10  # the rules ran on a screen that was there
    return [finding for finding in found["violations"] if finding["impact"] in SERIOUS]


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("width", list(WIDTHS))
def test_no_screen_has_a_serious_accessibility_finding(
    browser: Browser,
    served: Served,
    shelf: Shelf,  # noqa: F811 - the fixture imported above
    width: str,
    theme: str,
) -> None:
    # axe is injected as a script of the test's: only this context lets the page run it beside the console's CSP
    context = browser.new_context(viewport=WIDTHS[width], color_scheme=theme, bypass_csp=True)  # type: ignore[arg-type]
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        log_in(page, served)
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == ("rgb(21, 24, 28)" if theme == "dark" else "rgb(255, 255, 255)")  # the theme applies
        findings = {}
        for name in screens(page, served, shelf):
            findings[name] = _findings(page)
        assert len(findings) == 18
        assert {name: found for name, found in findings.items() if found} == {}
    finally:
        context.close()
