"""Everything a student can read, as code and as prose: where the answer search looks.

- **the package** (:data:`LIBRARY`): every module a handout ships, the lesson's library, its
  checks and its tools, whole (:func:`course_utils.tools.solutions.ships`: all but the grader's
  hidden answers), as code and as prose;
- **the notebooks** (:data:`LECTURE`, :data:`EXERCISE`): every lecture notebook and student
  exercise, their code cells, the code their Markdown shows (fenced blocks and inline
  ``code``), and, as prose, all their cells with the outputs saved in them;
- **the README** (:data:`README`): its code blocks and inline code, and its prose;
- **the course site** (:data:`SITE`): the Markdown pages it is built from beside the README
  (``docs/*.md``), and, where a site has been built, its HTML pages: the text of each ``<pre>``
  and ``<code>`` and the whole page. A handout's site (``site/``) is read whole; the course's own
  build (``_build/book/html``) without its worked solutions' pages, which an instructor's site
  shows (:mod:`course_utils.tools.book`) and a student's does not.

Pass the course's folder to read what its handout would give students, or a handout's folder to
read what it gives them.

Each piece is a :class:`Piece`: where it is, what kind of place, and its text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import NamedTuple

import nbformat

from course_utils.tools.solutions import EXERCISES, NOTEBOOKS, shipped_modules

__all__ = ["EXERCISE", "HANDOUT_SITE", "LECTURE", "LIBRARY", "README", "SITE", "SITE_HTML", "Piece",
           "code_pieces", "markdown_code", "prose_pieces"]

LIBRARY, LECTURE, EXERCISE, README, SITE = "library", "lecture", "exercise", "readme", "site"
#: Where ``python -m course_utils.tools.book`` writes the site.
SITE_HTML = Path("_build") / "book" / "html"
#: Where a handout's site is (``course-handout --site``).
HANDOUT_SITE = Path("site")
#: Folders and pages of a built site that are not the course's pages.
_NOT_PAGES = frozenset({"_static", "_sources", "_images", "genindex.html", "search.html",
                        "py-modindex.html"})
#: ... nor, in the course's own build, a student's.
_INSTRUCTORS_PAGES = frozenset({"solutions"})

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M)
_INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


class Piece(NamedTuple):
    """Text a student can read: ``where`` (a file, and a cell), its ``kind``, the ``text``."""

    where: str
    kind: str
    text: str


def markdown_code(markdown: str) -> list[str]:
    """The code a Markdown text shows: each fenced block, then each inline code span."""
    blocks = [match.group(2) for match in _FENCE.finditer(markdown)]
    return blocks + _INLINE.findall(_FENCE.sub(" ", markdown))


class _Page(HTMLParser):
    """A built page's code (each ``<pre>``, each ``<code>`` outside one) and its whole text,
    scripts and styles left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.code: list[str] = []
        self.text: list[str] = []
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("pre", "code", "script", "style"):
            if tag in ("pre", "code") and not {"pre", "code"} & set(self._open):
                self.code.append("")
            self._open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self._open:
            del self._open[len(self._open) - 1 - self._open[::-1].index(tag):]

    def handle_data(self, data: str) -> None:
        if {"script", "style"} & set(self._open):
            return
        self.text.append(data)
        if {"pre", "code"} & set(self._open):
            self.code[-1] += data


def _site_pages(course: Path) -> Iterator[tuple[str, _Page]]:
    for folder, left_out in ((SITE_HTML, _NOT_PAGES | _INSTRUCTORS_PAGES),
                             (HANDOUT_SITE, _NOT_PAGES)):
        yield from _pages(course, course / folder, left_out)


def _pages(course: Path, site: Path, left_out: frozenset[str]) -> Iterator[tuple[str, _Page]]:
    if not site.is_dir():
        return
    for path in sorted(site.rglob("*.html")):
        relative = path.relative_to(site)
        if left_out & {relative.parts[0], relative.name}:
            continue
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        yield str(path.relative_to(course)), page


def _notebooks(course: Path) -> Iterator[tuple[str, str, nbformat.NotebookNode]]:
    for folder, kind in ((NOTEBOOKS, LECTURE), (EXERCISES, EXERCISE)):
        for path in sorted((course / folder).glob("*.ipynb")):
            yield str(path.relative_to(course)), kind, nbformat.read(path, as_version=4)


def _markdown_files(course: Path) -> Iterator[tuple[str, str, str]]:
    """``(where, kind, text)`` of the README and the site's Markdown pages."""
    readme = course / "README.md"
    if readme.is_file():
        yield "README.md", README, readme.read_text(encoding="utf-8")
    for path in sorted((course / "docs").glob("*.md")):
        yield str(path.relative_to(course)), SITE, path.read_text(encoding="utf-8")


def code_pieces(course: Path) -> Iterator[Piece]:
    """Every piece of code a student can read (see the module's docstring)."""
    for path in shipped_modules(course):
        yield Piece(str(path.relative_to(course)), LIBRARY, path.read_text(encoding="utf-8"))
    for name, kind, notebook in _notebooks(course):
        for index, cell in enumerate(notebook.cells):
            where = f"{name}, cell {index}"
            if cell.cell_type == "code":
                yield Piece(where, kind, cell.source)
            else:  # code shown in Markdown
                yield from (Piece(where, kind, code) for code in markdown_code(cell.source))
    for name, kind, text in _markdown_files(course):
        yield from (Piece(name, kind, code) for code in markdown_code(text))
    for name, page in _site_pages(course):
        yield from (Piece(name, SITE, code) for code in page.code)


def prose_pieces(course: Path) -> Iterator[Piece]:
    """The text a student reads: the notebooks (every cell, and a lecture's saved outputs), the
    README and the site's pages (the Markdown's prose, its code left out), and the package's
    modules whole (their docstrings and messages): where no worked written answer may stand."""
    for name, kind, notebook in _notebooks(course):
        text = []
        for cell in notebook.cells:
            text.append(cell.source)
            for output in cell.get("outputs", []):
                text.append("".join(output.get("text", "")))
        yield Piece(name, kind, "\n".join(text))
    for name, kind, markdown in _markdown_files(course):  # its prose: code has stray $ signs
        yield Piece(name, kind, _INLINE.sub(" ", _FENCE.sub(" ", markdown)))
    for name, page in _site_pages(course):
        yield Piece(name, SITE, " ".join(page.text))
    for path in shipped_modules(course):
        yield Piece(str(path.relative_to(course)), LIBRARY, path.read_text(encoding="utf-8"))
