"""Where a graded answer could be copied from: the worked code of every automatically graded part,
searched for in everything a handout ships (the library's source and its checks included), and
the worked written answers searched for in the lecture notebooks' text.

The handout's own leak search (:func:`course_utils.tools.handout.solution_text`) looks for lines
of the solutions verbatim and leaves out lines the library holds anyway. This search is stricter
and is what keeps each exercise the student's own work:

- **code** is compared as tokens with comments, blank lines and layout dropped, every string one
  token and every local name (a variable, a parameter, the function's own name) the same token;
  attribute names, keywords, builtins and the usual module aliases (``np.exp``, ``torch.bmm``,
  ``.sum``) are kept, because they are the answer. A part leaks when the whole of its worked code,
  or any three consecutive statements of it, appear in one shipped file or notebook cell;
- **written answers** leak when they share a run of :data:`SHINGLE_WORDS` words (case and
  punctuation ignored) with a lecture notebook's text.

Used by ``tests/test_answer_search.py``; ``python -m course_utils.tools.answer_search`` prints
what it finds (exit status 1 when it finds anything).
"""

from __future__ import annotations

import builtins
import io
import json
import keyword
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import nbformat

from course_utils.checks.framework import get_exercise
from course_utils.checks.registry import exercise_ids, notebook_of
from course_utils.tools.exercise_format import BEGIN, END

__all__ = ["SHINGLE_WORDS", "WINDOW", "Finding", "code_tokens", "exercise_ids", "main",
           "shipped_code", "solution_of", "worked_code", "worked_written", "find_code_leaks",
           "find_written_leaks"]

COURSE = Path(__file__).resolve().parents[2]
#: Consecutive statements of a part's worked code that may not appear together elsewhere.
WINDOW = 3
#: A window (or a whole part) shorter than this many tokens is too generic to count as a copy.
MIN_TOKENS = 16
#: Words in a row that a worked written answer may not share with a lecture notebook.
SHINGLE_WORDS = 10
#: Names kept as they are: the modules an answer calls into.
MODULES = frozenset({"np", "numpy", "torch", "nn", "F", "math", "plt", "sns", "functools"})
_KEEP = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | MODULES
_FALLBACK = re.compile(r"[A-Za-z_]\w*|\d[\d_.eE]*|\"[^\"\n]*\"|'[^'\n]*'|\S")


class Finding(NamedTuple):
    """A graded answer found where a student can read it."""

    exercise: str
    part: str  # the graded part, or the written question's cell
    where: str  # the file (and cell) that holds it, relative to the course
    text: str  # the first line of what was found


def solution_of(exercise_id: str, course: Path = COURSE) -> Path:
    """The worked solution of ``exercise_id``."""
    return notebook_of(exercise_id, course / "solutions")


def _regions(source: str) -> Iterator[str]:
    """The text between each pair of solution markers of a cell."""
    inside = False
    lines: list[str] = []
    for line in source.splitlines():
        if line.strip() in (BEGIN, END):
            if inside and lines:
                yield "\n".join(lines)
            inside, lines = line.strip() == BEGIN, []
        elif inside:
            lines.append(line)


def _lines(source: str) -> list[list[str]]:
    """The source's statements (logical lines), each as normalised tokens."""
    source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                       for line in source.splitlines()) + "\n"
    statements: list[list[str]] = [[]]
    previous = ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            kind, text = token.type, token.string
            if kind == tokenize.NEWLINE:
                statements.append([])
            elif kind == tokenize.NAME:
                statements[-1].append(text if text in _KEEP or previous == "." else "_")
            elif kind == tokenize.STRING or kind in _FSTRING:
                if not (statements[-1] and statements[-1][-1] == "S"):
                    statements[-1].append("S")
            elif kind in (tokenize.NUMBER, tokenize.OP):
                statements[-1].append(text)
            previous = text
    except (tokenize.TokenError, IndentationError, SyntaxError):  # not Python: words and marks
        statements = [[t if not (t[0].isalpha() or t[0] == "_") or t in _KEEP else "_"
                       for t in _FALLBACK.findall(line)] for line in source.splitlines()]
    return [s for s in statements if s]


_FSTRING = {getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
            if hasattr(tokenize, name)}


def code_tokens(source: str) -> list[str]:
    """``source`` as the normalised tokens this search compares (see the module's docstring)."""
    return [token for statement in _lines(source) for token in statement]


def _key(tokens: Iterable[str]) -> str:
    return "\x1f" + "\x1f".join(tokens) + "\x1f"


