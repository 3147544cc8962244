"""The kernel computes, the grader judges: a check split in two.

Under ``course-grade``, the student's kernel runs a *probe*: the check's body with the
student's function wrapped in :func:`recording`, which keeps, for every call, a digest of the
inputs and the raw result (numbers, arrays as lists, strings, or the exception raised),
encoded by :func:`encode` as plain JSON data. Nothing the probe decides is used.

The grader process then runs the same body again (:meth:`Check.judge
<course_utils.checks.framework.Check.judge>`) with the student's function replaced by
:func:`replaying`: each call checks that its inputs are the ones the kernel saw and hands back
the recorded result, decoded strictly by :func:`decode` (``operator.index`` for integers, plain
``float`` arrays of the shape recorded, nothing else). The expected answers are computed there,
by the course's reference code in the grader's own process; the points are decided there.

Inputs are fresh each run: the grader draws a seed (:func:`fresh_seed`) that reaches the
kernel only with the probe cell, after the student's own cells have run.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from course_utils.checks.calling import student_line

__all__ = ["AxesData", "FigureData", "decode", "describe_figure", "encode", "fixed_or_fresh",
           "fresh_seed", "recording", "replaying", "run_seed", "said_when_graded"]

#: This run's seed; None: the fixed inputs students see. A context variable, not a global: the
#: grader judges several submissions at once in threads, each from its own seed.
_SEED: ContextVar[int | None] = ContextVar("course_check_seed", default=None)


def fresh_seed(base: int) -> int:
    """``base`` in a notebook; under the grader, a seed mixed from ``base`` and the run's."""
    run = _SEED.get()
    if run is None:
        return base
    return int(np.random.SeedSequence([run, base]).generate_state(1, dtype=np.uint64)[0]
               >> 1)


def fixed_or_fresh(base: int, hidden: object) -> int:
    """The seed of a check's inputs whose answers only the grader computes: :func:`fresh_seed`
    where this copy of the course has the grader's answers (``hidden``,
    :func:`~course_utils.checks.registry.load_hidden`), else ``base``, the fixed case whose
    answers the check stores."""
    return fresh_seed(base) if hidden is not None else base


def said_when_graded(done: str, hidden: object, inputs: str) -> str:
    """A passed part's message; without the grader's answers (a handout, where only the fixed
    cases run), it says that the grader also runs ``inputs`` drawn afresh."""
    return done if hidden is not None else f"{done} (when graded, it also runs on fresh {inputs})"


@contextmanager
def run_seed(seed: int | None) -> Iterator[None]:
    """Draw the checks' random inputs from ``seed`` inside the block (in this thread only)."""
    token = _SEED.set(seed)
    try:
        yield
    finally:
        _SEED.reset(token)


# ------------------------------------------------------------------------ figures as data


@dataclass(frozen=True)
class AxesData:
    """What a check reads from one chart: texts, bars ``(x, width, height)``, labelled lines
    ``(label, x values, y values)``, tick labels."""

    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    legend: tuple[str, ...] | None = None  # None: no legend
    bars: tuple[tuple[float, float, float], ...] = ()
    lines: tuple[tuple[str, tuple[float, ...], tuple[float, ...]], ...] = ()
    xticklabels: tuple[str, ...] = ()


@dataclass(frozen=True)
class FigureData:
    """A matplotlib figure described as plain data: its charts, colour bars left out."""

    axes: tuple[AxesData, ...] = ()


def _values(data: object) -> tuple[float, ...]:
    """A line's x or y data as floats (a category axis's labels or dates: NaN, not a crash)."""
    try:
        array = np.asarray(data, dtype=float).ravel()
    except (TypeError, ValueError):
        array = np.full(np.size(data), np.nan)  # type: ignore[arg-type]
    return tuple(float(v) for v in array[:1000])


