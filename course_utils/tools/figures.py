"""Text alternatives of the course's figures: what a screen reader says for each one.

A figure's description lives in the metadata of the code cell that draws it, under the key
MyST-NB (the course site, :mod:`course_utils.tools.book`) reads for the ``alt`` attribute of
the cell's image outputs::

    cell.metadata["mystnb"]["image"]["alt"] = "Line plot of ..."

so the site's ``<img alt="...">`` is that text, and the description travels with the notebook:
re-running it (``course-execute``, JupyterLab) keeps cell metadata. JupyterLab 4 itself shows
no ``alt`` for an image output: its image renderer reads only the output's ``width``,
``height``, ``unconfined`` and ``needs_background`` metadata and ignores the cell's, so there
the description is what the cell's metadata panel (the property inspector) shows. One
description serves every image output of the cell: a cell that draws two figures describes
both (or is split in two).

A description says what the figure shows, in at least :data:`MIN_WORDS` words: not a file
name, not matplotlib's ``<Figure size 640x480 with 1 Axes>``.

Command line::

    python -m course_utils.tools.figures notebooks/*.ipynb solutions/*.ipynb
    python -m course_utils.tools.figures --check notebooks/*.ipynb   # exit 1 if any lacks one
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

__all__ = ["ALT_KEYS", "MIN_WORDS", "Figure", "alt_problem", "drop_figure_alt", "figure_alt",
           "figures", "main", "set_figure_alt"]

#: Where a cell's description sits in its metadata: ``metadata["mystnb"]["image"]["alt"]``.
ALT_KEYS = ("mystnb", "image", "alt")
#: Output types that are figures.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
#: The fewest words a description may have.
MIN_WORDS = 8

_FILE_NAME = re.compile(r"\S+\.(png|jpe?g|svg|gif|pdf)\b|\b[0-9a-f]{32,}\b", re.IGNORECASE)
_MATPLOTLIB_REPR = re.compile(r"<(Figure|Axes)\b[^>]*>")


@dataclass(frozen=True)
class Figure:
    """A code cell with image outputs, and its description (None where it has none)."""

    notebook: Path
    cell: int  # index among the notebook's cells, as nbformat counts them
    images: int  # how many image outputs the cell has
    alt: str | None

    @property
    def problem(self) -> str | None:
        """What is wrong with the description, or None when it will do."""
        return alt_problem(self.alt)


def alt_problem(text: str | None) -> str | None:
    """Why ``text`` is no description of a figure (None when it is one)."""
    if text is None or not text.strip():
        return "no description"
    if _MATPLOTLIB_REPR.search(text):
        return f"matplotlib's placeholder, not a description: {text!r}"
    if _FILE_NAME.search(text):
        return f"a file name, not a description: {text!r}"
    words = len(text.split())
    if words < MIN_WORDS:
        return f"{words} words; a description needs at least {MIN_WORDS}: {text!r}"
    return None


def _images(cell: Any) -> int:
    return sum(1 for output in cell.get("outputs", [])
               if any(mime in output.get("data", {}) for mime in IMAGE_TYPES))


def figure_alt(cell: Any) -> str | None:
    """The description stored in a cell's metadata, or None."""
    value: Any = cell.get("metadata", {})
    for key in ALT_KEYS:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value if isinstance(value, str) else None


def set_figure_alt(cell: Any, text: str) -> None:
    """Store ``text`` as the description of the cell's figures (other image options stay).

    Raises ``ValueError`` when ``text`` is no description (see :func:`alt_problem`).
    """
    problem = alt_problem(text)
    if problem:
        raise ValueError(f"a figure's description must say what it shows in at least "
                         f"{MIN_WORDS} words; got {problem}")
    options = cell.setdefault("metadata", {}).setdefault(ALT_KEYS[0], {})
    options.setdefault(ALT_KEYS[1], {})[ALT_KEYS[2]] = text.strip()


def drop_figure_alt(cell: Any) -> None:
    """Remove the cell's description, and the metadata it leaves empty (other options stay)."""
    metadata = cell.get("metadata", {})
    options = metadata.get(ALT_KEYS[0], {})
    image = options.get(ALT_KEYS[1], {})
    image.pop(ALT_KEYS[2], None)
    if ALT_KEYS[1] in options and not image:
        del options[ALT_KEYS[1]]
    if ALT_KEYS[0] in metadata and not options:
        del metadata[ALT_KEYS[0]]


def figures(path: str | Path) -> list[Figure]:
    """Every code cell of the notebook at ``path`` that has image outputs, with its description."""
    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    return [Figure(path, index, count, figure_alt(cell))
            for index, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" and (count := _images(cell))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_utils.tools.figures",
        description="List every figure of the notebooks with its text description.")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 when a figure has no good description")
    args = parser.parse_args(argv)
    missing = 0
    for path in args.notebooks:
        for figure in figures(path):
            problem = figure.problem
            missing += problem is not None
            images = f" ({figure.images} images)" if figure.images > 1 else ""
            print(f"{path}, cell {figure.cell}{images}: "
                  + (f"MISSING ({problem})" if problem else repr(figure.alt)))
    print(f"{missing} figure cell(s) without a good description", file=sys.stderr)
    return 1 if args.check and missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
