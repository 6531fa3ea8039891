"""Headless Debian Chromium driven by Playwright's sync API, shared by every browser test.

Playwright never downloads a browser here: it launches /usr/bin/chromium (override with
ATLAS_CHROMIUM). Screenshots go to test-artifacts/ named after the test and the step.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("ATLAS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP_VIEWPORT = {"width": 1366, "height": 900}
PHONE_VIEWPORT = {"width": 390, "height": 844}

Screenshot = Callable[..., Path]


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """One Chromium per test module.

    Playwright's sync API keeps an asyncio event loop running on the test thread while it is open:
    Django's async-safety guard would refuse the synchronous ORM calls of fixtures and live_server
    (nothing here runs ORM code concurrently, so the guard is lifted meanwhile), and code under test
    that calls asyncio.run() would fail. Module scope closes the loop before other modules run.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; install Debian's chromium package (make browser).")
    from playwright.sync_api import sync_playwright

    previous_guard = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                yield chromium
            finally:
                chromium.close()
    finally:
        if previous_guard is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous_guard


def _new_page(browser, viewport: dict[str, int]):
    context = browser.new_context(viewport=viewport, java_script_enabled=True)
    context.set_default_timeout(15_000)
    new_page = context.new_page()
    # Every page a browser test opens is also checked against its Content-Security-Policy: Chromium reports
    # each refused script, style or connection on the console.
    new_page.csp_violations = []
    new_page.on("console", lambda message: "Content Security Policy" in message.text
                and new_page.csp_violations.append(message.text))
    return context, new_page


@pytest.fixture
def page(browser) -> Iterator:
    """A desktop-sized page in a fresh browser context (no shared cookies between tests)."""
    context, new_page = _new_page(browser, DESKTOP_VIEWPORT)
    try:
        yield new_page
        assert new_page.csp_violations == []
    finally:
        context.close()


@pytest.fixture
def phone_page(browser) -> Iterator:
    context, new_page = _new_page(browser, PHONE_VIEWPORT)
    try:
        yield new_page
        assert new_page.csp_violations == []
    finally:
        context.close()


@pytest.fixture
def screenshot(request, artifacts_dir: Path) -> Screenshot:
    """Call screenshot(page, "step-name") to save test-artifacts/<test>--<step>.png; returns the path."""
    test_name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")

    def save(target_page, step: str, *, full_page: bool = True) -> Path:
        path = artifacts_dir / f"{test_name}--{re.sub(r'[^A-Za-z0-9_.-]+', '-', step)}.png"
        target_page.screenshot(path=str(path), full_page=full_page)
        return path

    return save
