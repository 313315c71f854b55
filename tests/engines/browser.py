"""A real browser for the Jupyter front end's tests: Debian's chromium, driven by Playwright.

Debian's `chromium` is installed with apt-get when missing (Playwright's own browser downloads
cannot be reached from these machines). The browser runs headless, with the flags that keep
it off the network.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from engines import EngineError, apt_install, engine_unavailable

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """A headless chromium browser (Playwright's sync API) for the session."""
    try:
        apt_install(("chromium",), ("chromium",))
    except EngineError as exc:
        engine_unavailable(f"no browser: {exc}")
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        engine_unavailable(f"no browser driver: {exc}")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                             args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
