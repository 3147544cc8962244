"""Is it the student's own code? Spot a function that hands its work to the course's reference.

Some exercises ask students to write, in NumPy, what ``course_utils`` already computes (E10.1:
energies, softmax, context). A function that calls the library would pass every numerical
check, so such a check names the library modules that hold the answer, and
:class:`course_utils.checks.Check` looks for them in two ways:

- :func:`references_to` reads the function's code: every global or closure name it uses (in
  nested functions and lambdas too, and in the helper functions it calls, followed
  recursively) that is bound to one of those modules or to something defined in them. That
  finds ``from course_utils.attention import softmax as sm``, ``import course_utils.attention
  as A`` and ``import course_utils``, even on a branch the check's inputs never take.
- :func:`watch_calls` records, while the function runs, every Python function entered whose
  code lives in those modules' files, whatever name or path the call took (a helper, a
  ``functools.partial``, ``getattr``, ``map``). It uses :func:`sys.setprofile`, chained to any
  profiler already installed and restored afterwards, so nothing in ``course_utils`` is ever
  replaced.
"""

from __future__ import annotations

import ast
import dis
import importlib
import inspect
import sys
import textwrap
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = ["bound_names", "code_objects", "copied_from", "library_methods", "module_files",
           "on_calls", "references_to", "watch_calls"]

#: How deep :func:`references_to` follows helper functions that call helper functions.
_MAX_DEPTH = 8


def module_files(modules: Iterable[str]) -> dict[str, str]:
    """The source file of each of ``modules`` (imported if needed), as code objects name it,
    mapped to the module's name."""
    files = {}
    for name in modules:
        path = getattr(importlib.import_module(name), "__file__", None)
        if path:
            files[path] = name
    return files


def code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and every function, lambda or comprehension body nested in it."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from code_objects(constant)


#: The instructions that read a global name (``co_names`` also holds attribute names: in
#: ``sacrebleu.corpus_bleu`` the attribute is not the notebook's global ``corpus_bleu``).
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})


def bound_names(function: types.FunctionType) -> Iterator[tuple[str, Any]]:
    """(name, value) for every global and closure variable the function's code uses."""
    scope = function.__globals__
    for code in code_objects(function.__code__):
        for instruction in dis.get_instructions(code):
            name = instruction.argval
            if instruction.opname in _GLOBAL_LOADS and isinstance(name, str) and name in scope:
                yield name, scope[name]
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
        try:
            yield name, cell.cell_contents
        except ValueError:  # a closure variable not assigned yet
            continue


def _origin(value: object, package: str, modules: frozenset[str]) -> str | None:
    """The dotted name of ``value`` if it is a forbidden module or defined in one."""
    if isinstance(value, types.ModuleType):
        if value.__name__ == package or value.__name__ in modules:
            kind = "package" if value.__name__ == package else "module"
            return f"the {kind} `{value.__name__}`"
        return None
    module = getattr(value, "__module__", None)
    if module in modules and callable(value):
        qualname = getattr(value, "__qualname__", type(value).__name__)
        return f"`{module}.{qualname}`"
    if isinstance(value, (dict, list, tuple, set)) and value:
        return _held_by(value, modules)
    return None


def _held_by(value: object, modules: frozenset[str]) -> str | None:
    """The dotted name of the data ``value`` is, if one of ``modules`` holds it: a global of
    theirs (the answers a check stores for its fixed case) or an item of one."""
    for name in modules:
        if name not in sys.modules:  # not imported: nothing of it can be in use
            continue
        for attribute, held in vars(sys.modules[name]).items():
            items = held.values() if isinstance(held, dict) else held if isinstance(
                held, (list, tuple)) else ()
            if held is value or any(item is value for item in items):
                return f"`{name}.{attribute}`" + ("" if held is value else "'s data")
    return None


