"""In the lab: a cell that uses a name an earlier cell defines, run before that cell, says which
section to run first, under the usual ``NameError``.

Students jump in where the day's plan sends them (a "your turn" section, the results of
notebook 4) and meet ``NameError: name 'torch' is not defined`` with no word of where it comes
from. The course's kernel (``bahdanau-day10``, :mod:`course_utils.tools.kernel`) loads this
IPython extension: on a ``NameError`` it reads the notebook the kernel runs (Jupyter gives its
path in ``JPY_SESSION_NAME``), finds the first code cell that defines the name (an assignment,
``def``, ``class``, ``import``, a ``for`` or ``with`` target) and the heading above it, and adds
one line::

    `torch` is defined in this notebook's section "2. Attention as a module" (code cell 3),
    which has not run in this kernel: run the cells from there down (Run → Run All Above
    Selected Cell), then this one.

A name no cell defines (a typo, a name of another notebook) gets no line: the error says it all.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["Definition", "defined_names", "find_definition", "hint", "load_ipython_extension"]


class Definition(NamedTuple):
    """Where a notebook first defines a name."""

    section: str  # the heading above that cell, or "" when none precedes it
    code_cell: int  # that cell's number among the notebook's code cells, from 1


def defined_names(source: str) -> set[str]:
    """The names a cell binds at its top level (cell magics and shell lines are skipped)."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        else:
            targets = {
                ast.Assign: lambda n: n.targets, ast.AnnAssign: lambda n: [n.target],
                ast.AugAssign: lambda n: [n.target], ast.For: lambda n: [n.target],
                ast.With: lambda n: [i.optional_vars for i in n.items if i.optional_vars],
            }.get(type(node))
            for target in targets(node) if targets else []:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def find_definition(name: str, notebook: dict[str, Any]) -> Definition | None:
    """The first code cell of ``notebook`` (its JSON) that defines ``name``, with its section."""
    section, number = "", 0
    for cell in notebook.get("cells", []):
        source = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            heading = next((line.lstrip("#").strip() for line in source.splitlines()
                            if line.startswith("#")), None)
            section = heading if heading is not None else section
        elif cell.get("cell_type") == "code":
            number += 1
            if name in defined_names(source):
                return Definition(section, number)
    return None


def _notebook() -> dict[str, Any] | None:
    """The notebook this kernel runs, as Jupyter names it, or ``None``."""
    import json

    path = os.environ.get("JPY_SESSION_NAME", "")
    for candidate in (Path(path), Path.cwd() / Path(path).name):
        if path.endswith(".ipynb") and candidate.is_file():
            try:
                return json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
    return None


def hint(name: str, notebook: dict[str, Any] | None) -> str | None:
    """The line for a ``NameError`` on ``name``, or ``None`` when no cell defines it."""
    found = find_definition(name, notebook) if notebook is not None else None
    if found is None:
        return None
    where = f'section "{found.section}"' if found.section else "opening cells"
    return (f"`{name}` is defined in this notebook's {where} (code cell {found.code_cell}), "
            "which has not run in this kernel: run the cells from there down (Run → Run All "
            "Above Selected Cell), then this one.")


def _on_name_error(shell: Any, etype: type, value: BaseException, tb: Any,
                   tb_offset: int | None = None) -> None:
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    name = getattr(value, "name", None)
    text = hint(name, _notebook()) if isinstance(name, str) else None
    if text:
        from course_utils.config import wrap_text  # on the first hint only

        print(wrap_text(text))


def load_ipython_extension(shell: Any) -> None:
    """IPython's hook (``--ext course_utils.tools.lab_hints``): add the line to ``NameError``."""
    shell.set_custom_exc((NameError,), _on_name_error)
