"""Everything a student can read, as code and as prose: where the answer search looks.

- **the package** (:data:`LIBRARY`): every module, the lesson's library, its checks and its
  tools, whole, except the grader's hidden modules, which no handout carries
  (:data:`course_utils.tools.handout.HIDDEN`);
- **the notebooks** (:data:`LECTURE`, :data:`EXERCISE`): every lecture notebook and student
  exercise, their code cells, the code their Markdown shows (fenced blocks and inline
  ``code``), and, as prose, all their cells with the outputs saved in them;
- **the README** (:data:`README`): its code blocks and inline code, and its prose;
- **the course site** (:data:`SITE`): the Markdown pages it is built from beside the README
  (``docs/*.md``), and, where a site has been built (``_build/book/html``), its HTML pages: the
  text of each ``<pre>`` and ``<code>`` and the whole page. The worked solutions' pages are left
  out: an instructor's site shows them (:mod:`course_utils.tools.book`), a student's does not.

Each piece is a :class:`Piece`: where it is, what kind of place, and its text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import NamedTuple

import nbformat

from course_utils.tools.handout import HIDDEN

__all__ = ["EXERCISE", "LECTURE", "LIBRARY", "README", "SITE", "SITE_HTML", "Piece",
           "code_pieces", "markdown_code", "prose_pieces"]

LIBRARY, LECTURE, EXERCISE, README, SITE = "library", "lecture", "exercise", "readme", "site"
#: Where ``python -m course_utils.tools.book`` writes the site.
SITE_HTML = Path("_build") / "book" / "html"
#: Folders and pages of a built site that are not the course's pages, or not a student's.
_NOT_PAGES = frozenset({"solutions", "_static", "_sources", "_images", "genindex.html",
                        "search.html", "py-modindex.html"})

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
    site = course / SITE_HTML
    if not site.is_dir():
        return
    for path in sorted(site.rglob("*.html")):
        relative = path.relative_to(site)
        if _NOT_PAGES & {relative.parts[0], relative.name}:
            continue
        page = _Page()
        page.feed(path.read_text(encoding="utf-8", errors="replace"))
        yield str(path.relative_to(course)), page


def _notebooks(course: Path) -> Iterator[tuple[str, str, nbformat.NotebookNode]]:
    for folder, kind in (("notebooks", LECTURE), ("exercises", EXERCISE)):
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
    for path in sorted((course / "course_utils").rglob("*.py")):
        if not path.match(HIDDEN):
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
    """The text a student reads in the lecture notebooks (every cell and its saved outputs),
    the README and the site's pages (the Markdown's prose, its code left out): where no worked
    written answer may stand."""
    for path in sorted((course / "notebooks").glob("*.ipynb")):
        data = json.loads(path.read_text(encoding="utf-8"))
        text = []
        for cell in data["cells"]:
            text.append("".join(cell["source"]))
            for output in cell.get("outputs", []):
                text.append("".join(output.get("text", "")))
        yield Piece(str(path.relative_to(course)), LECTURE, "\n".join(text))
    for name, kind, markdown in _markdown_files(course):  # its prose: code has stray $ signs
        yield Piece(name, kind, _INLINE.sub(" ", _FENCE.sub(" ", markdown)))
    for name, page in _site_pages(course):
        yield Piece(name, SITE, " ".join(page.text))