def describe_figure(figure: object) -> object:
    """A matplotlib ``Figure`` as :class:`FigureData` (anything else unchanged)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    if not isinstance(figure, Figure):
        return figure
    charts = []
    for ax in figure.axes:
        if ax.get_label() == "<colorbar>":
            continue
        box = ax.get_legend()
        charts.append(AxesData(
            title=str(ax.get_title())[:_TEXT], xlabel=str(ax.get_xlabel())[:_TEXT],
            ylabel=str(ax.get_ylabel())[:_TEXT],
            legend=None if box is None else tuple(str(t.get_text())[:_TEXT]
                                                  for t in box.get_texts()),
            bars=tuple((float(p.get_x()), float(p.get_width()), float(p.get_height()))
                       for p in ax.patches if isinstance(p, Rectangle))[:1000],
            lines=tuple((str(line.get_label())[:_TEXT], _values(line.get_xdata()),
                         _values(line.get_ydata()))
                        for line in ax.get_lines())[:100],
            xticklabels=tuple(str(t.get_text())[:_TEXT] for t in ax.get_xticklabels())[:100],
        ))
    return FigureData(tuple(charts))


def _figure_data(value: object) -> FigureData:
    """:class:`FigureData` back from the plain data :func:`encode` made of it, strictly."""
    def texts(items: object) -> tuple[str, ...]:
        if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
            raise ValueError("texts expected")
        return tuple(t[:_TEXT] for t in items)

    if not isinstance(value, list) or len(value) > 100:
        raise ValueError("a list of charts expected")
    charts = []
    for ax in value:
        if not isinstance(ax, dict):
            raise ValueError("a chart expected")
        legend = ax.get("legend")
        bars = tuple(tuple(_number(n) for n in bar) for bar in ax.get("bars", []))
        if any(len(bar) != 3 for bar in bars):
            raise ValueError("bars are (x, width, height)")
        lines = tuple((texts([label])[0], tuple(_number(x) for x in xs),
                       tuple(_number(y) for y in ys)) for label, xs, ys in ax.get("lines", []))
        charts.append(AxesData(
            title=texts([ax.get("title", "")])[0], xlabel=texts([ax.get("xlabel", "")])[0],
            ylabel=texts([ax.get("ylabel", "")])[0],
            legend=None if legend is None else texts(legend),
            bars=bars, lines=lines,  # type: ignore[arg-type]
            xticklabels=texts(ax.get("xticklabels", []))))
    return FigureData(tuple(charts))


# --------------------------------------------------------------------- raw results as data

_MAX_ITEMS = 100_000  # numbers in one result: more is not an answer to any check
_TEXT = 1000  # characters of one string: a message with its hint fits


class TooLarge(ValueError):
    pass


def encode(value: object, depth: int = 0) -> dict:
    """``value`` as plain JSON data, without calling anything it defines beyond NumPy's and
    PyTorch's own conversions. Used in the kernel: what it yields is only ever *data*."""
    if depth > 6:
        return {"t": "other", "name": "deeply nested value"}
    if value is None:
        return {"t": "none"}
    if isinstance(value, (bool, np.bool_)):
        return {"t": "bool", "v": bool(value)}
    if isinstance(value, (int, np.integer)):
        return {"t": "int", "v": int(operator.index(value))}
    if isinstance(value, (float, np.floating)):
        return {"t": "float", "v": float(value)}
    if isinstance(value, str):
        return {"t": "str", "v": value[:_TEXT]}
    if isinstance(value, FigureData):
        return {"t": "figure", "v": [asdict(ax) for ax in value.axes]}
    if type(value).__name__ == "Figure" and type(value).__module__.startswith("matplotlib"):
        return encode(describe_figure(value), depth)
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.size > _MAX_ITEMS:
            raise TooLarge(f"an array of {value.size} numbers")
        kind = {"b": "bool", "i": "int", "u": "int", "f": "float"}.get(value.dtype.kind)
        if kind is None:
            return {"t": "other", "name": f"array of {value.dtype}"}
        return {"t": "array", "kind": kind, "shape": list(value.shape),
                "v": np.asarray(value, dtype={"bool": bool, "int": np.int64,
                                              "float": float}[kind]).tolist()}
    if isinstance(value, (list, tuple)):
        if len(value) > _MAX_ITEMS:
            raise TooLarge(f"a sequence of {len(value)} items")
        return {"t": "tuple" if isinstance(value, tuple) else "list",
                "v": [encode(item, depth + 1) for item in value]}
    if isinstance(value, dict):
        if len(value) > _MAX_ITEMS:
            raise TooLarge(f"a dict of {len(value)} items")
        return {"t": "dict", "v": [[encode(k, depth + 1), encode(v, depth + 1)]
                                   for k, v in value.items()]}
    return {"t": "other", "name": type(value).__name__[:80]}


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a number: {type(value).__name__}")
    return float(value)


def decode(data: object, depth: int = 0) -> Any:
    """A raw result back from :func:`encode`'s data, strictly: plain ``int``, ``float``,
    ``bool``, ``str``, ``None``, lists, tuples, dicts and float/int/bool arrays of the shape
    recorded; anything else raises ``ValueError``. Used in the grader."""
    if depth > 7 or not isinstance(data, dict):
        raise ValueError("not a recorded result")
    kind, value = data.get("t"), data.get("v")
    if kind == "none":
        return None
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError("not a bool")
        return value
    if kind == "int":
        if isinstance(value, bool):
            raise ValueError("not an int")
        return int(operator.index(value))  # type: ignore[arg-type]
    if kind == "float":
        return _number(value)
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError("not a str")
        return value[:_TEXT]
    if kind == "array":
        dtype = {"bool": bool, "int": np.int64, "float": float}[str(data.get("kind"))]
        shape = tuple(operator.index(n) for n in data.get("shape", ()))
        if not isinstance(value, (list, bool, int, float)):
            raise ValueError("not an array")
        array = np.asarray(value, dtype=dtype)
        if array.shape != shape or array.size > _MAX_ITEMS:
            raise ValueError("an array whose shape does not match its record")
        return array
    if kind in ("list", "tuple"):
        if not isinstance(value, list) or len(value) > _MAX_ITEMS:
            raise ValueError("not a sequence")
        items = [decode(item, depth + 1) for item in value]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        if not isinstance(value, list):
            raise ValueError("not a dict")
        return {_hashable(decode(k, depth + 1)): decode(v, depth + 1) for k, v in value}
    if kind == "figure":
        return _figure_data(value)
    if kind == "other":
        return type(str(data.get("name", "object"))[:80] or "object", (), {})()
    raise ValueError(f"unknown kind of result {kind!r}")


