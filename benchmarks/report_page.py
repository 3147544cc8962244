"""What every benchmark does with its report: print it, and keep it in its own section of a
Markdown page (``docs/benchmarks.md`` by default; :func:`course_utils.files.update_section`), so
that several scripts share one page, each rewriting only its own part."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from course_utils.files import update_section


def publish(path: Path, section: str, text: str, title: str = "Benchmarks") -> int:
    """Print ``text``, write it as the section ``section`` of ``path`` (a new page starts with
    ``title``), and say where; the script's exit status, 0."""
    print(text)
    update_section(path, section, text, title=title)
    print(f"wrote {path}")
    return 0


def measured_with(script: str, quick: bool = False) -> str:
    """How a report starts: "Measured <today> with `python benchmarks/<script> [--quick]`"."""
    command = f"python benchmarks/{Path(script).name}" + (" --quick" if quick else "")
    return f"Measured {dt.date.today().isoformat()} with `{command}`"
