"""The one search for graded answers where a student can read them: the worked code of every
automatically graded part and the grader's hidden answers, searched for in everything a handout
gives students (the library's source and its checks, the notebooks, the README and the course
site: :mod:`course_utils.tools.student_pages`, by :func:`course_utils.tools.solutions.ships`),
and the worked written answers searched for in all their text. ``course-handout`` runs it on the
handout it makes, and refuses one with a finding; the tests run it on the course.

It is what keeps each exercise the student's own work:

- **code** is compared as tokens with comments, blank lines and layout dropped, every string one
  token and every local name (a variable, a parameter, the function's own name) the same token;
  attribute names, keywords, builtins and the usual module aliases (``np.exp``, ``torch.bmm``,
  ``.sum``) are kept, because they are the answer, and each statement is compared by what it
  computes: ``return X`` and ``name = X`` both as ``X`` (:func:`_expression`). A part leaks when
  the whole of its worked code, or any two or three consecutive statements of it of at least
  :data:`MIN_TOKENS` tokens, appear in one piece of code a student can read; so does a function
  of the grader's hidden answers (:func:`hidden_code`), which no handout carries;
- **a short part**, one whose whole worked code is under :data:`MIN_TOKENS` tokens (``return
  weights.argmax(axis=1) + 1``), would never leak by that rule, so each of its statements is
  compared with every whole statement of the lecture notebooks, the README and the site. Only
  statements that say something count (:func:`_telling`); the library is left out of this
  comparison, its plumbing being full of short idioms;
- **written answers** leak when they share a run of :data:`SHINGLE_WORDS` words
  (:mod:`course_utils.tools.word_runs`: case, punctuation and formulas ignored) with any text a
  student reads: a notebook, the README, a page of the site, the package's modules.

``python -m course_utils.tools.answer_search [E10.1 ...]`` prints what it finds (exit status 1
when it finds anything).
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import sys
import textwrap
import tokenize
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from course_utils.checks.registry import hidden_module_of
from course_utils.files import COURSE_FOLDER
from course_utils.tools.solutions import solved_exercises, worked_code, worked_written
from course_utils.tools.student_pages import (
    LECTURE,
    README,
    SITE,
    Piece,
    code_pieces,
    prose_pieces,
)
from course_utils.tools.word_runs import runs_of

__all__ = ["MIN_STATEMENT_TOKENS", "MIN_TOKENS", "SHINGLE_WORDS", "WINDOW", "Finding",
           "code_tokens", "find_code_leaks", "find_leaks", "find_written_leaks", "hidden_code",
           "main", "statement_tokens"]

#: Consecutive statements of a part's worked code that may not appear together elsewhere.
WINDOW = 3
#: A window (or a whole part) shorter than this many tokens is too generic to count as a copy.
MIN_TOKENS = 16
#: A short part's statement counts only with this many tokens (and a call or an attribute).
MIN_STATEMENT_TOKENS = 6
#: Where a short part's statements are looked for: what a student reads before the exercise.
SHORT_PART_PLACES = frozenset({LECTURE, README, SITE})
#: Words in a row that a worked written answer may not share with what a student reads.
SHINGLE_WORDS = 10
#: Names kept as they are: the modules an answer calls into.
MODULES = frozenset({"np", "numpy", "torch", "nn", "F", "math", "plt", "sns", "functools"})
_KEEP = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | MODULES
_FALLBACK = re.compile(r"[A-Za-z_]\w*|\d[\d_.eE]*|\"[^\"\n]*\"|'[^'\n]*'|\S")


class Finding(NamedTuple):
    """A graded answer found where a student can read it."""

    exercise: str
    part: str  # the graded part, the written question's cell, or a hidden answer
    where: str  # the file (and cell) that holds it, relative to the course
    text: str  # the first line of what was found


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


def _needles(regions: list[str]) -> list[tuple[str, str]]:
    """``(key, what it is)`` for each whole region of worked code of at least
    :data:`MIN_TOKENS` tokens and each run of two to :data:`WINDOW` consecutive statements of
    one that keeps that many, its statements compared by what they compute
    (:func:`statement_tokens`: ``return X`` is found in ``c = X``)."""
    found = []
    for region in regions:
        statements = statement_tokens(region)
        if len(code_tokens(region)) >= MIN_TOKENS:
            whole = [t for s in statements for t in s]
            found.append((_key(whole), region.strip().splitlines()[0].strip()))
        for size in range(2, WINDOW + 1):
            for start in range(len(statements) - size + 1):
                window = [t for s in statements[start:start + size] for t in s]
                if len(window) >= MIN_TOKENS:
                    found.append((_key(window), " ".join(window[:14])))
    return found


def _expression(statement: list[str]) -> list[str]:
    """A statement by what it computes: ``return X`` and ``name = X`` (one local name) as ``X``."""
    if statement[:1] == ["return"]:
        return statement[1:]
    if statement[:2] == ["_", "="]:
        return statement[2:]
    return statement


def _telling(expression: list[str]) -> bool:
    """Whether a short part's statement says enough to be its answer: at least
    :data:`MIN_STATEMENT_TOKENS` tokens, one of them a name the normalisation keeps (a function,
    method or attribute of NumPy, PyTorch or Python: ``np.exp``, ``.argmax``, ``len``).

    An expression of local names and operators alone (``weights @ h``, ``query + keys``), or a
    call of a local function (``f(a, b, c)``), is what any code writes: found in a notebook, it
    says nothing about an answer (and a part whose answer is only that cannot be kept from the
    lecture by a search; it has to ask for another form). What identifies an answer is what it
    calls, with which axis: under six tokens even those are idioms (``x.sum()``, ``a @ b.T``),
    from six on they are a choice (``np.exp(x)`` is six, ``weights.argmax(axis=1) + 1`` ten)."""
    named = any(t != "_" and t.isidentifier() and not keyword.iskeyword(t) for t in expression)
    return len(expression) >= MIN_STATEMENT_TOKENS and named


def statement_tokens(source: str) -> list[list[str]]:
    """``source``'s statements as this search compares a short part's: normalised tokens,
    by their expression (:func:`_expression`)."""
    return [_expression(statement) for statement in _lines(source)]


def _short_needles(regions: list[str]) -> list[tuple[str, str]]:
    """``(key, what it is)`` for each telling statement of a part whose whole worked code is
    under :data:`MIN_TOKENS` tokens; none for a longer part."""
    if sum(len(code_tokens(region)) for region in regions) >= MIN_TOKENS:
        return []
    return [(_key(expression), " ".join(expression)) for region in regions
            for expression in statement_tokens(region) if _telling(expression)]


def hidden_code(exercise_id: str, course: Path = COURSE_FOLDER) -> dict[str, list[str]]:
    """The grader's hidden answers of ``exercise_id`` in ``course`` (none where it has none), by
    function: the body of each, its docstring left out, searched for as a part's worked code."""
    path = course.joinpath(*hidden_module_of(exercise_id).split(".")).with_suffix(".py")
    if not path.is_file():
        return {}
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            if body:
                text = "\n".join(lines[body[0].lineno - 1:body[-1].end_lineno])
                found[f"hidden answers, {node.name}"] = [textwrap.dedent(text)]
    return found


