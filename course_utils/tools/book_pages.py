"""What the course site adds to Sphinx's pages: the split of the README into a landing page
and an instructors' page, the site's stylesheet, and the repairs of the theme's HTML that an
accessibility audit asks for (:mod:`course_utils.tools.book` uses them).

- **Pages.** The README's sections for instructors and maintainers (hand-out, grading, sandbox,
  scale, nbgrader, Slurm, settings, the conda route, the site itself) go on ``instructors.md``;
  the rest (what the day is, the quickstart, the day plan, the table of contents, how students
  work) is the landing page. Both are generated from the README on every build, so nothing is
  written twice; a link to a heading on the other page is pointed there.
- **Layout** (``course.css``): tables wrap their cells to the column and, on a phone, become one
  block per row; inline code breaks anywhere rather than widening the page; a display equation
  or a long output wider than the column scrolls in its own box, with a shadow at the edge that
  has more to show.
- **Accessibility** (:func:`repair_html`): the theme's search button is named by what it shows
  ("Search Ctrl+K"), a collapsed cell's toggle by its visible text, and an empty header cell of a
  table (a DataFrame's corner) is a data cell.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["COURSE_CSS", "INSTRUCTORS_PAGE", "INSTRUCTOR_SECTIONS", "repair_html", "repair_site",
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


COURSE_CSS = """\
/* Written by course_utils.tools.book_pages: the course site's layout fixes. */
/* Tables: cells wrap within the column; long file names and code break. */
.bd-article table { width: 100%; table-layout: auto; }
.bd-article table td, .bd-article table th { white-space: normal; overflow-wrap: anywhere; }
.bd-article table td code, .bd-article table th code { white-space: normal; }
/* Inline code breaks anywhere rather than widening the page. */
.bd-article :not(pre) > code, .bd-article :not(pre) > code span.pre {
  white-space: normal; overflow-wrap: anywhere;
}
.bd-article p, .bd-article li { overflow-wrap: break-word; }
/* Something wider than the column (an equation, a long output) scrolls in its own box, with a
   shadow at the edge that has more to show (scroll shadows: local backgrounds cover them at
   the ends). */
.bd-article div.math, .bd-article .cell_output pre, .bd-article .output pre {
  --cover: var(--pst-color-background);
  --shade: rgba(0, 0, 0, .3);
  overflow-x: auto; max-width: 100%;
  background:
    linear-gradient(to right, var(--cover), var(--cover)) left / 2em 100% no-repeat local,
    linear-gradient(to left, var(--cover), var(--cover)) right / 2em 100% no-repeat local,
    linear-gradient(to right, var(--shade), transparent) left / 1em 100% no-repeat scroll,
    linear-gradient(to left, var(--shade), transparent) right / 1em 100% no-repeat scroll;
}
.bd-article .cell_output pre { --cover: var(--pst-color-surface); }
html[data-theme="dark"] .bd-article div.math { --shade: rgba(255, 255, 255, .35); }
/* the theme lays the equation out in a flex row (reversed, its number first): a wide one
   overflowed to the left, out of reach of the scroll bar: a plain row, the number last */
.bd-article div.math { flex-direction: row; justify-content: safe center; }
.bd-article div.math > .eqno { order: 1; }
.bd-article div.math mjx-container[display="true"] {
  overflow: visible !important; min-width: min-content;
}
/* A phone: a table becomes one block per row, its header cells hidden but still read. */
@media (max-width: 600px) {
  .bd-article table, .bd-article table tbody, .bd-article table tr,
  .bd-article table td { display: block; width: 100%; }
  .bd-article table thead { position: absolute; width: 1px; height: 1px; overflow: hidden;
                            clip: rect(0 0 0 0); white-space: nowrap; }
  .bd-article table tr { border-top: 1px solid var(--pst-color-border); padding: .4em 0; }
  .bd-article table td { border: none; padding: .1em .5em; }
  .bd-article table td:first-child { font-weight: 600; }
  .pst-scrollable-table-container { overflow-x: visible; }
}
"""

_SEARCH_BUTTON = re.compile(r'(<button class="[^"]*search-button-field[^"]*"[^>]*?) '
                            r'aria-label="Search"')
_SUMMARY = re.compile(r'(<summary[^>]*?) aria-label="Toggle hidden content"')
_EMPTY_HEADER = re.compile(r'<th( class="head")?>\s*(<p>\s*</p>)?\s*</th>')


def repair_html(html: str) -> str:
    """A page of the site with the theme's accessibility faults repaired (see the module)."""
    html = _SEARCH_BUTTON.sub(r"\1", html)  # named by its text, "Search Ctrl+K"
    html = _SUMMARY.sub(r"\1", html)  # named by its text, "Show code cell source"
    return _EMPTY_HEADER.sub(r"<td\1></td>", html)


def repair_site(html_dir: Path) -> None:
    """:func:`repair_html` on every page of a built site."""
    for page in html_dir.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        repaired = repair_html(text)
        if repaired != text:
            page.write_text(repaired, encoding="utf-8")
