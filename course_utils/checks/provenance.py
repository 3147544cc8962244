"""Where the code a graded part runs comes from: a cell of this notebook, or installed code.

A graded function must be the student's own writing. Two readings enforce it, alike for every
exercise:

- :func:`not_written_in_cells` reads the function before it runs: its code, and that of the
  notebook's helpers it reaches through globals, closures and containers (a dict, a list, a
  namespace), must be code the kernel compiled from one of the notebook's cells.
- :func:`watch_origins` watches it run: every Python function entered while it runs, whatever
  route the call took (a dict of functions, ``getattr``, a bound method, ``map``), must be code
  compiled from one of the notebook's cells, or code of an installed library whose file really
  holds it, or a method the standard library generated for a class (a dataclass's
  ``__init__``, a named tuple's ``__new__``). Text run by ``exec``, ``eval`` or ``compile`` (the
  library's source ``exec``'d into a dict, text compiled under a cell's name or a library's
  file name) is none of those.

What each cell compiles to comes from :mod:`course_utils.checks.cells`. Both readings are silent
outside a Jupyter kernel (a script, the tests of the library), where there are no cells to
compare with.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import sys
import sysconfig
import threading
import types
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

from course_utils.checks.cells import (
    Cells,
    cell_digest,
    current_digests,
    fingerprint,
    fingerprints,
    kernel_cells,
    kernel_shell,
    notebook_cells,
)
from course_utils.checks.own_work import bound_names, code_objects

__all__ = ["MAX_DEPTH", "Origins", "cell_digest", "installed", "not_written_in_cells",
           "notebook_cells", "watch_origins"]

#: How deep the readings follow helpers that call helpers, and containers inside containers.
MAX_DEPTH = 8

#: Folders of installed code (the standard library, site-packages, this package): a function
#: whose code lives there is a library's, not text the student ran some other way.
_INSTALLED = tuple(os.path.realpath(folder) + os.sep for folder in {
    *(path for key, path in sysconfig.get_paths().items()
      if key in ("stdlib", "platstdlib", "purelib", "platlib")),
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})


def installed(filename: str) -> bool:
    """Whether ``filename`` lies in a folder of installed code (it may still not hold the code
    that names it: `_genuine` checks that)."""
    return os.path.realpath(filename).startswith(_INSTALLED)


# ------------------------------------------------------------ installed code, really installed

@functools.lru_cache(maxsize=512)
def _file_fingerprints(path: str, stamp: tuple[int, int]) -> frozenset[tuple]:
    """The fingerprints of the code the Python file at ``path`` compiles to (as the import
    system compiles it); ``stamp`` (size, modification time) keeps the cache honest."""
    try:
        with open(path, "rb") as source:
            return frozenset(fingerprints(compile(source.read(), path, "exec",
                                                   dont_inherit=True)))
    except (OSError, SyntaxError, ValueError):
        return frozenset()


def _source_file(filename: str) -> str | None:
    """The Python file whose text code of ``filename`` claims to be: the file itself, or for
    the interpreter's frozen modules (``<frozen os>``) the standard library's file."""
    if filename.startswith("<frozen ") and filename.endswith(">"):
        try:
            spec = importlib.util.find_spec(filename[len("<frozen "):-1])
        except (ImportError, ValueError):
            return None
        origin = getattr(spec, "origin", None)
        if origin == "frozen":
            stdlib = getattr(sys, "_stdlib_dir", None) or sysconfig.get_paths()["stdlib"]
            relative = filename[len("<frozen "):-1].replace(".", os.sep)
            for candidate in (relative + ".py", os.path.join(relative, "__init__.py")):
                if os.path.isfile(os.path.join(stdlib, candidate)):
                    return os.path.join(stdlib, candidate)
            return None
        return origin if isinstance(origin, str) and os.path.isfile(origin) else None
    return filename if os.path.isfile(filename) and installed(filename) else None


def _module_holds(filename: str, code: types.CodeType) -> bool:
    """Whether a module loaded from ``filename`` holds ``code`` itself (the very object), in a
    function or class of its own or nested in one: for a file that changed on disk after it
    was imported (a package upgraded in a running kernel)."""
    real = os.path.realpath(filename)
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or os.path.realpath(path) != real:
            continue
        stack: list[Any] = list(vars(module).values())
        seen: set[int] = set()
        while stack:
            value = stack.pop()
            if id(value) in seen:
                continue
            seen.add(id(value))
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                stack += [value.fget, value.fset, value.fdel]
            elif isinstance(value, types.FunctionType):
                if any(c is code for c in code_objects(value.__code__)):
                    return True
            elif isinstance(value, type) and value.__module__ == module.__name__:
                stack += list(vars(value).values())
    return False


def _genuine(code: types.CodeType) -> bool:
    """Whether ``code`` is what the installed file it names holds (not text compiled under
    that file's name)."""
    path = _source_file(code.co_filename)
    if path is None:
        return False
    try:
        status = os.stat(path)
    except OSError:
        return False
    if fingerprint(code) in _file_fingerprints(path, (status.st_size, status.st_mtime_ns)):
        return True
    return _module_holds(path, code)


#: The methods the standard library writes for a class it decorates or builds: a dataclass's
#: (``dataclasses``) and a named tuple's ``__new__`` (``collections.namedtuple``, a lambda).
_GENERATED = frozenset({"__init__", "__repr__", "__eq__", "__lt__", "__le__", "__gt__",
                        "__ge__", "__hash__", "__setattr__", "__delattr__", "__getstate__",
                        "__setstate__", "<lambda>"})


def _generated_method(code: types.CodeType, frame: types.FrameType | None) -> bool:
    """Whether ``code``, run in ``frame``, is what the standard library generated for a
    dataclass or a named tuple: a method their class holds under that name (its first
    argument's class, or the class itself), or the text ``dataclasses`` runs to make them."""
    if frame is None:
        return False
    caller, module = frame.f_back, sys.modules.get("dataclasses")
    if code.co_name in ("<module>", "__create_fn__") and caller is not None and (
            module is not None) and os.path.realpath(caller.f_code.co_filename) == (
            os.path.realpath(str(module.__file__))):
        return True  # dataclasses making a class's methods from its own text
    if code.co_name not in _GENERATED or not code.co_varnames:
        return False
    first = frame.f_locals.get(code.co_varnames[0])
    cls = first if isinstance(first, type) else type(first)
    for klass in cls.__mro__:
        for value in vars(klass).values():
            value = getattr(value, "__func__", value)
            if getattr(value, "__code__", None) is code and _generated_for(klass, value):
                return True
    return False


# ------------------------------------------------------------------------ watching it run

def _where(code: types.CodeType) -> str:
    name = code.co_filename
    return name if name.startswith("<") else os.path.basename(name)


class Origins:
    """What :func:`watch_origins` saw: ``foreign``, a phrase that follows the graded name and
    names the first function run that was neither the notebook's nor a library's (``"runs code
    from `<string>` (`additive_attention`), not from a cell ..."``), or None."""

    def __init__(self, cells: Cells) -> None:
        self.cells = cells
        self.foreign: str | None = None
        self._verdicts: dict[int, bool] = {}
        self._kept: list[types.CodeType] = []  # ids stay unique while the verdicts are kept

    def see(self, code: types.CodeType, frame: types.FrameType | None) -> None:
        if self.foreign is not None:
            return
        known = self._verdicts.get(id(code))
        if known is None:
            known, lasting = self._judge(code, frame)
            if lasting:  # a generated method is judged by the class it is called on
                self._verdicts[id(code)] = known
                self._kept.append(code)
        if not known:
            self.foreign = (f"runs code from `{_where(code)[:80]}` (`{code.co_qualname[:80]}`), "
                            "not from a cell of this notebook nor from an installed library")

    def _judge(self, code: types.CodeType, frame: types.FrameType | None) -> tuple[bool, bool]:
        """(whether ``code`` is the notebook's or a library's, whether that holds for every
        later call)."""
        in_cell = self.cells.holds(code)
        if in_cell is not None:
            return in_cell, True
        if installed(code.co_filename) or code.co_filename.startswith("<frozen "):
            return _genuine(code), True
        return _generated_method(code, frame), False


@contextmanager
def watch_origins() -> Iterator[Origins | None]:
    """Judge the origin of every Python function entered inside the block, in this thread and
    in threads it starts (:class:`Origins`); yields None outside a kernel, where nothing is
    judged. The previous profiler keeps running and is put back afterwards."""
    cells = kernel_cells()
    if cells is None:
        yield None
        return
    origins = Origins(cells)
    previous: Any = sys.getprofile()
    previous_threads: Any = threading.getprofile()

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call":
            origins.see(frame.f_code, frame)
        if previous is not None:
            previous(frame, event, arg)

    def in_thread(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call":
            origins.see(frame.f_code, frame)

    sys.setprofile(profile)
    threading.setprofile(in_thread)
    try:
        yield origins
    finally:
        sys.setprofile(previous)
        threading.setprofile(previous_threads)


# ----------------------------------------------------------------- reading it before it runs

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
            if isinstance(member, types.FunctionType) and not _generated_for(klass, member) \
                    and not _a_librarys(member):
                found += _functions(member)
    return found


def _a_librarys(function: types.FunctionType) -> bool:
    """Whether ``function`` is an installed library's own code (a named tuple's ``_make``, a
    base class's method), as a class the notebook made may hold it."""
    code = function.__code__
    return installed(code.co_filename) and _genuine(code)


def _generated_for(klass: type, function: types.FunctionType) -> bool:
    """Whether ``function`` is a method the standard library wrote for ``klass``, a dataclass
    or a named tuple (``__init__``, ``__repr__``, a named tuple's ``__new__``, ...), not code of
    the notebook's."""
    generated = "__dataclass_fields__" in vars(klass) or (
        issubclass(klass, tuple) and "_fields" in vars(klass))
    code = inspect.unwrap(function).__code__  # a dataclass's __repr__ is wrapped
    return generated and code.co_name in _GENERATED and not os.path.isfile(code.co_filename)


def _notebooks(value: object) -> bool:
    """Whether ``value`` is a function or class of the notebook's own making (its module is
    not an installed one), whose code is then checked as the graded object's is."""
    if not isinstance(value, (types.FunctionType, types.MethodType, functools.partial, type)):
        return False
    module = sys.modules.get(str(getattr(value, "__module__", None)))
    path = getattr(module, "__file__", None)
    return not (isinstance(path, str) and installed(path))


def _held(value: object, depth: int = 0) -> Iterator[tuple[str, object]]:
    """The functions and classes ``value`` holds, when it is a container the notebook made (a
    dict, list, tuple or set, a ``SimpleNamespace``), each with the route to it."""
    if depth > 2:
        return
    if isinstance(value, dict):
        items: Iterator[tuple[str, object]] = ((f"[{key!r}]"[:40], item)
                                               for key, item in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = ((f"[{i}]", item) for i, item in enumerate(value))
    elif isinstance(value, types.SimpleNamespace):
        items = ((f".{key}", item) for key, item in vars(value).items())
    else:
        return
    for route, item in list(items)[:1000]:
        if route == "['__builtins__']":  # what ``exec`` adds to a dict: Python's own
            continue
        if _notebooks(item):
            yield route, item
        else:
            yield from ((route + deeper, inner) for deeper, inner in _held(item, depth + 1))


def _helpers(function: types.FunctionType) -> Iterator[tuple[str, object]]:
    """What ``function`` may run as the notebook's code: the functions and classes it names
    that the notebook made, and those held in the containers it names."""
    for name, value in bound_names(function):
        if _notebooks(value):
            yield name, value
        else:
            yield from ((name + route, item) for route, item in _held(value))


def not_written_in_cells(value: object, digests: Collection[str] | None = None) -> str | None:
    """Why ``value`` (a student's function or class) was not written in a cell of this
    notebook, as a phrase that follows its name, or None when it was (or outside a kernel).

    In a Jupyter kernel, the code of each function it runs as its own, and of the notebook's
    helpers that function uses (through globals, closures and the containers they name,
    followed as deep as :data:`MAX_DEPTH`), must be code the kernel compiled from one of the
    cells it ran: its file name is the name the kernel gives that cell, and compiling that
    cell's text again gives the same code. Text run by ``exec``, ``eval`` or ``compile`` (under
    any file name), a ``types.FunctionType`` made from other code, a module file the notebook
    wrote, or a library function under the student's name, fails; a library's decorator around
    a cell's function is allowed. ``digests`` (by default those :func:`notebook_cells` set, the
    grader's): the digests of the notebook's code cells, so that a cell the code ran itself
    (``get_ipython().run_cell``) does not count."""
    shell = kernel_shell()
    if shell is None:
        return None
    cells = Cells(shell, current_digests() if digests is None else digests)
    seen: set[int] = set()

    def problem(function: types.FunctionType, may_be_library: bool, via: list[str]) -> str:
        if id(function) in seen or len(via) > MAX_DEPTH:
            return ""
        seen.add(id(function))
        code = function.__code__
        if may_be_library and installed(code.co_filename):
            return ""  # a library's decorator: what it wraps is checked
        through = f" (through `{'` and `'.join(via)}`)" if via else ""
        held = cells.holds(code)
        if held is None:
            return (f"{through} runs code from `{_where(code)[:80]}`, not from a cell of this "
                    "notebook")
        if not held:
            return (f"{through} runs code compiled under a cell's name from other text, not "
                    "that cell's code")
        for name, helper in _helpers(function):
            for inner, wrapper in _functions(helper):
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

