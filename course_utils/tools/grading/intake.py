"""What comes in: the notebooks of a submissions folder (:func:`collect`), and one notebook
read as forgivingly as Jupyter opens it (:func:`read_notebook`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Intake", "collect", "read_notebook"]

_EXERCISE_TITLE = re.compile(r"#\s*Exercise\s+(E\d+\.\d+)")


@dataclass(frozen=True)
class Intake:
    """What a submissions folder holds: one notebook per student, and what was left aside."""

    submissions: dict[str, Path]  # student id -> notebook
    ignored: list[tuple[Path, str]]  # file or folder -> why it is not graded
    folder: Path  # the folder they were found in


def collect(folder: Path) -> Intake:
    """Every ``*.ipynb`` in ``folder`` (student id: the file name) or in a per-student
    subfolder one level down, as course platforms export them (student id: the folder name).
    Other files are listed as ignored; two notebooks for one student id are an error."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no submissions folder at {folder}")
    found: dict[str, list[Path]] = {}
    ignored: list[tuple[Path, str]] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            notebooks = sorted(p for p in entry.iterdir()
                               if p.is_file() and p.suffix == ".ipynb"
                               and not p.name.startswith("."))
            for other in sorted(entry.iterdir()):
                if other not in notebooks and not other.name.startswith("."):
                    ignored.append((other, "not a notebook (*.ipynb)"))
            if len(notebooks) > 1:
                ignored.append((entry, f"{len(notebooks)} notebooks in one student's folder "
                                       f"({', '.join(p.name for p in notebooks)}): keep one"))
            elif notebooks:
                found.setdefault(entry.name, []).append(notebooks[0])
            elif not any(entry.iterdir()):
                ignored.append((entry, "empty folder"))
        elif entry.suffix == ".ipynb":
            found.setdefault(entry.stem, []).append(entry)
        else:
            ignored.append((entry, "not a notebook (*.ipynb)"))
    clashes = {s: paths for s, paths in found.items() if len(paths) > 1}
    if clashes:
        listed = "; ".join(f"{s}: {', '.join(str(p.relative_to(folder)) for p in paths)}"
                           for s, paths in clashes.items())
        raise ValueError(f"two notebooks give the same student id ({listed}); keep one")
    if not found:
        raise ValueError(f"no notebooks (*.ipynb) in {folder}, nor in its subfolders"
                         + (f" ({len(ignored)} other entries ignored)" if ignored else ""))
    return Intake({s: paths[0] for s, paths in sorted(found.items())}, ignored, folder)


def read_notebook(raw: bytes, exercise_id: str) -> tuple[Any, list[str]]:
    """The notebook in ``raw``, read as forgivingly as Jupyter opens it, and notes on what was
    repaired; raises ``ValueError`` when it is not a notebook at all."""
    import nbformat

    notes: list[str] = []
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # a UTF-8 byte-order mark, as some editors write: Jupyter ignores it
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"not JSON: {type(error).__name__}: {error}") from None
    if not isinstance(data, dict):
        raise ValueError("JSON, but not a notebook (no list of cells)")
    if _is_version_3(data):
        # Jupyter before 2015 (and some tools still) save nbformat 3: cells inside worksheets;
        # nbformat upgrades it as Jupyter does when it opens one
        notes.append("note: the notebook was saved in nbformat 3 (an older Jupyter); it was "
                     "upgraded to nbformat 4 to be graded, as Jupyter upgrades it on opening")
    elif not isinstance(data.get("cells"), list):
        raise ValueError("JSON, but not a notebook (no list of cells)")
    try:
        notebook = nbformat.reads(json.dumps(data), as_version=4)
    except Exception as error:  # nbformat's own errors on a malformed or unknown version
        raise ValueError(f"a notebook nbformat cannot read: {type(error).__name__}: "
                         f"{str(error)[:200]}") from None
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError as error:
        _fill_in(notebook)
        notes.append(f"warning: the file does not follow the notebook format "
                     f"({str(error).splitlines()[0][:120]}); graded as Jupyter would open it")
    warning = _title_warning(notebook, exercise_id)
    if warning:
        notes.append(warning)
    return notebook, notes


def _is_version_3(data: dict) -> bool:
    """nbformat 3: ``"nbformat": 3`` and the cells in a list of worksheets."""
    worksheets = data.get("worksheets")
    return data.get("nbformat") == 3 and isinstance(worksheets, list) and all(
        isinstance(sheet, dict) and isinstance(sheet.get("cells", []), list)
        for sheet in worksheets)


def _fill_in(notebook: Any) -> None:
    """What Jupyter fills in when it opens a notebook whose cells lack required fields."""
    for cell in notebook.cells:
        cell.setdefault("metadata", {})
        cell.setdefault("source", "")
        if cell.get("cell_type") == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)


def _title_warning(notebook: Any, exercise_id: str) -> str | None:
    """A warning when the notebook's first Markdown cell names another exercise."""
    for cell in notebook.cells:
        if cell.get("cell_type") == "markdown":
            match = _EXERCISE_TITLE.search(str(cell.get("source", "")))
            if match and match.group(1) != exercise_id:
                return (f"warning: this looks like a submission for {match.group(1)}, "
                        f"graded here as {exercise_id}")
            break
    return None