class _Read(NamedTuple):
    """A piece of code a student reads, as the search compares it."""

    where: str
    haystack: str  # every statement, normalised, in one key
    expressions: set[str]  # each whole statement (lectures, README, site only)


def _read(pieces: Iterable[Piece]) -> list[_Read]:
    read = []
    for where, kind, source in pieces:
        statements = statement_tokens(source)
        read.append(_Read(where, _key(t for statement in statements for t in statement),
                          {_key(s) for s in statements} if kind in SHORT_PART_PLACES else set()))
    return read


def _code_leaks(exercise_id: str, course: Path, read: Sequence[_Read]) -> list[Finding]:
    parts = worked_code(exercise_id, course)
    needles = {part: _needles(regions) for part, regions in
               {**parts, **hidden_code(exercise_id, course)}.items()}
    short = {part: _short_needles(regions) for part, regions in parts.items()}
    findings = []
    for piece in read:
        for part, keys in needles.items():
            hit = next((line for key, line in keys if key in piece.haystack), None)
            if hit is None:
                hit = next((line for key, line in short.get(part, [])
                            if key in piece.expressions), None)
            if hit is not None:
                findings.append(Finding(exercise_id, part, piece.where, hit))
    return findings


def _written_leaks(exercise_id: str, course: Path, places: Sequence[tuple[str, set]]
                   ) -> list[Finding]:
    findings = []
    for cell, answer in worked_written(exercise_id, course).items():
        mine = runs_of(answer, SHINGLE_WORDS)
        for where, theirs in places:
            shared = mine & theirs
            if shared:
                findings.append(Finding(exercise_id, cell, where, " ".join(sorted(shared)[0])))
    return findings


def _places(readable: Path) -> list[tuple[str, set]]:
    return [(where, runs_of(text, SHINGLE_WORDS)) for where, _, text in prose_pieces(readable)]


def find_code_leaks(exercise_id: str, course: Path = COURSE_FOLDER,
                    readable: Path | None = None) -> list[Finding]:
    """Every place a student can read that holds a graded part's worked code (normalised) or
    one of the grader's hidden answers: a window of it anywhere, or a short part's statement in
    a lecture, the README or the site. The solutions are ``course``'s; what a student reads is
    ``readable``'s (a handout's folder), by default what ``course``'s handout would ship."""
    return _code_leaks(exercise_id, course, _read(code_pieces(readable or course)))


def find_written_leaks(exercise_id: str, course: Path = COURSE_FOLDER,
                       readable: Path | None = None) -> list[Finding]:
    """Every worked written answer that shares :data:`SHINGLE_WORDS` words in a row with a text
    a student reads (see :func:`find_code_leaks` for ``course`` and ``readable``)."""
    return _written_leaks(exercise_id, course, _places(readable or course))


def find_leaks(course: Path = COURSE_FOLDER, readable: Path | None = None,
               exercises: Sequence[str] | None = None) -> list[Finding]:
    """:func:`find_code_leaks` and :func:`find_written_leaks` of every exercise ``course`` has
    the solution of (or those named), what a student reads read once."""
    read, places = _read(code_pieces(readable or course)), _places(readable or course)
    return [finding for exercise_id in (exercises or solved_exercises(course))
            for finding in _code_leaks(exercise_id, course, read)
            + _written_leaks(exercise_id, course, places)]


def main(argv: list[str] | None = None) -> int:
    """Print every finding for the exercises named (all by default); 1 if there is any."""
    names = list(sys.argv[1:] if argv is None else argv) or None
    findings = find_leaks(exercises=names)
    for f in findings:
        print(f"{f.exercise} {f.part}: in {f.where}: {f.text}")
    print(f"{len(findings)} graded answer(s) found where students can read them")
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main())
