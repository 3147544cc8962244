"""E10.2's Parts 3 and 4, judged: BLEU against sentence length, as the paper's Figure 2 draws it.

Two functions the student writes, called on small, known inputs (the same in the kernel and in
the grader, so each part is judged like any function's, see :mod:`course_utils.checks.probes`):

- ``bleu_curve(hypotheses, references, source_lengths, window, min_sentences)``: at every length
  from the shortest source to the longest, corpus BLEU of the sentences within ``window`` tokens
  of it (a sliding window, both ends included), where the window holds at least
  ``min_sentences`` of them;
- ``plot_bleu_curves(curves)``: the curves as lines, one per model, against the length.

The library has neither (notebook 4 scores three length buckets with bootstrap intervals, which
the exercise uses as given), so no code that answers them ships in the handout. Where the
grader's module :mod:`course_utils.checks.e10_2.hidden` is absent (a student's copy), the fixed
case's expected curves, and those of the known mistakes, are stored as numbers (``known.json``
beside this module, read into :data:`KNOWN`); the grader draws fresh sentences for every run, so
reciting the stored numbers earns nothing there, and a function that reads them from this module
earns nothing anywhere (it is one of the part's ``own_work`` modules).
:mod:`course_utils.checks.e10_2` registers each body as a part of the exercise.
"""

from __future__ import annotations

from collections.abc import Callable

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.probes import (
    AxesData,
    FigureData,
    describe_figure,
    fixed_or_fresh,
    said_when_graded,
)
from course_utils.checks.registry import known_answers, load_hidden

__all__ = ["CURVE_POINTS", "KNOWN", "PLOT_POINTS", "judge_bleu_curve", "judge_plot_curves"]

#: the grader's answers for fresh inputs (:mod:`.hidden`); a student handout has none
HIDDEN = load_hidden("E10.2")

CURVE_POINTS, PLOT_POINTS = 4, 3

_WORDS = "a man in a blue shirt is riding a bike down the street while two dogs run behind".split()

#: The fixed case's source lengths: gaps (6, 11, 14, 15), a thin middle, and enough at both
#: ends for the shortest and the longest length to get a point
LENGTHS = (3, 4, 4, 5, 7, 8, 8, 9, 10, 12, 12, 13, 16, 17, 20, 23, 24, 24)
#: The two calls of the check: (window, min_sentences)
CALLS = ((2, 3), (1, 2))


def _sentence(length: int, seed: int, noise: float) -> tuple[str, str]:
    """A reference of ``length`` words and a hypothesis with some words changed."""
    rng = np.random.default_rng(fixed_or_fresh(seed, HIDDEN))
    reference = [_WORDS[(seed + i) % len(_WORDS)] for i in range(length)]
    hypothesis = [w if rng.random() > noise else "xyz" for w in reference]
    return " ".join(hypothesis), " ".join(reference)


def _cases() -> tuple[list[str], list[str], list[int]]:
    pairs = [_sentence(n, seed, noise=0.3) for seed, n in enumerate(LENGTHS)]
    return [h for h, _ in pairs], [r for _, r in pairs], list(LENGTHS)


#: Each known mistake (as :mod:`.hidden` names it), with what it gets wrong
MISTAKES = {
    "strict window": "the window includes both of its ends: a sentence exactly `window` tokens "
                     "shorter or longer than the length belongs to it",
    "half-open window": "the window stops one short of its upper end (`range(a, b)` leaves out "
                        "`b`): it runs from length - window to length + window, both included",
    "lower end left out": "the window starts one too late: it runs from length - window to "
                          "length + window, both included",
    "strict minimum": "a window holding exactly `min_sentences` sentences is enough for a point",
    "no minimum": "a length whose window holds fewer than `min_sentences` sentences gets no "
                  "point: leave it out",
    "only present": "the curve has a point at every length from the shortest to the longest, "
                    "also at lengths no sentence has exactly: the window's neighbours fill them",
    "sentence average": "that is the average of sentence BLEU scores; BLEU is a corpus "
                        "statistic: score the window's sentences together",
}

#: The fixed case's curves, stored (a handout has no :mod:`.hidden` to compute them): the right
#: one for each call of :data:`CALLS`, and each known mistake's for the first call
KNOWN: dict[str, list[dict[int, float]]] = known_answers("E10.2")["bleu_curve"]


