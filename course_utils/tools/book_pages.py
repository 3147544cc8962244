"""What the course site adds to Sphinx's pages: the split of the README into a landing page
and an instructors' page, and the repairs of the theme's HTML that a reader and an
accessibility audit ask for (:mod:`course_utils.tools.book` uses them; the stylesheet and the
script are in :mod:`course_utils.tools.book_assets`).

- **Pages.** The README's sections for instructors and maintainers (hand-out, grading, sandbox,
  scale, nbgrader, Slurm, settings, the conda route, the site itself) go on ``instructors.md``;
  the rest (what the day is, the quickstart, the day plan, the table of contents, how students
  work) is the landing page. Both are generated from the README on every build, so nothing is
  written twice; a link to a heading on the other page is pointed there.
- **Figures** (:func:`repair_html`): each figure of a notebook's outputs is a link to its
  full-size image, with a line under it that the stylesheet shows on a phone ("Tap the figure
  to open it full size"), where the figure is shown at under half its size.
- **File names in tables** (:func:`repair_html`) may break after a ``/`` or a ``_``, never
  inside a word.
- **Accessibility** (:func:`repair_html`): the theme's search button is named by what it shows
  ("Search Ctrl+K"), a collapsed cell's toggle by its visible text, and an empty header cell of a
  table (a DataFrame's corner) is a data cell.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["FIGURE_HINT", "INSTRUCTORS_PAGE", "INSTRUCTOR_SECTIONS", "repair_html", "repair_site",
           "split_readme"]

#: README sections (level-2 headings, by their first words) that go on the instructors' page.
INSTRUCTOR_SECTIONS = ("For instructors", "If your course runs nbgrader", "Settings",
                       "The conda route", "Read it online")

INSTRUCTORS_PAGE = "instructors.md"


def _slug(heading: str) -> str:
    """The anchor MyST gives a heading (``myst_heading_anchors``): lower case, punctuation
    dropped, spaces as hyphens."""
    text = re.sub(r"[`*_\[\]()]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def split_readme(readme: str) -> tuple[str, str]:
    """The README as ``(landing page, instructors' page)``, both Markdown.

    Level-2 sections whose heading starts with one of :data:`INSTRUCTOR_SECTIONS` (with their
    subsections) move to the instructors' page; a link to an anchor on the other page is
    rewritten to point there. Fenced code blocks are never read as headings.
    """
    blocks: list[tuple[bool, list[str]]] = [(False, [])]
    fence = False
    for line in readme.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if not fence and line.startswith("## "):
            blocks.append((line[3:].startswith(INSTRUCTOR_SECTIONS), []))
        blocks[-1][1].append(line)
    student = [line for moved, lines in blocks if not moved for line in lines]
    teacher = [line for moved, lines in blocks if moved for line in lines]

    def anchors(lines: list[str]) -> set[str]:
        return {_slug(line.lstrip("#")) for line in lines if re.match(r"#{1,6} ", line)}

    on_student, on_teacher = anchors(student), anchors(teacher)

    def point(lines: list[str], others: set[str], here: set[str], page: str) -> str:
        def fix(match: re.Match[str]) -> str:
            anchor = match.group(2)
            if anchor in others and anchor not in here:
                return f"]({page}#{anchor})"
            return match.group(0)
        return re.sub(r"\]\((#)([^)\s]+)\)", fix, "\n".join(lines))

    title = next((line for line in student if line.startswith("# ")), "# The course")
    pointer = (f"\n```{{note}}\nInstructors: handing out, collecting and grading the exercises, "
               f"the sandbox, nbgrader, Slurm and the settings are on the "
               f"[instructors' page]({INSTRUCTORS_PAGE}).\n```\n")
    landing = point(student, on_teacher, on_student, INSTRUCTORS_PAGE)
    landing = landing.replace(title, title + "\n" + pointer, 1)
    instructors = ("# For instructors and maintainers\n\n"
                   "The part of the README for whoever runs the course; students start on "
                   "the [landing page](index.md).\n\n"
                   + point(teacher, on_student, on_teacher, "index.md"))
    # the instructors' page starts at level 1 so that its sections are level 2 below it
    return landing, instructors


_SEARCH_BUTTON = re.compile(r'(<button class="[^"]*search-button-field[^"]*"[^>]*?) '
                            r'aria-label="Search"')
_SUMMARY = re.compile(r'(<summary[^>]*?) aria-label="Toggle hidden content"')
_EMPTY_HEADER = re.compile(r'<th( class="head")?>\s*(<p>\s*</p>)?\s*</th>')

#: An image of the site's ``_images`` (a notebook's figure): ``<img ... src="../_images/x.png" />``
#: (attribute values may hold ">").
_FIGURE = re.compile(r'<img\b(?:[^>"]|"[^"]*")*?\ssrc="([^"]*_images/[^"]+)"(?:[^>"]|"[^"]*")*>')

#: The line under a figure that the stylesheet shows on a phone.
FIGURE_HINT = "Tap the figure to open it full size"


def _link_figures(html: str) -> str:
    """Each figure not already in a link made a link to its full-size image."""
    parts, end = [], 0
    for match in _FIGURE.finditer(html):
        if html.rfind("<a ", 0, match.start()) > html.rfind("</a>", 0, match.start()):
            continue  # already a link (Sphinx links a scaled image to itself)
        parts += [html[end:match.start()],
                  f'<a class="course-figure" href="{match.group(1)}">{match.group(0)}'
                  f'<span class="course-figure-hint">{FIGURE_HINT}</span></a>']
        end = match.end()
    return "".join(parts) + html[end:]


_TABLE = re.compile(r"<table\b.*?</table>", flags=re.DOTALL)
_CODE_WORD = re.compile(r'(<span class="pre">)([^<]*)(</span>)')


def _paths_break_after_slashes(html: str) -> str:
    """In tables, a file name written as code may break after each ``/`` and ``_``
    (``<wbr>``): a table of notebook names then fits a laptop's column without breaking a name
    inside a word; other code (``COURSE_QUICK=1``) stays whole."""
    def code(match: re.Match[str]) -> str:
        start, text, end = match.groups()
        if not re.search(r"/|\.\w+$", text):
            return match.group(0)  # not a file name: COURSE_QUICK=1 stays whole
        return start + re.sub(r"([/_])(?=[^/_\s])", r"\1<wbr>", text) + end

    return _TABLE.sub(lambda table: _CODE_WORD.sub(code, table.group(0)), html)


def repair_html(html: str) -> str:
    """A page of the site with the theme's faults repaired and its figures linked to their
    full-size images (see the module)."""
    html = _SEARCH_BUTTON.sub(r"\1", html)  # named by its text, "Search Ctrl+K"
    html = _SUMMARY.sub(r"\1", html)  # named by its text, "Show code cell source"
    html = _link_figures(html)
    html = _paths_break_after_slashes(html)
    return _EMPTY_HEADER.sub(r"<td\1></td>", html)


def repair_site(html_dir: Path) -> None:
    """:func:`repair_html` on every page of a built site."""
    for page in html_dir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        repaired = repair_html(text)
        if repaired != text:
            page.write_text(repaired, encoding="utf-8")
