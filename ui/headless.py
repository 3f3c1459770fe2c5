"""Headless Chromium driven by Playwright, as the browser tests, the README's screenshots and the UI latency
benchmark open the app. Playwright is imported on launch only: the app itself never needs it."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = "/usr/bin/chromium"  # Debian's, installed by `make test`
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@contextlib.contextmanager
def launch(executable_path: str = CHROMIUM) -> Iterator[Browser]:
    """A headless Chromium (the one at ``executable_path``), closed with its Playwright driver on leaving."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable_path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
