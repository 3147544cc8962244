"""The course website (``python3 course.py book``) shows the whole course: every notebook has
a page, every figure of the committed outputs is on it, equations are math, links resolve.

The site is built once per module into a temporary folder (about 10 s: no notebook runs).
Skipped only where the ``book`` extra is not installed (``python3 course.py test`` installs it).
"""

import base64
import hashlib
import os
import re
import shutil
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from browser import headless_chromium, needs_chromium, screenshot_folder, typeset_equations
from course_site import built_site
from helpers import ROOT

from course_utils.tools import book, book_pages
from course_utils.tools.execute import built_with, describe_build

pytestmark = pytest.mark.skipif(
    bool(book.missing_packages()),
    reason="the book extra is not installed: pip install -e '.[book]' "
           "(python3 course.py test and python3 course.py book install it)",
)

SECTIONS = ("notebooks", "exercises", "solutions")
NOTEBOOKS = sorted(p for folder in SECTIONS for p in (ROOT / folder).glob("*.ipynb"))
IMAGE_TYPES = ("image/png", "image/jpeg")


def page_of(site: Path, notebook: Path) -> Path:
    return site / notebook.parent.name / f"{notebook.stem}.html"


class Page(HTMLParser):
    """What a test needs from an HTML page: links, images, element ids, math elements."""

    def __init__(self, path: Path):
        super().__init__()
        self.links: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.math = 0
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if "math" in (attrs.get("class") or "").split():
            self.math += 1
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag in ("img", "script") and attrs.get("src"):
            (self.images if tag == "img" else self.links).append(attrs["src"])
        if tag == "link" and attrs.get("href"):
            self.links.append(attrs["href"])


def local_target(page: Path, url: str) -> tuple[Path, str] | None:
    """The file (and fragment) a link of ``page`` points at, or None for an outside link."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith(("mailto:", "javascript:")):
        return None
    target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
    if target.is_dir():
        target = target / "index.html"
    return target, parts.fragment


def notebook_images(notebook: Path) -> Counter:
    """SHA-256 of every image a notebook's saved outputs show."""
    hashes: Counter = Counter()
    for cell in nbformat.read(notebook, as_version=4).cells:
        for output in cell.get("outputs", []):
            for mime in IMAGE_TYPES:
                if mime in output.get("data", {}):
                    hashes[hashlib.sha256(base64.b64decode(output.data[mime])).hexdigest()] += 1
    return hashes


def markdown_math(notebook: Path) -> int:
    """How many ``$...$`` and ``$$...$$`` equations a notebook's Markdown cells hold."""
    count = 0
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type != "markdown":
            continue
        text = re.sub(r"```.*?```|`[^`\n]*`", "", cell.source, flags=re.DOTALL)
        display = re.findall(r"\$\$.+?\$\$", text, flags=re.DOTALL)
        text = re.sub(r"\$\$.+?\$\$", "", text, flags=re.DOTALL)
        count += len(display) + len(re.findall(r"(?<!\\)\$[^$\n]+?(?<!\\)\$", text))
    return count


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return built_site(tmp_path_factory)  # one build for this module and test_accessibility


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_notebook_has_a_page_with_its_figures_and_equations(site, notebook):
    page_path = page_of(site, notebook)
    assert page_path.exists(), f"no page for {notebook.name}"
    page = Page(page_path)
    title = next(c.source for c in nbformat.read(notebook, as_version=4).cells
                 if c.cell_type == "markdown").lstrip("# ").splitlines()[0]
    assert title.split(":")[0].strip() in page_path.read_text(encoding="utf-8")
    shown = Counter()
    for src in page.images:
        target = local_target(page_path, src)
        assert target and target[0].exists(), f"{src} is missing from the site"
        shown[hashlib.sha256(target[0].read_bytes()).hexdigest()] += 1
    assert not notebook_images(notebook) - shown, "a figure of the notebook is not on its page"
    equations = markdown_math(notebook)
    assert page.math >= equations, f"{equations} equations in the notebook, {page.math} on its page"


