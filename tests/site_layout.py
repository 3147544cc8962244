"""The course site as a reader sees it in a browser, at a laptop's width and a phone's: what
``tests/test_book.py`` checks on every page (the checks themselves are ``site_layout.js``).

A page is served over HTTP from the site's folder, as a web server would (a page opened from
disk asks for no ``favicon.ico`` and shares no origin to compare requests with), in a window of
the given width (a phone's width emulated, as a phone lays the page out), with the reader's
first visit's state (nothing in ``localStorage``).
"""

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from browser import typeset_equations

CHECKS = (Path(__file__).parent / "site_layout.js").read_text(encoding="utf-8")

#: A phone's width and a laptop's, in CSS px.
PHONE, LAPTOP = 390, 1280


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass


@contextmanager
def served(folder: Path) -> Iterator[str]:
    """Serve ``folder`` on a free local port; yields its address, ``http://127.0.0.1:PORT/``."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def set_width(driver, width: int, height: int = 900) -> None:
    """Lay pages out at ``width`` CSS px, as a phone does below 600 px (a headless window is
    at least 500 px wide: a phone's width is emulated)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})


def open_page(driver, url: str) -> None:
    """Open ``url`` as on a reader's first visit and wait until its equations are typeset and
    the site's script has marked the boxes that scroll (``course.js``)."""
    parts = urlsplit(url)
    driver.execute_cdp_cmd("Storage.clearDataForOrigin", {
        "origin": f"{parts.scheme}://{parts.netloc}", "storageTypes": "local_storage"})
    driver.get_log("browser")  # what the previous page logged is not this page's
    driver.get(url)
    typeset_equations(driver)
    wait_for_layout(driver)


def wait_for_layout(driver, timeout: float = 5) -> None:
    """Wait (up to ``timeout`` s) until the site's script has marked the boxes that scroll
    (``<html data-course-layout="done">``, set by ``course.js`` once equations are typeset)."""
    driver.set_script_timeout(timeout + 5)
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1], limit = arguments[0] * 1000;"
        "const start = Date.now();"
        "(function wait() {"
        "  if (document.documentElement.dataset.courseLayout || Date.now() - start > limit)"
        "    done(); else setTimeout(wait, 50); })();", timeout)


def layout_problems(driver, width: int) -> list[str]:
    """What the reader cannot read on the open page at ``width`` (see ``site_layout.js``)."""
    return driver.execute_script(CHECKS, width)


def console_problems(driver) -> list[str]:
    """The errors the open page logged in the browser's console (a 404, a script's error)."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] == "SEVERE"]


def outside_requests(driver, origin: str) -> list[str]:
    """The resources the open page asked of another host than ``origin``."""
    urls = driver.execute_script(
        "return performance.getEntriesByType('resource').map(entry => entry.name)")
    return [url for url in urls if not url.startswith((origin, "data:", "blob:"))]
