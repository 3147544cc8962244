"""Shared by the browser tests: headless Chromium driven by Selenium, or a clean skip.

The tests use the distribution's Chromium and its driver (Debian: ``apt-get install chromium
chromium-driver``); Selenium is never left to download a browser or a driver of its own.
"""

import os
import shutil
import socket
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_and_driver() -> tuple[str, str] | None:
    """Paths of a Chromium (or Chrome) and of ``chromedriver``, or None where either is missing.

    ``COURSE_CHROMIUM`` and ``COURSE_CHROMEDRIVER`` name them where they are not on PATH.
    """
    browser = os.environ.get("COURSE_CHROMIUM") or next(
        (found for name in BROWSERS if (found := shutil.which(name))), None)
    driver = os.environ.get("COURSE_CHROMEDRIVER") or shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


needs_chromium = pytest.mark.skipif(
    chromium_and_driver() is None,
    reason="no Chromium and chromedriver here (Debian: apt-get install chromium chromium-driver)",
)


def headless_chromium(width: int = 1280, height: int = 900):
    """A headless Chromium session (Selenium WebDriver); quit it when done."""
    selenium = pytest.importorskip("selenium", reason="selenium is not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = chromium_and_driver()
    if found is None:
        pytest.skip("no Chromium and chromedriver here")
    browser, driver = found
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", f"--window-size={width},{height}",
                     "--hide-scrollbars", "--no-first-run", "--no-default-browser-check"):
        options.add_argument(argument)
    assert selenium.__version__
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def screenshot_folder(tmp_path: Path) -> Path:
    """Where screenshots go: ``COURSE_SCREENSHOTS`` to keep them, else the test's tmp folder."""
    folder = Path(os.environ.get("COURSE_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def typeset_equations(driver, timeout: float = 30) -> int:
    """Wait until the page's MathJax has typeset its equations; return how many it typeset
    (-1: MathJax is not loaded, -2: typesetting failed)."""
    driver.set_script_timeout(timeout)
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "if (!window.MathJax || !MathJax.startup) { done(-1); return; }"
        "MathJax.startup.promise.then("
        "  () => done(document.querySelectorAll('mjx-container').length),"
        "  () => done(-2));")