def test_equations_are_math_markup_for_mathjax(site):
    html = page_of(site, ROOT / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb")
    text = html.read_text(encoding="utf-8")
    assert re.search(r'class="math[^"]*">\\\(', text), "inline math is not \\( ... \\)"
    assert re.search(r'class="math[^"]*">\s*\\\[', text) or "$$" in text, "no display math"
    # MathJax is part of the site, so equations are typeset with no network
    scripts = re.findall(r'<script[^>]*src="([^"]*mathjax[^"]*)"', text, flags=re.IGNORECASE)
    assert scripts, "no MathJax script on the page"
    for src in scripts:
        target = local_target(html, src)
        assert target and target[0].is_file(), f"MathJax is loaded from outside the site: {src}"
    assert not re.search(r'src="https?://[^"]*mathjax', text, flags=re.IGNORECASE)
    fonts = site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert any(fonts.glob("MathJax_Main-Regular.woff")), "MathJax's fonts are not in the site"


def test_all_figures_are_in_the_site_once_each(site):
    everything = sum((notebook_images(n) for n in NOTEBOOKS), Counter())
    on_disk = {p.stem for p in (site / "_images").iterdir()}
    assert set(everything) <= on_disk


def test_internal_links_and_anchors_resolve(site):
    pages = {p: Page(p) for p in site.rglob("*.html") if "_static" not in p.parts}
    broken = []
    for path, page in pages.items():
        for url in page.links + page.images:
            target = local_target(path, url)
            if target is None:
                continue
            file, fragment = target
            if not file.exists():
                broken.append(f"{path.relative_to(site)}: {url}")
            elif fragment and file.suffix == ".html" and file in pages \
                    and fragment not in pages[file].ids:
                broken.append(f"{path.relative_to(site)}: {url} (no such anchor)")
    assert not broken, "\n".join(broken[:20])


def test_landing_page_is_the_readme_with_links_to_the_notebook_pages(site):
    """The README's student sections are the landing page, its instructors' sections the
    instructors' page: every section is on one of them, none on both."""
    index = (site / "index.html").read_text(encoding="utf-8")
    instructors = (site / "instructors.html").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for heading in re.findall(r"^## (.+)$", readme, flags=re.MULTILINE):
        start = heading.split("`")[0].strip()[:20]
        page = instructors if heading.startswith(book_pages.INSTRUCTOR_SECTIONS) else index
        assert f">{start}" in page, heading
    for notebook in NOTEBOOKS:
        if notebook.parent.name != "solutions":
            assert f'href="{notebook.parent.name}/{notebook.stem}.html' in index, notebook.name
    assert ".ipynb\"" not in index  # no link to a raw notebook


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_page_with_outputs_says_what_built_them(site, notebook):
    text = re.sub(r"<[^>]+>", "", page_of(site, notebook).read_text(encoding="utf-8"))
    record = built_with(nbformat.read(notebook, as_version=4))
    if notebook.parent.name == "exercises":  # no outputs: nothing built them
        assert record is None and "Outputs from a" not in text
        return
    assert record, f"{notebook.name} does not record what built it: re-run it with course-execute"
    assert describe_build(record) in " ".join(text.split())
    assert f"PyTorch {record['torch']}" in text


def test_the_command_leaves_out_the_solutions_and_says_where_the_site_is(tmp_path, capsys):
    assert book.main(["--no-solutions", "--out", str(tmp_path / "html")]) == 0
    printed = capsys.readouterr().out
    assert f"{tmp_path / 'html'}/" in printed and "index.html" in printed
    assert "without the worked solutions" in printed
    site = tmp_path / "html"
    assert (site / "exercises" / "E10.1-attention-by-hand.html").exists()
    assert not (site / "solutions").exists()
    html = "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))
    assert not re.search(r'href="[^"]*solutions/', html), "a link to a solution page"
    assert "Worked solutions" not in html


def test_written_answers_of_the_solutions_are_boxes_not_marker_headings(site):
    for notebook in (ROOT / "solutions").glob("*.ipynb"):
        html = page_of(site, notebook).read_text(encoding="utf-8")
        assert not re.search(r"<h[1-6][^>]*>\s*(BEGIN|END) SOLUTION", html), notebook.name
        assert "Worked answer" in html, notebook.name
    assert book.answers_as_boxes("### BEGIN SOLUTION\nIt is $h_3$.\n### END SOLUTION") == (
        "````{admonition} Worked answer\n:class: tip\n\nIt is $h_3$.\n````")


def test_landing_page_unlinks_files_the_site_does_not_have():
    readme = ("See [one](notebooks/a.ipynb), [two](solutions/b.ipynb#x), [plan](#day-plan), "
              "[web](https://example.org) and ![pic](fig.png).")
    page = book.landing_page(readme, {"notebooks/a.ipynb"})
    assert "[one](notebooks/a.ipynb)" in page
    assert "two" in page and "solutions/b.ipynb" not in page
    assert "[plan](#day-plan)" in page and "[web](https://example.org)" in page
    assert "![pic](fig.png)" in page


def test_a_failed_build_leaves_the_previous_site_and_no_leftovers(tmp_path, monkeypatch):
    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    shutil.copy2(ROOT / "README.md", course / "README.md")
    shutil.copy2(NOTEBOOKS[0], course / "notebooks" / NOTEBOOKS[0].name)
    out = tmp_path / "site" / "html"
    out.mkdir(parents=True)
    (out / "index.html").write_text("the previous site")
    monkeypatch.setattr(book, "CONF_PY", "raise RuntimeError('a broken configuration')\n")
    with pytest.raises(book.BookError, match="Sphinx failed"):
        book.build_book(out, course=course)
    assert (out / "index.html").read_text() == "the previous site"
    assert os.listdir(out.parent) == ["html"]


def test_a_folder_without_notebooks_is_refused_with_a_message(tmp_path, capsys):
    course = tmp_path / "not-a-course"
    course.mkdir()
    (course / "README.md").write_text("# Nothing here\n")
    assert book.main(["--course", str(course), "--out", str(tmp_path / "x")]) == 1
    assert "no notebooks found" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@needs_chromium
def test_landing_page_and_notebook_3_in_a_browser(site, tmp_path):
    """Screenshots of the landing page and of notebook 3's page (COURSE_SCREENSHOTS=DIR keeps
    them); every figure on notebook 3's page loads."""
    import matplotlib.image

    driver = headless_chromium(1280, 900)
    folder = screenshot_folder(tmp_path)
    try:
        for name, page, title in [
            ("site-landing.png", "index.html", "Bahdanau"),
            ("site-notebook-3.png", "notebooks/03_reversal_task.html", "reversal task"),
        ]:
            driver.get((site / page).as_uri())
            assert title in driver.title
            assert driver.find_elements("css selector", "nav.bd-docs-nav a"), "no sidebar"
            broken = driver.execute_script(
                "return Array.from(document.images).filter(i => !i.complete "
                "|| i.naturalWidth === 0).map(i => i.src)")
            assert not broken, broken
            if name == "site-notebook-3.png":  # typeset by the site's own MathJax, offline
                typeset = typeset_equations(driver)
                assert typeset >= markdown_math(ROOT / "notebooks" / "03_reversal_task.ipynb"), (
                    f"MathJax typeset {typeset} equations (-1: not loaded, -2: failed)")
            driver.save_screenshot(str(folder / name))
            pixels = matplotlib.image.imread(folder / name)
            assert pixels.shape[1] == 1280 and pixels.std() > 0.05, "a blank page"
        figures = driver.execute_script("return document.querySelectorAll('.cell_output img')"
                                        ".length")
        assert figures == sum(notebook_images(ROOT / "notebooks" / "03_reversal_task.ipynb")
                              .values())
    finally:
        driver.quit()


#: Pages screenshotted at a laptop's and a phone's width: the landing page, notebooks 1, 3, 4
#: and 5 (its explorer's note) and an exercise.
LAYOUT_PAGES = ("index.html", "instructors.html",
                "notebooks/01_bottleneck_and_attention_by_hand.html",
                "notebooks/03_reversal_task.html", "notebooks/05_reading_attention_heatmaps.html",
                *sorted(f"notebooks/{p.stem}.html" for p in (ROOT / "notebooks").glob("04_*")),
                *sorted(f"exercises/{p.stem}.html" for p in (ROOT / "exercises").glob("E10.1*")))


@needs_chromium
@pytest.mark.parametrize("width", [1280, 390])
def test_pages_fit_the_window_in_a_browser(site, tmp_path, width):
    """At 390 px (a phone) no page scrolls sideways; at 1280 px no table is wider than its
    column (screenshots of both: COURSE_SCREENSHOTS=DIR keeps them)."""
    driver = headless_chromium(width, 900)
    folder = screenshot_folder(tmp_path)
    problems = []
    try:  # a headless window is at least 500 px wide: the phone's width is emulated
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})
        for page in LAYOUT_PAGES:
            driver.get((site / page).as_uri())
            typeset_equations(driver)
            document, window = driver.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth]")
            if document > window:
                problems.append(f"{page} at {width} px: the page is {document} px wide")
            tables = driver.execute_script(
                "return Array.from(document.querySelectorAll('article table')).filter("
                "t => t.scrollWidth > t.parentElement.clientWidth + 1).map("
                "t => t.innerText.slice(0, 40))")
            problems += [f"{page} at {width} px: a table overflows: {t!r}" for t in tables]
            driver.save_screenshot(str(folder / f"site-{Path(page).stem}-{width}.png"))
        note = (site / "notebooks/05_reading_attention_heatmaps.html").read_text()
        assert "cdn" not in note.lower() and "runs in the lab" in note
    finally:
        driver.quit()
    assert not problems, "\n".join(problems)
