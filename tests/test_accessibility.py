"""Every page of the course site passes an automated accessibility audit (issue 28): axe-core,
run in headless Chromium on each page, in the light and in the dark theme, at a laptop's width
(1280 px) and at a phone's (390 px, where tables scroll in their own boxes), finds no violation
of impact *serious* or *critical*.

The audit runs the current axe-core from npm (``npm install axe-core``; .ci/run installs it):
``COURSE_AXE_CORE`` names its ``axe.min.js``, else it is looked for in ``node_modules`` here and
in npm's global folder. The axe-core 3.1.1 that ``axe-selenium-python`` bundles misses rules
the site once failed (``label-content-name-mismatch``, ``empty-table-header``), so where no
current axe-core is found the audit is skipped and says why. Skipped too where Chromium and its
driver are missing (like the other browser tests) or where the ``book`` extra is not installed.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from browser import headless_chromium, needs_chromium, typeset_equations
from course_site import built_site, site_pages
from site_layout import LAPTOP, PHONE, set_width, wait_for_layout

from course_utils.tools import book

pytestmark = pytest.mark.skipif(
    bool(book.missing_packages()),
    reason="the book extra is not installed: pip install -e '.[book]'",
)

PAGES = site_pages()
#: Violations of these impacts fail a page; "minor" and "moderate" ones are reported by axe
#: but do not fail the audit (issue 28 asks for no serious or critical one).
FAILING_IMPACTS = ("serious", "critical")
#: The site's two colour themes (the Sphinx Book Theme follows the reader's system setting).
THEMES = ("light", "dark")
#: The widths the audit reads each page at (CSS px).
WIDTHS = (LAPTOP, PHONE)


def current_axe_core() -> Path | None:
    """The ``axe.min.js`` of an npm-installed axe-core, or None where there is none."""
    named = os.environ.get("COURSE_AXE_CORE")
    if named:
        return Path(named)
    places = [Path(__file__).resolve().parents[1] / "node_modules"]
    if shutil.which("npm"):
        found = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip():
            places.append(Path(found.stdout.strip()))
    return next((p / "axe-core" / "axe.min.js" for p in places
                 if (p / "axe-core" / "axe.min.js").is_file()), None)


AXE_CORE = current_axe_core()
needs_axe_core = pytest.mark.skipif(
    AXE_CORE is None,
    reason="accessibility audit skipped: no current axe-core here (the bundled 3.1.1 of "
           "axe-selenium-python misses rules the site must pass); npm install axe-core, "
           "or set COURSE_AXE_CORE to its axe.min.js",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return built_site(tmp_path_factory)  # the build test_book reads


@pytest.fixture(scope="module")
def browser():
    driver = headless_chromium(1280, 900)
    try:
        yield driver
    finally:
        driver.quit()


def audit(driver, page: Path, theme: str, width: int = LAPTOP) -> list[dict]:
    """axe-core's violations on ``page`` shown in ``theme`` at ``width``, once its equations are
    typeset and the site's script has marked the boxes that scroll."""
    set_width(driver, width)
    # the reader's system setting, which the theme follows ("auto" mode)
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": theme}]})
    driver.get(page.as_uri())
    shown = driver.execute_script("return document.documentElement.dataset.theme")
    assert shown in (None, theme), f"the page shows the {shown} theme; expected {theme}"
    # the theme fades colours in (0.15 s transitions): audit the settled colours, not a frame
    # half-way through a fade
    driver.execute_script(
        "const style = document.createElement('style');"
        "style.textContent = '*, *::before, *::after { transition: none !important;"
        " animation: none !important; }';"
        "document.head.appendChild(style);")
    typeset_equations(driver)  # MathJax rewrites the equations: audit what the reader gets
    wait_for_layout(driver)  # course.js has made the boxes that scroll focusable
    assert AXE_CORE is not None
    driver.execute_script(AXE_CORE.read_text(encoding="utf-8"))
    driver.set_script_timeout(120)
    results = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run().then(done, error => done({error: String(error)}));")
    assert "error" not in results, f"axe-core failed on {page.name}: {results['error']}"
    return results["violations"]


def serious(violations: list[dict]) -> list[tuple[str, str, str, str]]:
    """``(rule, impact, node selector, what the rule asks)`` for each element of each serious or
    critical violation."""
    return [(violation["id"], violation["impact"], " ".join(node["target"]), violation["help"])
            for violation in violations if violation["impact"] in FAILING_IMPACTS
            for node in violation["nodes"]]


def test_the_audit_covers_every_page_of_the_site(site):
    on_disk = sorted(str(p.relative_to(site)) for p in site.rglob("*.html")
                     if "_static" not in p.parts)
    assert on_disk == sorted(PAGES), "the site's pages and the audited pages differ"


@needs_chromium
@needs_axe_core
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES)
def test_no_serious_accessibility_violation_in_a_browser(site, browser, page, width):
    problems = [f"{page} ({theme} theme, {width} px): {rule} ({impact}) at {selector}: {asks}"
                for theme in THEMES
                for rule, impact, selector, asks in serious(
                    audit(browser, site / page, theme, width))]
    assert not problems, (f"{len(problems)} serious or critical accessibility violation(s) "
                          f"on {page}, expected 0:\n" + "\n".join(problems))


@needs_chromium
@needs_axe_core
def test_the_audit_finds_a_serious_violation_in_a_browser(browser, tmp_path):
    """The audit is live: a page with an unlabelled image link and unreadable grey text fails."""
    page = tmp_path / "bad.html"
    page.write_text('<!doctype html><html lang="en"><head><title>bad</title></head><body>'
                    '<main><h1>A bad page</h1><a href="#x"><img src="x.png"></a>'
                    '<p style="color:#ddd;background:#fff">grey on white</p>'
                    '<button aria-label="Search">Search Ctrl+K</button>'
                    '<table><tr><th></th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>'
                    '</main></body></html>')
    violations = audit(browser, page, "light")
    rules = {rule for rule, *_ in serious(violations)}
    # label-content-name-mismatch and empty-table-header (minor) are rules the old bundled
    # axe-core did not know: the audit is the current one
    assert {"image-alt", "color-contrast", "label-content-name-mismatch"} <= rules, rules
    assert "empty-table-header" in {violation["id"] for violation in violations}
