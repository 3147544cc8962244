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
import functools
import hashlib
import importlib
import inspect
import linecache
import os
import sys
import sysconfig
import textwrap
import types
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["cell_digest", "copied_from", "library_methods", "module_files", "notebook_cells",
           "not_written_in_cells", "on_calls", "references_to", "watch_calls"]

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


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and every function, lambda or comprehension body nested in it."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _code_objects(constant)


#: The instructions that read a global name (``co_names`` also holds attribute names: in
#: ``sacrebleu.corpus_bleu`` the attribute is not the notebook's global ``corpus_bleu``).
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})


def _bound_names(function: types.FunctionType) -> Iterator[tuple[str, Any]]:
    """(name, value) for every global and closure variable the function's code uses."""
    scope = function.__globals__
    for code in _code_objects(function.__code__):
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
        for name, value in _bound_names(candidate):
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


# ------------------------------------------------- written in a cell of this very notebook

#: Folders of installed code (the standard library, site-packages, this package): a function
#: whose code lives there is a library's, not text the student ran some other way.
_INSTALLED = tuple(os.path.realpath(folder) + os.sep for folder in {
    *(path for key, path in sysconfig.get_paths().items()
      if key in ("stdlib", "platstdlib", "purelib", "platlib")),
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})


def _installed(filename: str) -> bool:
    return os.path.realpath(filename).startswith(_INSTALLED)


def _fingerprint(code: types.CodeType) -> tuple:
    """What a code object computes, nested functions included (not where it was compiled)."""
    return (code.co_name, code.co_firstlineno, code.co_code, code.co_names,
            code.co_varnames, code.co_freevars, code.co_cellvars,
            tuple(_fingerprint(c) if isinstance(c, types.CodeType) else repr(c)
                  for c in code.co_consts))


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


class _Cells:
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
            try:
                module = compile(text, filename, "exec", flags=self.shell.compile.flags,
                                 dont_inherit=True)
            except (SyntaxError, ValueError):
                module = compile("", filename, "exec")
            self._codes[filename] = {_fingerprint(c) for c in _code_objects(module)}
        return self._codes[filename]


def _kernel_shell() -> Any:
    """The running IPython kernel's shell, or None outside one (a script, the tests)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "history_manager") or not hasattr(
            shell.compile, "get_code_name"):
        return None
    return shell


def _functions(value: object) -> list[tuple[types.FunctionType, bool]]:
    """The Python functions a graded object runs as its own, each with whether it may be a
    library's (a decorator's wrapper, whose wrapped function is listed too): a function, a
    bound method's function, a ``partial``'s, the methods of a class and of its bases that the
    notebook made (or of a callable instance's class)."""
    if isinstance(value, types.MethodType):
        value = value.__func__
    if isinstance(value, functools.partial):
        return _functions(value.func)
    if isinstance(value, types.FunctionType):
        inner = inspect.unwrap(value)
        return [(value, False)] if inner is value else [(value, True), *_functions(inner)]
    inner = getattr(value, "__wrapped__", None)  # a wrapper object (``functools.lru_cache``)
    if not isinstance(value, type) and inner is not None:
        return _functions(inner)
    cls = value if isinstance(value, type) else type(value)
    found = []
    for klass in [cls, *(base for base in cls.__mro__[1:] if _notebooks(base))]:
        for member in vars(klass).values():
            member = getattr(member, "__func__", member)  # staticmethod, classmethod
            member = member.fget if isinstance(member, property) else member
            if isinstance(member, types.FunctionType):
                found += _functions(member)
    return found


def _notebooks(value: object) -> bool:
    """Whether ``value`` is a function or class of the notebook's own making (its module is
    not an installed one), whose code is then checked as the graded object's is."""
    if not isinstance(value, (types.FunctionType, types.MethodType, functools.partial, type)):
        return False
    module = sys.modules.get(str(getattr(value, "__module__", None)))
    path = getattr(module, "__file__", None)
    return not (isinstance(path, str) and _installed(path))


def not_written_in_cells(value: object, digests: Collection[str] | None = None) -> str | None:
    """Why ``value`` (a student's function or class) was not written in a cell of this
    notebook, as a phrase that follows its name, or None when it was (or outside a kernel).

    In a Jupyter kernel, the code of each function it runs as its own, and of the notebook's
    helpers that function uses (through globals and closures, followed as
    :func:`references_to` does), must be code the kernel compiled from one of the cells it
    ran: its file name is the name the kernel gives that cell, and compiling that cell's text
    again gives the same code. Text run by ``exec``, ``eval`` or ``compile`` (under any file
    name), a ``types.FunctionType`` made from other code, a module file the notebook wrote, or
    a library function under the student's name, fails; a library's decorator around a cell's
    function is allowed. ``digests`` (by default those :func:`notebook_cells` set, the
    grader's): the digests of the notebook's code cells, so that a cell the code ran itself
    (``get_ipython().run_cell``) does not count."""
    shell = _kernel_shell()
    if shell is None:
        return None
    cells = _Cells(shell, _NOTEBOOK_CELLS.get() if digests is None else digests)
    seen: set[int] = set()

    def problem(function: types.FunctionType, may_be_library: bool, via: list[str]) -> str:
        if id(function) in seen or len(via) > _MAX_DEPTH:
            return ""
        seen.add(id(function))
        code = function.__code__
        if may_be_library and _installed(code.co_filename):
            return ""  # a library's decorator: what it wraps is checked
        through = f" (through `{'` and `'.join(via)}`)" if via else ""
        compiled = cells.compiled(code.co_filename)
        if compiled is None:
            where = code.co_filename
            where = where if where.startswith("<") else os.path.basename(where)
            return f"{through} runs code from `{where[:80]}`, not from a cell of this notebook"
        if _fingerprint(code) not in compiled:
            return (f"{through} runs code compiled under a cell's name from other text, not "
                    "that cell's code")
        for name, helper in _bound_names(function):
            for inner, wrapper in _functions(helper) if _notebooks(helper) else []:
                found = problem(inner, wrapper, [*via, name])
                if found:
                    return found
        return ""

    try:
        for function, wrapper in _functions(value):
            found = problem(function, wrapper, [])
            if found:
                return found.lstrip()
    except Exception as error:  # a wrapper that loops, an attribute that raises: not readable
        return f"could not be read as code of this notebook ({type(error).__name__})"
    return None
