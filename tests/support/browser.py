"""Debian's Chromium, driven by Playwright, for the tests that need a real browser.

Playwright's own browser builds come from a CDN this project's machines cannot reach, so the tests launch
the `chromium` that `scripts/setup.sh --test` installs from Debian. Playwright's sync API runs its own event
loop: use it from plain (not anyio) tests, with the servers under test in background threads or processes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, Page, sync_playwright


def chromium_path() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("no chromium on PATH: run scripts/setup.sh --test (it installs Debian's chromium)")
    return found


@contextmanager
def chromium() -> Iterator[Browser]:
    # As root, Chromium refuses to start with its sandbox; the pages it opens are the tests' own.
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=args)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def page() -> Iterator[Page]:
    """A fresh page in a fresh browser context (no cookies or storage shared between tests)."""
    with chromium() as browser:
        context = browser.new_context()
        try:
            yield context.new_page()
        finally:
            context.close()
