"""What a notebook's cells compile to, in the running Jupyter kernel.

The kernel names each cell it runs (``/tmp/ipykernel_<pid>/<hash>.py``) and compiles the code
under that name; :class:`Cells` finds those names in the kernel's input history and compiles
each cell's text again, to compare what a function runs with what its cell holds
(:func:`fingerprint`: the code itself, not where it was compiled). It compiles the way IPython
runs a cell, one top-level statement at a time, as well as whole: CPython compiles ``np.max(x)``
differently when ``import numpy as np`` sits in the same module, so a cell that imports what its
function uses compiles, statement by statement, to the code the kernel ran.

The grader's probe cell names the notebook's own cells by their digests (:func:`cell_digest`,
:func:`notebook_cells`), so that a cell a student's code ran itself
(``get_ipython().run_cell``) does not count as one of them.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import sys
import types
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from course_utils.checks.own_work import code_objects

__all__ = ["Cells", "as_ipython_compiles", "cell_digest", "fingerprint", "fingerprints",
           "current_digests", "kernel_cells", "kernel_shell", "notebook_cells"]


def fingerprint(code: types.CodeType) -> tuple:
    """What a code object computes, nested functions included (not where it was compiled)."""
    return (code.co_name, code.co_firstlineno, code.co_code, code.co_names,
            code.co_varnames, code.co_freevars, code.co_cellvars,
            tuple(fingerprint(c) if isinstance(c, types.CodeType) else repr(c)
                  for c in code.co_consts))


def fingerprints(module: types.CodeType) -> set[tuple]:
    return {fingerprint(c) for c in code_objects(module)}


def cell_digest(source: str) -> str:
    """A code cell's fingerprint, the same for the notebook file's cell and the kernel's
    history of it (which drops the last newlines)."""
    return hashlib.sha256(source.rstrip("\n").encode()).hexdigest()


#: The digests of the notebook's code cells, while the grader's probe cell runs; None: any cell
#: the kernel ran counts (the student's own notebook).
_NOTEBOOK_CELLS: ContextVar[frozenset[str] | None] = ContextVar("course_notebook_cells",
                                                                default=None)


@contextmanager
def notebook_cells(digests: Collection[str] | None) -> Iterator[None]:
    """Inside the block, only the code cells with these digests (:func:`cell_digest`) count as
    the notebook's own: the grader's probe cell sets them, from the submission it read."""
    token = _NOTEBOOK_CELLS.set(None if digests is None else frozenset(digests))
    try:
        yield
    finally:
        _NOTEBOOK_CELLS.reset(token)


def as_ipython_compiles(text: str, filename: str, flags: int) -> set[tuple]:
    """The fingerprints of the code a cell's ``text`` compiles to, compiled as IPython runs a
    cell (each top-level statement a module of its own; the last expression interactively)
    and as one module (how ``%run`` and older front ends compile it)."""
    found: set[tuple] = set()
    try:
        found |= fingerprints(compile(text, filename, "exec", flags=flags, dont_inherit=True))
    except (SyntaxError, ValueError):
        pass
    try:
        tree = compile(text, filename, "exec", flags=flags | ast.PyCF_ONLY_AST,
                       dont_inherit=True)
    except (SyntaxError, ValueError):
        return found
    for node in tree.body:
        for mode, wrapped in (("exec", ast.Module([node], [])),
                              ("single", ast.Interactive([node]))):
            if mode == "single" and not isinstance(node, ast.Expr):
                continue
            try:
                found |= fingerprints(compile(wrapped, filename, mode, flags=flags,
                                               dont_inherit=True))
            except (SyntaxError, ValueError, TypeError):
                continue
    return found


class Cells:
    """The cells this IPython kernel ran (its input history), and the code each compiles to.
    ``digests``: SHA-256 of the notebook's own code cells (the grader's), or None (any cell
    the kernel ran counts)."""

    def __init__(self, shell: Any, digests: Collection[str] | None) -> None:
        self.shell, self.digests = shell, None if digests is None else frozenset(digests)
        self._names: dict[str, str] | None = None
        self._codes: dict[str, set[tuple]] = {}

    def names(self) -> dict[str, str]:
        """The file name the kernel gave each cell it ran -> that cell's transformed text."""
        if self._names is None:
            self._names = {}
            for number, raw in enumerate(self.shell.history_manager.input_hist_raw):
                if not isinstance(raw, str) or not raw.strip() or (
                        self.digests is not None and cell_digest(raw) not in self.digests):
                    continue
                for ending in ("", "\n", "\n\n"):  # the history drops a cell's last newlines
                    try:
                        text = self.shell.transform_cell(raw + ending)
                        name = self.shell.compile.get_code_name(raw + ending, text, number)
                    except Exception:  # a cell IPython cannot transform defines nothing
                        continue
                    self._names[name] = text
            if self.digests is None:
                # cells run without history (nbval and some front ends pass store_history=False)
                # are still compiled and cached by the kernel under their cell names
                for name in getattr(self.shell.compile, "_filename_map", {}):
                    entry: Any = linecache.cache.get(name)  # (size, None, lines, name)
                    if name not in self._names and entry and len(entry) == 4 and (
                            entry[1] is None):
                        self._names[name] = "".join(entry[2])
        return self._names

    def compiled(self, filename: str) -> set[tuple] | None:
        """The fingerprints of every code object the cell named ``filename`` compiles to, or
        None when no cell of this notebook has that name."""
        if filename not in self._codes:
            text = self.names().get(filename)
            if text is None:
                return None
            self._codes[filename] = as_ipython_compiles(text, filename,
                                                         self.shell.compile.flags)
        return self._codes[filename]

    def holds(self, code: types.CodeType) -> bool | None:
        """Whether ``code`` is code one of the cells compiles to; None when its file name is
        no cell's."""
        compiled = self.compiled(code.co_filename)
        return None if compiled is None else fingerprint(code) in compiled


def kernel_shell() -> Any:
    """The running IPython kernel's shell, or None outside one (a script, the tests)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "history_manager") or not hasattr(
            shell.compile, "get_code_name"):
        return None
    return shell


def current_digests() -> frozenset[str] | None:
    """The digests :func:`notebook_cells` set around the running code, or None."""
    return _NOTEBOOK_CELLS.get()


def kernel_cells() -> Cells | None:
    """The cells of the running kernel that count as the notebook's (those
    :func:`notebook_cells` names, else all), or None outside a kernel."""
    shell = kernel_shell()
    return None if shell is None else Cells(shell, _NOTEBOOK_CELLS.get())
