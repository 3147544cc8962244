"""Every page of the course site passes an automated accessibility audit (issue 28): axe-core,
run in headless Chromium on each page, in the light and in the dark theme, finds no violation
of impact *serious* or *critical*.

axe-core comes bundled with ``axe-selenium-python`` (a test dependency). Skipped where
Chromium and its driver are missing (like the other browser tests) or where the ``book`` extra
is not installed.
"""

from pathlib import Path

import pytest
from browser import headless_chromium, needs_chromium, typeset_equations
from course_site import built_site, site_pages

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

#: Every ``<input type>`` of HTML.
INPUT_TYPES = ["text", "search", "url", "tel", "email", "password", "date", "month", "week",
               "time", "datetime-local", "number", "range", "color", "checkbox", "radio", "file"]
#: A known false positive of the axe-core that axe-selenium-python 2.1 bundles (3.1.1), not a
#: rule switched off: its check "autocomplete-appropriate" accepts ``autocomplete="off"`` only
#: on ``type="text"`` inputs, so the theme's search box (``type="search" autocomplete="off"``)
#: fails "autocomplete-valid". HTML allows "on" and "off" on any input, and axe-core fixed the
#: check in 3.1.2 (dequelabs/axe-core issue #1109, pull request #1121). The option below tells
#: the old check what the fixed one knows; every other autocomplete value is still checked.
AXE_CONFIGURATION = {
    "checks": [{"id": "autocomplete-appropriate",
                "options": {"on": INPUT_TYPES, "off": INPUT_TYPES}}],
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return built_site(tmp_path_factory)  # the build test_book reads


@pytest.fixture(scope="module")
def browser():
    pytest.importorskip("axe_selenium_python",
                        reason="axe-selenium-python is not installed (pip install -e .)")
    driver = headless_chromium(1280, 900)
    try:
        yield driver
    finally:
        driver.quit()


def audit(driver, page: Path, theme: str) -> list[dict]:
    """axe-core's violations on ``page`` shown in ``theme``, once its equations are typeset."""
    from axe_selenium_python import Axe

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
    Axe(driver).inject()
    driver.set_script_timeout(120)
    results = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.configure(arguments[0]);"
        "axe.run().then(done, error => done({error: String(error)}));",
        AXE_CONFIGURATION)
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
@pytest.mark.parametrize("page", PAGES)
def test_no_serious_accessibility_violation_in_a_browser(site, browser, page):
    problems = [f"{page} ({theme} theme): {rule} ({impact}) at {selector}: {asks}"
                for theme in THEMES
                for rule, impact, selector, asks in serious(audit(browser, site / page, theme))]
    assert not problems, (f"{len(problems)} serious or critical accessibility violation(s) "
                          f"on {page}, expected 0:\n" + "\n".join(problems))


@needs_chromium
def test_the_audit_finds_a_serious_violation_in_a_browser(browser, tmp_path):
    """The audit is live: a page with an unlabelled image link and unreadable grey text fails."""
    page = tmp_path / "bad.html"
    page.write_text('<!doctype html><html lang="en"><head><title>bad</title></head><body>'
                    '<main><h1>A bad page</h1><a href="#x"><img src="x.png"></a>'
                    '<p style="color:#ddd;background:#fff">grey on white</p></main></body></html>')
    rules = {rule for rule, *_ in serious(audit(browser, page, "light"))}
    assert {"image-alt", "color-contrast"} <= rules, rules
