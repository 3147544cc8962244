"""The course's files: where they are (:data:`COURSE_FOLDER`), and writing them so that a
failure never leaves a half-written one behind."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["COURSE_FOLDER", "atomic_path", "current_umask", "update_section",
           "write_text_atomically"]

#: The folder that holds the ``course_utils`` package: a checkout of the course (with its
#: ``notebooks/``, ``solutions/`` and ``exercises/``), or a student's handout. Declared once;
#: the data, the checkpoints' display paths and every tool read it from here.
COURSE_FOLDER = Path(__file__).resolve().parents[1]


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it replaces ``path`` in one step.

    If the body raises, the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp makes the file private; use the umask
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def current_umask() -> int:
    """The process's file-creation mask (reading it means setting it, so it is set back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomically(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def update_section(path: str | Path, name: str, text: str, title: str = "") -> None:
    """Replace the section ``name`` of a Markdown report (or append it), atomically.

    Sections are delimited by ``<!-- begin NAME -->`` and ``<!-- end NAME -->``, so that several
    scripts can each keep their own part of one file up to date.
    """
    path = Path(path)
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{text.strip()}\n{end}"
    current = path.read_text(encoding="utf-8") if path.exists() else (
        f"# {title}\n\n" if title else "")
    if begin in current and end in current:
        head, rest = current.split(begin, 1)
        new = head + block + rest.split(end, 1)[1]
    else:
        new = current.rstrip("\n") + ("\n\n" if current.strip() else "") + block + "\n"
    write_text_atomically(path, new)