def worked_code(exercise_id: str, course: Path = COURSE) -> dict[str, list[str]]:
    """Each automatically graded part's worked code: the solution regions of the cells that
    define the function or class the part checks, one string per region."""
    cells = [c.source for c in nbformat.read(solution_of(exercise_id, course), as_version=4).cells
             if c.cell_type == "code"]
    parts = {}
    for name, check in get_exercise(exercise_id).checks.items():
        defines = re.compile(rf"^\s*(def|class)\s+{re.escape(check.target)}\b", re.M)
        parts[name] = [region for source in cells if defines.search(source)
                       for region in _regions(source)]
    return parts


def worked_written(exercise_id: str, course: Path = COURSE) -> dict[str, str]:
    """The solution's worked written answers (Markdown between solution markers), by cell."""
    path = solution_of(exercise_id, course)
    return {f"cell {i}": "\n".join(_regions(cell.source))
            for i, cell in enumerate(nbformat.read(path, as_version=4).cells)
            if cell.cell_type == "markdown" and BEGIN in cell.source}


def shipped_code(course: Path = COURSE) -> Iterator[tuple[str, str]]:
    """``(where, source)`` for every piece of code a handout ships: the package's modules
    (the checks and tools included) and every code cell of the lecture notebooks and the
    student versions of the exercises."""
    for path in sorted((course / "course_utils").rglob("*.py")):
        yield str(path.relative_to(course)), path.read_text(encoding="utf-8")
    for folder in ("notebooks", "exercises"):
        for path in sorted((course / folder).glob("*.ipynb")):
            cells = nbformat.read(path, as_version=4).cells
            for index, cell in enumerate(cells):
                if cell.cell_type == "code":
                    yield f"{path.relative_to(course)}, cell {index}", cell.source
                else:  # code shown in Markdown
                    for block in re.findall(r"```(?:python)?\n(.*?)```", cell.source, re.S):
                        yield f"{path.relative_to(course)}, cell {index}", block


def _needles(regions: list[str]) -> list[tuple[str, str]]:
    """``(key, what it is)`` for each whole region of worked code and each run of two to
    :data:`WINDOW` consecutive statements of one, of at least :data:`MIN_TOKENS` tokens."""
    found = []
    for region in regions:
        statements = _lines(region)
        whole = [t for s in statements for t in s]
        if len(whole) >= MIN_TOKENS:
            found.append((_key(whole), region.strip().splitlines()[0].strip()))
        for size in range(2, WINDOW + 1):
            for start in range(len(statements) - size + 1):
                window = [t for s in statements[start:start + size] for t in s]
                if len(window) >= MIN_TOKENS:
                    found.append((_key(window), " ".join(window[:14])))
    return found


def find_code_leaks(exercise_id: str, course: Path = COURSE) -> list[Finding]:
    """Every place a handout ships that holds a graded part's worked code (normalised)."""
    needles = {part: _needles(regions)
               for part, regions in worked_code(exercise_id, course).items()}
    findings = []
    for where, source in shipped_code(course):
        haystack = _key(code_tokens(source))
        for part, keys in needles.items():
            hit = next((line for key, line in keys if key in haystack), None)
            if hit is not None:
                findings.append(Finding(exercise_id, part, where, hit))
    return findings


def _words(text: str) -> list[str]:
    text = re.sub(r"\$[^$]*\$", " ", text)  # formulas are notation, not sentences
    return re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)}


def find_written_leaks(exercise_id: str, course: Path = COURSE) -> list[Finding]:
    """Every worked written answer that shares :data:`SHINGLE_WORDS` words in a row with the
    text of a lecture notebook (its Markdown and its saved outputs)."""
    lectures = {}
    for path in sorted((course / "notebooks").glob("*.ipynb")):
        data = json.loads(path.read_text(encoding="utf-8"))
        text = []
        for cell in data["cells"]:
            text.append("".join(cell["source"]))
            for output in cell.get("outputs", []):
                text.append("".join(output.get("text", "")))
        lectures[str(path.relative_to(course))] = _shingles(_words("\n".join(text)))
    findings = []
    for cell, answer in worked_written(exercise_id, course).items():
        mine = _shingles(_words(answer))
        for where, theirs in lectures.items():
            shared = mine & theirs
            if shared:
                findings.append(Finding(exercise_id, cell, where, " ".join(sorted(shared)[0])))
    return findings


def main(argv: list[str] | None = None) -> int:
    """Print every finding for the exercises named (all by default); 1 if there is any."""
    names = list(sys.argv[1:] if argv is None else argv) or exercise_ids()
    findings = [f for name in names
                for f in find_code_leaks(name) + find_written_leaks(name)]
    for f in findings:
        print(f"{f.exercise} {f.part}: in {f.where}: {f.text}")
    print(f"{len(findings)} graded answer(s) found where students can read them")
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
