"""The course as a static website: the README as its landing page, every notebook a page.

Built with Sphinx, MyST-NB and the Sphinx Book Theme (the tools Jupyter Book 1 is made of)
from the committed notebooks, whose saved outputs are shown as they are: nothing is
re-executed, so the site takes seconds and shows the figures of the real runs. The landing
page is generated from ``README.md``'s student sections on every build, its instructors'
sections going on a page of their own (:mod:`course_utils.tools.book_pages`, which also holds
the repairs of the theme's HTML; links to notebooks become links to their pages), followed by
the lecture notebooks, the exercises (student versions), the worked solutions (a section an
instructor can leave out; their written answers in boxes rather than between marker lines) and
the measurements in ``docs/``. Under each notebook with saved
outputs, one line says what built them (its ``course.built_with`` record: the PyTorch and the
device of the run, its scale and its date). Each figure's ``alt`` text is the description in
its cell's metadata (:mod:`course_utils.tools.figures`), and each figure links to its full-size
image. A file of the course that a page names as code (``exercises/E10.1-x.ipynb``) is a link
to its page, and a display equation that MyST would show inline is reported
(:mod:`course_utils.tools.book_markdown`). The stylesheet, script and icon that make the pages
read at a phone's width as at a laptop's are in :mod:`course_utils.tools.book_assets`.

Command line (what ``python3 course.py book`` runs, once the ``book`` extra is installed)::

    python -m course_utils.tools.book                  # writes _build/book/html
    python -m course_utils.tools.book --no-solutions   # the same site without the worked solutions
    python -m course_utils.tools.book --out DIR

The site is built in a temporary folder next to ``--out`` and moved into place only when
Sphinx succeeds, so a failed build leaves the previous site (or none) and no half-written one.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from course_utils.files import COURSE_FOLDER
from course_utils.tools.book_assets import FAVICON, write_assets
from course_utils.tools.book_markdown import display_math_in_paragraphs, link_course_files
from course_utils.tools.book_pages import INSTRUCTORS_PAGE, repair_site, split_readme
from course_utils.tools.execute import built_with, describe_build
from course_utils.tools.solutions import split_cell

__all__ = [
    "BOOK_PACKAGES",
    "NO_DESCRIPTION",
    "SECTIONS",
    "BookError",
    "Section",
    "answers_as_boxes",
    "build_book",
    "landing_page",
    "missing_packages",
]

DEFAULT_OUT = Path("_build") / "book" / "html"

#: What the site needs (import names); pyproject.toml's ``book`` extra installs them.
BOOK_PACKAGES = ("sphinx", "myst_nb", "sphinx_book_theme", "sphinx-mathjax-offline")


@dataclass(frozen=True)
class Section:
    """One part of the site: a folder of the course and its caption in the sidebar."""

    folder: str
    caption: str
    pattern: str = "*.ipynb"
    for_instructors: bool = False


SECTIONS = (
    Section("notebooks", "Lecture notebooks"),
    Section("exercises", "Exercises (student versions)"),
    Section("solutions", "Worked solutions (for instructors)", for_instructors=True),
    Section("docs", "Measurements", pattern="*.md"),
)

#: The ``alt`` of a figure whose cell has no description (:mod:`course_utils.tools.figures`).
NO_DESCRIPTION = "A figure of this page; its text description is not written yet."

#: A Markdown link or image: ``[text](target)``, ``![alt](target)``.
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


class BookError(RuntimeError):
    """The site could not be built; the message says why and what to do."""


def missing_packages() -> list[str]:
    """The packages of the ``book`` extra that this Python cannot import."""
    return [name for name in BOOK_PACKAGES if importlib.util.find_spec(name) is None]


def landing_page(readme: str, pages: set[str], toctrees: str = "") -> str:
    """The README as the site's landing page.

    Links to a page of the site (``notebooks/01_x.ipynb``, ``docs/results.md#a-heading``) are
    kept: MyST turns them into links to those pages. Relative links to anything else (a file
    the site does not have, such as the solutions when they are left out) keep their text and
    lose the link, so that the site has no broken link. ``toctrees`` (the sidebar's sections)
    is appended.
    """

    def rewrite(match: re.Match[str]) -> str:
        bang, text, target = match.groups()
        if bang or target.startswith("#") or re.match(r"[a-z][a-z0-9+.-]*:", target):
            return match.group(0)  # images, anchors on this page, http(s)/mailto
        if target.split("#", 1)[0] in pages:
            return match.group(0)
        return text

    return LINK.sub(rewrite, readme).rstrip("\n") + "\n" + toctrees


def _toctree(caption: str, documents: list[str]) -> str:
    entries = "\n".join(documents)
    return f"\n```{{toctree}}\n:caption: {caption}\n:hidden:\n\n{entries}\n```\n"


CONF_PY = '''\
# Written by course_utils.tools.book for one build; edit course_utils/book.py instead.
project = {title!r}
author = "the course's authors"
# githubpages: a .nojekyll file; sphinx-mathjax-offline: MathJax 3 copied into _static, so
# equations are typeset with no network (the default loads MathJax from a CDN)
extensions = ["myst_nb", "sphinx.ext.githubpages", "sphinx-mathjax-offline"]
html_theme = "sphinx_book_theme"
html_title = {title!r}
html_static_path = ["_static"]
# course_utils/tools/book_assets.py: tables, equations, figures and links at every width
html_css_files = ["course.css"]
html_js_files = ["course.js"]
html_favicon = "_static/{favicon}"
html_sourcelink_suffix = ""  # "download .ipynb" gives the notebook itself
html_theme_options = {{
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
}}
# the theme follows the reader's system setting ("auto"); with no default mode named, its
# script logs "Got invalid theme mode" on a reader's first visit
html_context = {{"default_mode": "auto"}}
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
# The committed outputs are shown as they are: no notebook runs for the site.
nb_execution_mode = "off"
nb_merge_streams = True
# A figure's text alternative is its cell's description, metadata mystnb.image.alt (see
# course_utils/tools/figures.py); a figure without one says so instead of its file name.
nb_render_image_options = {{"alt": {no_alt!r}}}
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
# a notebook's first heading is its page title; later level-1 headings are not an error
suppress_warnings = ["myst.header"]
'''


def _stage(course: Path, src: Path, *, solutions: bool) -> list[str]:
    """Copy what the site shows into ``src`` and write its configuration; return the pages."""
    readme = (course / "README.md").read_text(encoding="utf-8")
    title_match = re.search(r"^# (.+)$", readme, re.MULTILINE)
    title = title_match.group(1).strip() if title_match else "The course"
    shown = [(section, sorted((course / section.folder).glob(section.pattern)))
             for section in SECTIONS if solutions or not section.for_instructors]
    pages = [INSTRUCTORS_PAGE, *(f"{s.folder}/{p.name}" for s, files in shown for p in files)]
    toctrees = ""
    for section, files in shown:
        if not files:
            continue
        (src / section.folder).mkdir(parents=True)
        for path in files:
            name = f"{section.folder}/{path.name}"
            if path.suffix == ".ipynb":
                _copy_notebook(path, src / name, set(pages), boxes=section.for_instructors)
            else:
                text = path.read_text(encoding="utf-8")
                _warn_inline_display_math(name, text)
                (src / name).write_text(link_course_files(text, name, set(pages)),
                                        encoding="utf-8")
        toctrees += _toctree(section.caption, [f"{section.folder}/{p.stem}" for p in files])
    toctrees += _toctree("For instructors", [INSTRUCTORS_PAGE.removesuffix(".md")])
    if not any(p.endswith(".ipynb") for p in pages):
        raise BookError(f"no notebooks found in {course}: is this the course folder?")
    landing, instructors = split_readme(readme)
    landing = link_course_files(landing, "index.md", set(pages))
    instructors = link_course_files(instructors, INSTRUCTORS_PAGE, set(pages))
    (src / "index.md").write_text(landing_page(landing, set(pages), toctrees), encoding="utf-8")
    (src / INSTRUCTORS_PAGE).write_text(landing_page(instructors, set(pages)), encoding="utf-8")
    write_assets(src / "_static")
    (src / "conf.py").write_text(
        CONF_PY.format(title=title, no_alt=NO_DESCRIPTION, favicon=FAVICON), encoding="utf-8")
    return pages


def _warn_inline_display_math(name: str, markdown: str, cell: int | None = None) -> None:
    """Say on stderr where a display equation of ``name`` would be shown inline
    (:func:`~course_utils.tools.book_markdown.display_math_in_paragraphs`)."""
    where = name if cell is None else f"{name}, Markdown cell {cell}"
    for problem in display_math_in_paragraphs(markdown):
        print(f"warning: {where}, {problem}", file=sys.stderr)


def answers_as_boxes(markdown: str) -> str:
    """A worked solution's Markdown with each written answer in a box titled "Worked answer".

    In Markdown cells the exercise markers (``### BEGIN SOLUTION``) would be headings on the
    page; the box shows the same region (:func:`course_utils.tools.solutions.regions`) as what
    it is.
    """
    lines: list[str] = []
    for piece in split_cell(markdown):
        if isinstance(piece, str):
            lines.append(piece)
        else:
            lines += ["````{admonition} Worked answer", ":class: tip", "", *piece.lines, "````"]
    return "\n".join(lines) + ("\n" if markdown.endswith("\n") else "")


def _copy_notebook(path: Path, dest: Path, pages: set[str], *, boxes: bool) -> None:
    """Copy a notebook for the site: names of the site's pages as links to them, a worked
    solution's written answers as boxes, and under a notebook with saved outputs, the line that
    says what built them."""
    notebook = nbformat.read(path, as_version=4)
    name = f"{dest.parent.name}/{dest.name}"
    for number, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type == "markdown":
            _warn_inline_display_math(name, cell.source, number)
            cell.source = link_course_files(cell.source, name, pages)
            if boxes:
                cell.source = answers_as_boxes(cell.source)
    _explorer_offline(notebook, name)
    record = built_with(notebook)
    if record:
        notebook.cells.append(nbformat.v4.new_markdown_cell(
            f"---\n\n*{describe_build(record)}*"))
    nbformat.write(notebook, dest)


#: What the site shows where a notebook's saved output is a live widget (notebook 5's explorer).
WIDGET_NOTE = (
    "```{{note}}\nThe interactive explorer this cell opens runs in the lab, not on this page: it "
    "needs a running Python kernel. Open `{name}` in JupyterLab and run the cell to type your "
    "own sentence and step through its decoding.\n```"
)


def _explorer_offline(notebook: nbformat.NotebookNode, name: str) -> None:
    """Replace each live widget's output by a note saying where it runs, and drop the widget
    state: the page then loads no widget JavaScript (which would come from public CDNs and
    show nothing offline)."""
    widget = "application/vnd.jupyter.widget-view+json"
    notebook.metadata.pop("widgets", None)
    index = 0
    while index < len(notebook.cells):
        cell = notebook.cells[index]
        index += 1
        if cell.cell_type != "code":
            continue
        kept = [o for o in cell.get("outputs", []) if widget not in o.get("data", {})]
        if len(kept) != len(cell.get("outputs", [])):
            cell.outputs = kept
            notebook.cells.insert(index, nbformat.v4.new_markdown_cell(
                WIDGET_NOTE.format(name=name)))
            index += 1


def build_book(
    out: str | Path | None = None,
    *,
    course: str | Path = COURSE_FOLDER,
    solutions: bool = True,
    quiet: bool = True,
) -> Path:
    """Build the course site into ``out`` (default ``_build/book/html`` in the course folder).

    Returns ``out``. Raises :class:`BookError` (with Sphinx's own messages) when the book
    extra is missing or Sphinx fails; ``out`` is then left as it was.
    """
    course = Path(course).resolve()
    out = (course / DEFAULT_OUT) if out is None else Path(out).resolve()
    missing = missing_packages()
    if missing:
        raise BookError(
            f"the course site needs {', '.join(missing)}, which {sys.executable} cannot import; "
            "install the book extra: python3 course.py book (installs it), or "
            f"pip install -e '{course}[book]'"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}-building-", dir=out.parent))
    try:
        src, html = work / "src", work / "html"
        _stage(course, src, solutions=solutions)
        command = [sys.executable, "-m", "sphinx", "-b", "html", "--keep-going",
                   "-d", str(work / "doctrees"), str(src), str(html)]
        if quiet:
            command.append("-q")  # warnings and errors only
        # no bytecode or caches from the build land in the course folder
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        result = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
        messages = (result.stdout + result.stderr).replace(str(src) + os.sep, "")
        if messages.strip():
            print(messages.rstrip(), file=sys.stderr)
        if result.returncode != 0 or not (html / "index.html").exists():
            raise BookError(f"Sphinx failed (exit status {result.returncode}); its messages are "
                            f"above. {out} was left as it was.")
        repair_site(html)
        _replace_folder(html, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _replace_folder(new: Path, target: Path) -> None:
    """Put the folder ``new`` at ``target``, replacing what was there, in two renames."""
    old = target.with_name(f".{target.name}-old-{os.getpid()}")
    if target.exists():
        target.rename(old)
    try:
        new.rename(target)
    except BaseException:
        if old.exists():
            old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="course.py book",
        description="Build the course website from the committed notebooks (no re-execution).",
    )
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where the site goes (default: {DEFAULT_OUT} in the course folder)")
    parser.add_argument("--no-solutions", action="store_true",
                        help="leave the worked solutions out of the site")
    parser.add_argument("--course", type=Path, default=COURSE_FOLDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        out = build_book(args.out, course=args.course, solutions=not args.no_solutions)
    except BookError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    course = Path(args.course).resolve()
    shown = out.relative_to(course) if out.is_relative_to(course) else out
    index = shown / "index.html"
    what = "without" if args.no_solutions else "with"
    print(f"Built the course site ({what} the worked solutions) in {shown}/ "
          f"in {time.perf_counter() - start:.0f} s.\n"
          f"Open {index} in a browser, or serve it: python3 -m http.server -d {shown} 8000 "
          "and open http://localhost:8000")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
