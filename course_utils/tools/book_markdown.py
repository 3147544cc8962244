"""What the course site changes in the course's Markdown before Sphinx reads it, and what it
checks there (:mod:`course_utils.tools.book` calls both on every notebook and ``docs/`` page).

- **Names of the course's files become links.** A notebook says where to go next as the lab
  shows it, a file name in code (``exercises/E10.1-attention-by-hand.ipynb``); on the site the
  same name is a link to that file's page (:func:`link_course_files`). Names of files the site
  does not have (the solutions, when they are left out) stay as they are.
- **A display equation must begin a block.** MyST reads ``$$...$$`` as a display equation only
  where it starts a paragraph of its own (a blank line before it); in the middle of a paragraph
  it becomes inline math between two stray ``$`` signs, too wide for a phone
  (:func:`display_math_in_paragraphs` finds them; the build warns, the tests fail).

Fenced code is never read, except the fences of MyST directives whose body is Markdown
(```` ```{note} ````, ```` ````{admonition} ````).
"""

from __future__ import annotations

import posixpath
import re

__all__ = ["MARKDOWN_DIRECTIVES", "display_math_in_paragraphs", "link_course_files"]

#: MyST directives whose body is Markdown (read like the text around them).
MARKDOWN_DIRECTIVES = ("admonition", "attention", "caution", "danger", "dropdown", "error",
                       "hint", "important", "note", "seealso", "tip", "warning")

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(\S*)")
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
#: A file of the course named as code, not already the text of a link: ``notebooks/x.ipynb``.
_COURSE_FILE = re.compile(
    r"(?<!\[)`((?:notebooks|exercises|solutions|docs)/[\w.\-]+\.(?:ipynb|md))`(?!\]\()")


def _prose_lines(markdown: str) -> list[bool]:
    """For each line of ``markdown``: True where it is Markdown text, False for fenced code and
    for the fence lines themselves (of code and of directives alike)."""
    prose: list[bool] = []
    code: str | None = None  # the fence that opened the code block we are in
    directives: list[str] = []  # the fences of the Markdown directives we are in
    for line in markdown.split("\n"):
        fence = _FENCE.match(line)
        if code is not None:
            if fence and fence.group(1)[0] == code[0] and len(fence.group(1)) >= len(code) \
                    and not fence.group(2):
                code = None
            prose.append(False)
            continue
        if fence:
            marks, info = fence.groups()
            if not info and directives and marks[0] == directives[-1][0] \
                    and len(marks) >= len(directives[-1]):
                directives.pop()
            elif info.strip("{}") in MARKDOWN_DIRECTIVES and info.startswith("{"):
                directives.append(marks)
            else:
                code = marks
            prose.append(False)
            continue
        prose.append(True)
    return prose


def link_course_files(markdown: str, here: str, pages: set[str]) -> str:
    """``markdown`` (the text of the page ``here``, such as ``notebooks/01_x.ipynb``) with each
    name of a page of the site written as code made a link to that page.

    ``pages`` are the site's pages, as paths from the course folder (``exercises/E10.1-x.ipynb``,
    ``docs/results.md``); a name is read from the course folder, as the notebooks write them.
    Headings and fenced code are left alone; so is a name that is already a link's text.
    """
    folder = posixpath.dirname(here)

    def link(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in pages or name == here:
            return match.group(0)
        return f"[`{name}`]({posixpath.relpath(name, folder or '.')})"

    lines = markdown.split("\n")
    for index, is_prose in enumerate(_prose_lines(markdown)):
        if is_prose and not _HEADING.match(lines[index]):
            lines[index] = _COURSE_FILE.sub(link, lines[index])
    return "\n".join(lines)


def display_math_in_paragraphs(markdown: str) -> list[str]:
    """The display equations (``$$...$$``) of ``markdown`` that MyST would show inline: each one
    that does not begin a block of its own, or has text after its closing ``$$`` on that line.
    One message per equation, naming its line and its first characters; ``[]`` when all are
    displayed."""
    lines = markdown.split("\n")
    prose = _prose_lines(markdown)
    # code and fence lines blanked (a fence line ends a paragraph), inline code made spaces
    text = "\n".join(
        _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        if is_prose and not _HEADING.match(line) else ""
        for line, is_prose in zip(lines, prose, strict=True))
    problems = []
    for match in re.finditer(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$", text, flags=re.DOTALL):
        before = text[:match.start()]
        paragraph = re.split(r"\n[ \t]*\n", before)[-1] if before else ""
        after = text[match.end():].split("\n", 1)[0]
        if paragraph.strip() or not re.fullmatch(r"\s*(\([\w:.-]+\))?\s*", after):
            line = before.count("\n") + 1
            equation = " ".join(match.group(1).split())[:50]
            where = "in the middle of a paragraph" if paragraph.strip() else \
                "with text after its closing $$"
            problems.append(f"line {line}: the display equation $${equation}... is {where}; "
                            "MyST shows it inline, with stray $ signs: put it on lines of "
                            "its own, with a blank line before and after")
    return problems