def _expected(cases: tuple, call: int, mistake: str | None = None) -> dict:
    """The curve of ``cases`` (:func:`_cases`) for call ``call`` of :data:`CALLS` (or a known
    mistake's): the grader's, or the stored one for the fixed case where the grader's module
    is absent."""
    if HIDDEN is not None:
        return HIDDEN.bleu_curve(*cases, *CALLS[call], mistake=mistake)
    return dict(KNOWN["right"][call] if mistake is None else KNOWN[mistake][0])


def _curve(got: object, given: str) -> dict[int, float]:
    """The student's curve as ``{int: float}``, in their order, or a failed check saying why
    it is not one."""
    if not isinstance(got, dict):
        raise CheckFailed(f"bleu_curve must return a dict {{length: BLEU}}; got "
                          f"{type(got).__name__} ({given})")
    out: dict[int, float] = {}
    for key, value in got.items():
        if isinstance(key, bool) or not isinstance(key, (int, np.integer, float, np.floating)) \
                or float(key) != int(key):
            raise CheckFailed(f"the curve's keys are lengths, whole numbers of tokens; got "
                              f"{key!r} ({given})")
        if hasattr(value, "score") and not isinstance(value, (int, float, np.number)):
            raise CheckFailed(f"the value at length {key} holds a sacreBLEU "
                              f"{type(value).__name__} object: return its `.score`, a number")
        try:
            out[int(key)] = float(value)
        except (TypeError, ValueError):
            raise CheckFailed(f"the value at length {key} must be a number (BLEU); got "
                              f"{type(value).__name__} ({given})") from None
    return out


def _same(got: dict[int, float], want: dict) -> bool:
    return set(got) == set(want) and all(np.isclose(got[k], want[k], atol=1e-6) for k in want)


def _given(call: int) -> str:
    window, least = CALLS[call]
    return (f"{len(LENGTHS)} sentences of {min(LENGTHS)} to {max(LENGTHS)} tokens, "
            f"window={window}, min_sentences={least}")


def _explain(got: dict[int, float], want: dict, cases: tuple, call: int) -> CheckFailed:
    """Why ``got`` is not the curve: a known mistake named, else where it differs."""
    if not got:
        return CheckFailed(f"your curve is empty; it should have {len(want)} points "
                           f"(given {_given(call)}): use the arguments `window` and "
                           "`min_sentences`, not numbers of your own")
    if call == 0:
        for mistake, hint in MISTAKES.items():
            if _same(got, _expected(cases, 0, mistake)):
                return CheckFailed(hint)
    if set(got) != set(want):
        return CheckFailed(f"the curve should have points at lengths {sorted(want)} "
                           f"(given {_given(call)}); yours has {sorted(got)}")
    off = [k for k in sorted(want) if not np.isclose(got[k], want[k], atol=1e-6)]
    return CheckFailed(f"BLEU is off at length(s) {off} (given {_given(call)}): at each "
                       "length, `sacrebleu.corpus_bleu(hypotheses, [references]).score` over "
                       "the sentences in its window")


def _run(bleu_curve: Callable, cases: tuple, call: int) -> tuple[dict[int, float], dict]:
    """The student's curve for call ``call`` of :data:`CALLS`, and the one expected."""
    hypotheses, references, lengths = cases
    got = call_student(bleu_curve, list(hypotheses), list(references), list(lengths),
                       *CALLS[call], given=_given(call))
    return _curve(got, f"given {_given(call)}"), _expected(cases, call)


