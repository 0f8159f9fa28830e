"""A real headless Chromium (Debian's chromium + chromium-driver) driven by Selenium, for UI tests.

`make test` installs both packages when they are missing and it runs as root; elsewhere the
browser tests skip with the command that installs them, except under CI, where a missing
browser fails the run instead of hiding the tests.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def chromium():
    """A headless Chromium WebDriver; the caller quits it."""
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (binary and driver):
        message = "needs chromium and chromium-driver (apt-get install chromium chromium-driver, or make test as root)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--window-size=1400,900",
        f"--user-data-dir={tempfile.mkdtemp(prefix='toolkg-chromium-')}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def resources_loaded(browser) -> list[str]:
    """Every URL the page fetched (scripts, styles, XHR), to check that it stayed on its host."""
    return browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")


def screenshot(browser, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    browser.save_screenshot(str(path))
    return path
