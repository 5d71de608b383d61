"""A real headless Chromium (Debian's ``/usr/bin/chromium``) driven by Playwright, for the console's
browser tests. No browser download: Playwright's bundled driver talks to the system Chromium, with a
fresh profile per test and no background network. Skips when Chromium or Playwright is missing
(``make test-deps`` installs Chromium; ``scripts/test-deps/chromium.sh``).

Screenshots go to ``tests/artifacts/console/`` (git-ignored) so a person can look at each page.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["ARTIFACTS", "CHROMIUM", "chromium_page", "screenshot"]

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "console"
HAVE_CHROMIUM = shutil.which(str(CHROMIUM)) is not None
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.asynccontextmanager
async def chromium_page(profile: Path) -> AsyncIterator[Any]:
    """A page in a fresh Chromium profile under ``profile``; console errors are collected on
    ``page.errors`` (a CSP violation, a script error)."""
    if not HAVE_CHROMIUM:
        pytest.skip("no /usr/bin/chromium (make test-deps installs it)")
    playwright_api = pytest.importorskip("playwright.async_api")
    async with playwright_api.async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            args=ARGS,
            headless=True,
            viewport={"width": 1280, "height": 860},
            locale="zh-CN",
        )
        try:
            page = context.pages[0] if context.pages else await context.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.errors = errors
            yield page
        finally:
            await context.close()


async def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    return path
