"""The course website, built once per test session for every test module that reads it.

``test_book`` checks what the site shows; ``test_accessibility`` audits every page of it in a
browser. Both read the same build of the committed notebooks (about 10 s: no notebook runs).
"""

from pathlib import Path

from helpers import ROOT

from course_utils.tools import book

#: Pages Sphinx writes beside the course's own: the index of terms and the search page.
SPHINX_PAGES = ("genindex.html", "search.html")

_built: dict[str, Path] = {}


def built_site(tmp_path_factory) -> Path:
    """The site of the committed course, with the worked solutions; built on first use."""
    if "site" not in _built:
        _built["site"] = book.build_book(tmp_path_factory.mktemp("book") / "html", course=ROOT)
    return _built["site"]


def site_pages(course: Path = ROOT) -> list[str]:
    """Every page the site has (paths relative to its root): the landing and instructors' pages, a page per
    notebook, exercise, solution and ``docs/`` file, and Sphinx's own pages."""
    pages = ["index.html", "instructors.html", *SPHINX_PAGES]
    for section in book.SECTIONS:
        pages += [f"{section.folder}/{path.stem}.html"
                  for path in sorted((course / section.folder).glob(section.pattern))]
    return pages