def references_to(function: Callable, modules: Iterable[str]) -> list[str]:
    """What ``function`` (or a helper it calls) uses from ``modules``, as phrases that follow
    the function's name: ``["uses `sm`, which is `course_utils.attention.softmax`"]``; empty
    when nothing.

    A module of the package itself (``course_utils``) counts too: its attributes lead to the
    same functions.
    """
    modules = frozenset(modules)
    package = next(iter(modules)).split(".")[0] if modules else ""
    found: list[str] = []
    seen: set[int] = set()

    def visit(candidate: object, via: list[str]) -> None:
        if not isinstance(candidate, types.FunctionType) or id(candidate) in seen:
            return
        seen.add(id(candidate))
        if len(via) > _MAX_DEPTH or str(candidate.__module__).startswith(package + "."):
            return
        for name, value in bound_names(candidate):
            origin = _origin(value, package, modules)
            if origin is not None:
                through = f" (through `{'` and `'.join(via)}`)" if via else ""
                described = f"uses `{name}`{through}, which is {origin}"
                if described not in found:
                    found.append(described)
            else:
                visit(value, [*via, name])  # a helper the student wrote

    itself = _origin(function, package, modules)
    if itself is not None:
        return [f"is {itself} itself"]
    visit(function, [])
    return found


#: A function of fewer syntax-tree nodes than this is not compared for copying: a short answer
#: (``return weights.argmax(-1)``, 7 nodes) is what an honest student writes too.
MIN_COPIED_NODES = 40


class _Shape(ast.NodeTransformer):
    """A function's code with its names numbered in order of first use, its docstring and its
    annotations dropped: the same after a copy, whatever the copy renamed."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _rename(self, name: str) -> str:
        return self.names.setdefault(name, f"n{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(self._rename(node.id), node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.copy_location(ast.arg(self._rename(node.arg)), node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        body = node.body
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                first.value.value, str):
            body = body[1:]  # the docstring
        node.body, node.returns, node.name = body or [ast.Pass()], None, "f"
        node.decorator_list = []
        self.generic_visit(node)
        return node


def _shape(function: object) -> tuple[str, int] | None:
    """``(shape, syntax-tree nodes)`` of a Python function's source, or None without source."""
    try:
        source = textwrap.dedent(inspect.getsource(function))  # type: ignore[arg-type]
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    definitions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not definitions:
        return None
    shaped = _Shape().visit(definitions[0])
    nodes = sum(1 for _ in ast.walk(shaped))
    return ast.dump(shaped, annotate_fields=False), nodes


def copied_from(function: Callable, modules: Iterable[str]) -> str | None:
    """The dotted name of a function of ``modules`` whose code ``function`` repeats, renamed or
    not (names, docstring and annotations aside), or None. Functions of fewer than
    :data:`MIN_COPIED_NODES` syntax-tree nodes are not compared: short answers coincide."""
    mine = _shape(function)
    if mine is None or mine[1] < MIN_COPIED_NODES:
        return None
    for name in modules:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, types.FunctionType) and value.__module__ == name:
                theirs = _shape(value)
                if theirs is not None and theirs[0] == mine[0]:
                    return f"{name}.{value.__qualname__}"
    return None


def library_methods(cls: type, package: str = "course_utils") -> list[str]:
    """The methods that ``cls`` defines by taking the package's own function
    (``step = GRUDecoder.step`` in the class body), as phrases: ``["`step` is
    `course_utils.models.GRUDecoder.step`"]``. Such a method runs the library's code under the
    student's name, so neither a ``super()`` refusal nor a name in the code finds it."""
    found = []
    for name, value in vars(cls).items():
        function = getattr(value, "__func__", value)
        module = str(getattr(function, "__module__", ""))
        if callable(function) and hasattr(function, "__code__") and (
                module == package or module.startswith(package + ".")):
            found.append(f"`{name}` is `{module}.{function.__qualname__}`")
    return found


@contextmanager
def on_calls(record: Callable[[types.CodeType], object]) -> Iterator[None]:
    """Call ``record`` with the code object of every Python function entered inside the
    ``with`` block. The previous profiler (if any: a profiler, a debugger, an outer
    ``on_calls``) keeps running and is put back afterwards, however the block ends."""
    previous: Any = sys.getprofile()

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call":
            record(frame.f_code)
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


@contextmanager
def watch_calls(files: Mapping[str, str]) -> Iterator[list[str]]:
    """Record the dotted names (``course_utils.attention.softmax``) of the Python functions
    entered inside the ``with`` block whose code lives in ``files`` (file -> module name, as
    :func:`module_files` gives), through :func:`on_calls`."""
    entered: list[str] = []

    def record(code: types.CodeType) -> None:
        if code.co_filename in files:
            entered.append(f"{files[code.co_filename]}.{code.co_qualname}")

    with on_calls(record):
        yield entered
