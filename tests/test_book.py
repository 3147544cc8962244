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
import site_layout
from browser import headless_chromium, needs_chromium, screenshot_folder, typeset_equations
from course_site import built_site, site_pages
from helpers import ROOT

from course_utils.tools import book, book_markdown, book_pages
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


MARKDOWN_PAGES = [*NOTEBOOKS, *sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]


@pytest.mark.parametrize("path", MARKDOWN_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_display_equation_begins_a_paragraph_of_its_own(path):
    """A ``$$...$$`` in the middle of a paragraph is shown inline, between stray $ signs."""
    if path.suffix == ".ipynb":
        texts = [(f"Markdown cell {n}", c.source) for n, c in enumerate(
            nbformat.read(path, as_version=4).cells, start=1) if c.cell_type == "markdown"]
    else:
        texts = [("", path.read_text(encoding="utf-8"))]
    problems = [f"{where}: {problem}" for where, text in texts
                for problem in book_markdown.display_math_in_paragraphs(text)]
    assert not problems, "\n".join(problems)


def test_display_equations_in_the_middle_of_a_paragraph_are_found():
    find = book_markdown.display_math_in_paragraphs
    assert find("The state.\n$$c_i = a, \\qquad s_i = b$$\n\nNext.") == [
        "line 2: the display equation $$c_i = a, \\qquad s_i = b... is in the middle of a "
        "paragraph; MyST shows it inline, with stray $ signs: put it on lines of its own, with "
        "a blank line before and after"]
    assert find("See $$x$$ here.") and find("$$x$$ and text") and find("| a | $$x$$ |")
    for fine in ("Text.\n\n$$x$$\n\nMore.", "# Title\n$$x$$", "$$\nx\n$$ (eq-1)\n",
                 "```python\ny = 1\n$$x$$\n```", "Code `$$x$$` is code.",
                 "````{admonition} Worked answer\n:class: tip\n\n$$x$$\n````"):
        assert find(fine) == [], fine


def test_file_names_written_as_code_link_to_their_pages(site):
    link = book_markdown.link_course_files
    pages = {"exercises/E10.1-a.ipynb", "docs/results.md"}
    assert link("Do `exercises/E10.1-a.ipynb` (see `docs/results.md`).", "notebooks/01.ipynb",
                pages) == ("Do [`exercises/E10.1-a.ipynb`](../exercises/E10.1-a.ipynb) (see "
                           "[`docs/results.md`](../docs/results.md)).")
    for kept in ("`solutions/E10.1-a.ipynb`", "[`docs/results.md`](x)", "## `docs/results.md`",
                 "```\n`docs/results.md`\n```"):
        assert link(kept, "notebooks/01.ipynb", pages) == kept
    html = page_of(site, ROOT / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb")
    assert re.search(r'href="\.\./exercises/E10\.1-attention-by-hand\.html"><span[^>]*><code',
                     html.read_text(encoding="utf-8")), "notebook 1 does not link exercise E10.1"


def test_every_page_has_an_icon_and_a_default_theme_mode(site):
    """No 404 for favicon.ico, and the theme's script never reads an empty mode."""
    from course_utils.tools.book_assets import FAVICON

    assert (site / "_static" / FAVICON).is_file()
    for page in site_pages():
        html = (site / page).read_text(encoding="utf-8")
        assert re.search(r'<link rel="icon" href="[^"]*_static/favicon\.svg"', html), page
        assert 'localStorage.getItem("mode") || "auto"' in html, page


def test_figures_link_to_their_full_size_image(site):
    for notebook in NOTEBOOKS:
        html = page_of(site, notebook).read_text(encoding="utf-8")
        images = re.findall(r'<img [^>]*src="([^"]*_images/[^"]+)"', html)
        linked = re.findall(r'<a class="course-figure" href="([^"]+)"><img [^>]*src="\1"', html)
        assert len(linked) == len(images), f"{notebook.name}: a figure links to no full size"


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


#: Pages screenshotted at a laptop's and a phone's width: the landing page, notebooks 1, 3, 4,
#: 5 (its explorer's note) and 6, an exercise and the results.
SCREENSHOT_PAGES = ("index.html", "instructors.html",
                    "notebooks/01_bottleneck_and_attention_by_hand.html",
                    "notebooks/03_reversal_task.html",
                    "notebooks/05_reading_attention_heatmaps.html",
                    "notebooks/06_additive_vs_dot_product.html", "docs/results.html",
                    *sorted(f"notebooks/{p.stem}.html" for p in (ROOT / "notebooks").glob("04_*")),
                    *sorted(f"exercises/{p.stem}.html"
                            for p in (ROOT / "exercises").glob("E10.1*")))


def reading_problems(driver, url: str, width: int) -> list[str]:
    """What a reader cannot read on the page at ``url`` at ``width`` (tests/site_layout.js),
    what it logged as an error, and what it asked of another host."""
    site_layout.open_page(driver, url)
    origin = url.split("/", 3)[:3]
    return (site_layout.layout_problems(driver, width) + site_layout.console_problems(driver)
            + [f"asked another host for {u}"
               for u in site_layout.outside_requests(driver, "/".join(origin))])


@needs_chromium
@pytest.mark.parametrize("width", [site_layout.LAPTOP, site_layout.PHONE])
def test_every_page_reads_whole_in_a_browser(site, tmp_path, width):
    """Every page of the site, served as a web server would, at a laptop's and a phone's width:
    no page scrolls sideways; no equation, link, table header or figure is cut; no stray $;
    every table shows its column names, in columns (one wider than the page scrolls in its own
    box, and says so); no word of a table breaks inside itself; every figure links to its
    full-size image; no console error (a missing favicon.ico, "Got invalid theme mode") and no
    request to another host. Screenshots: COURSE_SCREENSHOTS=DIR keeps them."""
    driver = headless_chromium(1280, 900)
    folder = screenshot_folder(tmp_path)
    problems = []
    try:
        site_layout.set_width(driver, width)
        with site_layout.served(site) as base:
            for page in site_pages():
                problems += [f"{page} at {width} px: {problem}"
                             for problem in reading_problems(driver, base + page, width)]
                if page in SCREENSHOT_PAGES:
                    driver.save_screenshot(str(folder / f"site-{Path(page).stem}-{width}.png"))
        note = (site / "notebooks/05_reading_attention_heatmaps.html").read_text()
        assert "cdn" not in note.lower() and "runs in the lab" in note
    finally:
        driver.quit()
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


#: A page with one of each thing a reader cannot read (what the old site did, and worse).
UNREADABLE = """<!doctype html><html lang="en"><head><title>unreadable</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head><body>
<article>
<p>Before $<span class="math">x</span>$ after.</p>
<p>A sum: <span class="math" style="display: inline-flex; max-width: 100%; overflow: hidden">
  <mjx-container style="display: inline-block; width: 600px; flex-shrink: 0">0 + 1 + 2
  </mjx-container></span></p>
<div style="width: 120px; overflow: hidden"><a href="#x" style="white-space: nowrap">
  Notebook 4: Multi30k English to German</a></div>
<table><thead style="position: absolute; width: 1px; height: 1px; overflow: hidden;
  clip: rect(0 0 0 0)"><tr><th>model</th><th>BLEU</th></tr></thead>
<tbody style="display: block"><tr style="display: block"><td style="display: block">vanilla</td>
<td style="display: block">19.8</td></tr></tbody></table>
<table style="width: 90px"><thead><tr><th>variable</th></tr></thead><tbody><tr>
<td style="overflow-wrap: anywhere">COURSE_QUICK_AND_MORE=1</td></tr></tbody></table>
<div style="overflow-x: auto"><table style="width: 900px"><thead><tr><th>a</th><th>b</th></tr>
</thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table></div>
<img src="_images/figure.png" alt="a figure shown small and not linked" width="50" height="50">
<div style="width: 600px">a line wider than a phone</div>
</article></body></html>"""


@needs_chromium
def test_the_browser_checks_find_what_a_reader_cannot_read(tmp_path):
    """The checks are live: a seeded page with a stray $, a cut equation and link, a headerless
    phone table, a word broken inside itself, a wide table with no word that it scrolls, an
    unlinked figure and a line wider than the window fails each of them at a phone's width."""
    (tmp_path / "bad.html").write_text(UNREADABLE, encoding="utf-8")
    driver = headless_chromium(1280, 900)
    try:
        site_layout.set_width(driver, site_layout.PHONE)
        with site_layout.served(tmp_path) as base:
            site_layout.open_page(driver, base + "bad.html")
            found = "\n".join(site_layout.layout_problems(driver, site_layout.PHONE))
    finally:
        driver.quit()
    for expected in ['a stray "$"', 'mjx-container "0 + 1 + 2" is cut by',
                     'a "Notebook 4: Multi30k English to German" is cut by',
                     "does not show its column names (model, BLEU)",
                     "cells are stacked, not in columns", 'breaks the word "QUICK_"',
                     "does not say that it scrolls", '"a figure shown small and not linked" '
                     "is not a link", "it scrolls sideways"]:
        assert expected in found, f"{expected!r} not found in:\n{found}"


@needs_chromium
def test_a_seeded_inline_display_equation_and_a_headerless_phone_table_fail(tmp_path, capsys):
    """Through the whole build: a notebook with a display equation in the middle of a paragraph
    makes the build warn and the page show a stray $; the same page with the old phone
    stylesheet (each row a block, the header hidden) shows a table without its column names."""
    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    (course / "README.md").write_text("# A seeded course\n\nOne notebook.\n")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# Seeded\n\nThe energy is\n$$e = v^\\top \\tanh(W_s s + W_h h)$$\nfor each $j$.\n\n"
        "| model | BLEU |\n|---|---|\n| vanilla | 19.8 |\n| attention | 28.5 |\n")])
    nbformat.write(notebook, course / "notebooks" / "01_seeded.ipynb")
    site = book.build_book(tmp_path / "html", course=course)
    assert "notebooks/01_seeded.ipynb, Markdown cell 1, line 4: the display equation" in (
        capsys.readouterr().err)
    old_phone_css = ("@media (max-width: 600px) { article table, article tbody, article tr, "
                     "article td { display: block; } article thead { position: absolute; "
                     "width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); } }")
    driver = headless_chromium(1280, 900)
    try:
        site_layout.set_width(driver, site_layout.PHONE)
        with site_layout.served(site) as base:
            seeded = reading_problems(driver, base + "notebooks/01_seeded.html",
                                      site_layout.PHONE)
            driver.execute_script("const style = document.createElement('style');"
                                  "style.textContent = arguments[0];"
                                  "document.head.appendChild(style);", old_phone_css)
            headerless = site_layout.layout_problems(driver, site_layout.PHONE)
    finally:
        driver.quit()
    assert any('a stray "$"' in p for p in seeded), seeded
    assert not any("column names" in p for p in seeded), seeded
    assert any("does not show its column names (model, BLEU)" in p for p in headerless), \
        headerless