def _hashable(key: object) -> object:
    if isinstance(key, list):
        return tuple(_hashable(k) for k in key)
    if isinstance(key, np.ndarray):
        raise ValueError("an array as a dict key")
    return key


def digest(args: tuple) -> str:
    """A fingerprint of a call's inputs, the same in the kernel and in the grader."""
    h = hashlib.sha256()

    def feed(value: object) -> None:
        if isinstance(value, np.ndarray):
            h.update(f"a{value.dtype.str}{value.shape}".encode())
            h.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, (list, tuple)):
            h.update(f"s{len(value)}".encode())
            for item in value:
                feed(item)
        elif isinstance(value, (str, int, float, bool)) or value is None:
            h.update(repr((type(value).__name__, value)).encode())
        else:
            h.update(type(value).__name__.encode())

    feed(args)
    return h.hexdigest()[:32]


# ------------------------------------------------------------------------- the two sides

#: Exceptions rebuilt with their own class in the grader, so the check reacts as it did in
#: the kernel; any other is rebuilt as a plain ``Exception`` subclass of the same name.
_BUILTIN = {e.__name__: e for e in (
    ValueError, TypeError, IndexError, KeyError, AttributeError, ZeroDivisionError,
    OverflowError, FloatingPointError, ArithmeticError, RuntimeError, NameError,
    AssertionError, NotImplementedError, RecursionError, MemoryError, KeyboardInterrupt,
    SystemExit, StopIteration, UnboundLocalError, LookupError, Exception)}


def recording(function: Callable, calls: list[dict]) -> Callable:
    """``function``, appending each call's input digest and raw result (or error) to
    ``calls``. Runs in the kernel."""
    def recorded(*args: object) -> object:
        entry: dict = {"args": digest(args)}
        calls.append(entry)
        try:
            result = function(*args)
        except BaseException as error:
            entry["raised"] = {"name": type(error).__name__[:80],
                               "message": str(error)[:_TEXT] if not isinstance(
                                   error, KeyboardInterrupt) else "",
                               "line": student_line(error)[:_TEXT]}
            raise
        try:
            entry["result"] = encode(result)
        except TooLarge as error:
            entry["result"] = {"t": "other", "name": f"too large ({error})"}
        return result

    recorded.__name__ = getattr(function, "__name__", "function")
    return recorded


class ReplayMismatch(BaseException):
    """The kernel's record does not belong to this run's inputs (or was tampered with); a
    ``BaseException``, so that no ``except Exception`` in a check body mistakes it for an error
    of the student's function."""


def replaying(calls: list, name: str, problems: list[str]) -> Callable:
    """A stand-in for the student's function that answers each call with the kernel's
    recorded result, once its inputs are the ones the kernel was given. Runs in the grader;
    a record that does not fit is noted in ``problems`` (the part then scores 0)."""
    position = [0]

    def mismatch(why: str) -> ReplayMismatch:
        problems.append(why)
        return ReplayMismatch(why)

    def replayed(*args: object) -> object:
        index = position[0]
        position[0] += 1
        if not isinstance(calls, list) or index >= len(calls) or not isinstance(
                calls[index], dict) or calls[index].get("args") != digest(args):
            raise mismatch(f"the kernel did not report `{name}`'s result for this run's "
                           "inputs (it stopped, or the record was changed)")
        entry = calls[index]
        raised = entry.get("raised")
        if isinstance(raised, dict):
            kind = str(raised.get("name", "Exception"))[:80] or "Exception"
            cls = _BUILTIN.get(kind) or type(kind, (Exception,), {})
            error = cls(str(raised.get("message", ""))[:_TEXT])
            error.course_student_line = str(raised.get("line", ""))[:_TEXT]
            raise error
        try:
            return decode(entry.get("result"))
        except (ValueError, TypeError, KeyError, OverflowError) as error:
            raise mismatch(f"`{name}`'s result could not be read as plain data "
                           f"({error})") from None

    replayed.__name__ = name
    return replayed