def judge_bleu_curve(bleu_curve: Callable) -> str:
    cases = _cases()
    got, want = _run(bleu_curve, cases, 0)
    if not _same(got, want):
        raise _explain(got, want, cases, 0)
    other, want = _run(bleu_curve, cases, 1)
    if not _same(other, want):
        reason = _explain(other, want, cases, 1)
        (window, least), (first_window, first_least) = CALLS[1], CALLS[0]
        raise CheckFailed(f"right for window={first_window}, min_sentences={first_least}, "
                          f"but not for window={window}, min_sentences={least}: "
                          f"{reason.message}", points=CURVE_POINTS // 2)
    if list(got) != sorted(got) or list(other) != sorted(other):
        raise CheckFailed("right values, but the lengths are not in increasing order: a line "
                          "drawn through the points in that order would zigzag",
                          points=CURVE_POINTS - 1)
    done = "corpus BLEU over a sliding window of lengths, at every length that has enough"
    return said_when_graded(done, HIDDEN, "sentences")


#: The plot check's curves: the same lengths for both models, with a gap (8 and 9 have no point)
CURVES = {"vanilla": {5: 21.5, 6: 20.0, 7: 19.5, 10: 15.0, 11: 14.5, 12: 12.0},
          "attention": {5: 27.0, 6: 26.5, 7: 26.0, 10: 24.0, 11: 23.5, 12: 23.0}}


def _figure(result: object) -> AxesData:
    """The one chart of the student's figure, described as data (:class:`FigureData`, which
    is also what the grader receives from the kernel); the figure itself is closed."""
    if isinstance(result, Figure):
        data = describe_figure(result)
        plt.close(result)
        result = data
    if not isinstance(result, FigureData):
        raise CheckFailed(f"plot_bleu_curves must return the matplotlib Figure (e.g. `return "
                          f"fig`); got {type(result).__name__}")
    if len(result.axes) != 1:
        raise CheckFailed(f"draw one chart (one Axes) with a line per model; got "
                          f"{len(result.axes)}")
    return result.axes[0]


def _rounded(values: object) -> list[float]:
    return [round(float(v), 6) for v in values]  # type: ignore[attr-defined]


def _line_fault(name: str, xs: list[float], ys: list[float], curve: dict) -> str | None:
    """What is wrong with the line drawn for model ``name``, if anything."""
    lengths, bleu = _rounded(curve), _rounded(curve.values())
    if xs == lengths and ys == bleu:
        return None
    if xs == bleu and ys == lengths:
        return (f"the {name} line has BLEU on the x axis and the lengths on the y axis: the "
                "length goes along x, as in the paper's figure")
    if ys == bleu and xs == _rounded(range(len(curve))):
        return (f"the {name} line's x values are 0, 1, 2, ... (the points' positions), not the "
                f"lengths: plot against the dict's keys, so that a gap (here from 7 to 10 "
                f"tokens) keeps its width")
    if ys == bleu:
        return f"the {name} line's x values should be the lengths, {lengths}"
    return f"the {name} line should go through its BLEU values, {bleu}, at lengths {lengths}"


def judge_plot_curves(plot_bleu_curves: Callable) -> str:
    ax = _figure(call_student(plot_bleu_curves, {k: dict(v) for k, v in CURVES.items()},
                              given="two curves of 6 points, lengths 5 to 12 with a gap"))
    lines = [(label, list(xs), list(ys)) for label, xs, ys in ax.lines
             if not label.startswith("_")]
    if len(lines) != len(CURVES):
        raise CheckFailed(f"expected one labelled line per model ({len(CURVES)}: "
                          f"{', '.join(CURVES)}; `label=` the model's name); found {len(lines)}"
                          + ("" if lines else " (points or bars draw no line: use `ax.plot`)"))
    faults = []
    for name, curve in CURVES.items():
        mine = [(xs, ys) for label, xs, ys in lines if name in label.lower()]
        if len(mine) != 1:
            faults.append(f"label exactly one line with the model's name {name!r}")
            continue
        fault = _line_fault(name, _rounded(mine[0][0]), _rounded(mine[0][1]), curve)
        if fault:
            faults.append(fault)
    if faults:
        raise CheckFailed("; and ".join(faults))
    missing = [what for what, there in [("a title", ax.title), ("an x-axis label", ax.xlabel),
                                        ("a y-axis label", ax.ylabel)] if not there.strip()]
    if ax.legend is None or not all(any(name in t.lower() for t in ax.legend) for name in CURVES):
        missing.append("a legend naming the models")
    if missing:
        raise CheckFailed(f"the right lines, but the chart needs {', '.join(missing[:-1])}"
                          f"{' and ' if len(missing) > 1 else ''}{missing[-1]}",
                          points=PLOT_POINTS - 1)
    return "a line per model through its points, against the length, labelled"
