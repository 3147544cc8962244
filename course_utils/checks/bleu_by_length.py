"""E10.2's Parts 3 to 5, judged: BLEU by source length, its bar chart, and the loss curves.

Three functions the student writes, called on small, known inputs (the same in the kernel and
in the grader, so each part is judged like any function's, see :mod:`course_utils.checks.probes`):

- ``bleu_by_bucket(hypotheses, references, source_lengths)``: corpus BLEU per source-length
  bucket (``"< 10"``, ``"10-20"``, ``"> 20"``), ``None`` for an empty bucket;
- ``plot_bleu_by_length(scores)``: a grouped bar chart, one group per bucket, one bar per model;
- ``plot_loss_curves(histories)``: training and validation loss of every model in one figure.

:mod:`course_utils.checks.e10_2` registers each body as a part of the exercise.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import matplotlib.pyplot as plt
import numpy as np
import sacrebleu
from matplotlib.figure import Figure

from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.probes import AxesData, FigureData, describe_figure, fresh_seed
from course_utils.metrics import LENGTH_BUCKETS
from course_utils.training import History

__all__ = ["BUCKETS", "KNOWN", "judge_bleu_by_bucket", "judge_loss_curves", "judge_plot_bleu"]

BUCKETS = tuple(name for name, _, _ in LENGTH_BUCKETS)  # the lesson's buckets, one home

HIDDEN: ModuleType | None
try:  # the grader's answers for fresh sentences; a student handout has no such module
    import course_utils.checks.hidden_e10_2 as HIDDEN
except ImportError:
    HIDDEN = None


_WORDS = "a man in a blue shirt is riding a bike down the street while two dogs run behind".split()


def _sentence(length: int, seed: int, noise: float) -> tuple[str, str]:
    """A reference of ``length`` words and a hypothesis with some words changed."""
    # without the grader's answers, the fixed case only (fresh_seed: the seed, unless graded)
    rng = np.random.default_rng(fresh_seed(seed) if HIDDEN else seed)
    reference = [_WORDS[(seed + i) % len(_WORDS)] for i in range(length)]
    hypothesis = [w if rng.random() > noise else "xyz" for w in reference]
    return " ".join(hypothesis), " ".join(reference)


def _cases():
    lengths = [3, 9, 9, 10, 15, 20, 20, 21, 30, 6]
    pairs = [_sentence(n, seed, noise=0.3) for seed, n in enumerate(lengths)]
    return [h for h, _ in pairs], [r for _, r in pairs], lengths


_BOUNDS = [(low, high) for _, low, high in LENGTH_BUCKETS]


#: The boundaries off by one, each with what it gets wrong (a known mistake)
_OFF_BY_ONE = [
    (((0, 10), (11, 20), (21, 10**9)), "exactly 10 tokens belongs to '10-20'"),
    (((0, 9), (10, 21), (22, 10**9)), "exactly 21 tokens belongs to '> 20'"),
    (((0, 9), (10, 19), (20, 10**9)), "exactly 20 tokens belongs to '10-20'"),
]

#: The fixed case's BLEU per bucket, and with each of the boundaries off by one (in the order of
#: ``_OFF_BY_ONE``), stored: a handout has no :mod:`hidden_e10_2` to compute them
KNOWN = {'< 10': 38.96556032040086, '10-20': 44.171414087400315, '> 20': 44.224531721814444}
KNOWN_OFF_BY_ONE = [
    {'< 10': 30.80840787435306, '10-20': 49.363914616177404, '> 20': 44.224531721814444},
    {'< 10': 38.96556032040086, '10-20': 45.15047386936288, '> 20': 41.54834754923292},
    {'< 10': 38.96556032040086, '10-20': 40.29422067220278, '> 20': 45.11588814821725},
]


def _expected(hypotheses, references, lengths, bounds=_BOUNDS):
    """BLEU per bucket: the grader's, or the stored answer for the fixed case (``fresh_seed``
    gives its bases in a notebook) where the grader's module is absent."""
    if HIDDEN is not None:
        return HIDDEN.bleu_by_bucket(hypotheses, references, lengths, BUCKETS, bounds)
    if bounds == _BOUNDS:
        return dict(KNOWN)
    return dict(KNOWN_OFF_BY_ONE[[shift for shift, _ in _OFF_BY_ONE].index(bounds)])


def _numbers(got: dict, where: str) -> dict:
    """The student's scores as floats (None stays None), or a failed check saying why not."""
    out: dict[str, float | None] = {}
    for bucket, value in got.items():
        if value is None:
            out[bucket] = None
            continue
        if hasattr(value, "score") and not isinstance(value, (int, float, np.number)):
            raise CheckFailed(f"bucket {bucket!r} ({where}) holds a sacreBLEU "
                              f"{type(value).__name__} object: return its `.score`, a number")
        try:
            out[bucket] = float(value)
        except (TypeError, ValueError):
            raise CheckFailed(f"bucket {bucket!r} ({where}) must hold a number (or None when "
                              f"empty); got {type(value).__name__}") from None
    return out


def judge_bleu_by_bucket(bleu_by_bucket: Callable) -> str:
    hypotheses, references, lengths = _cases()
    full = f"{len(lengths)} sentences of {min(lengths)} to {max(lengths)} tokens"
    got = call_student(bleu_by_bucket, list(hypotheses), list(references), list(lengths),
                       given=full)
    if not isinstance(got, dict):
        raise CheckFailed(f"bleu_by_bucket must return a dict; got {type(got).__name__}")
    if set(got) != set(BUCKETS):
        raise CheckFailed(f"the keys must be {list(BUCKETS)}; got {sorted(got)}")
    got = _numbers(got, full)
    expected = _expected(hypotheses, references, lengths)
    wrong = [b for b in BUCKETS
             if got[b] is None or not np.isclose(float(got[b]), expected[b], atol=1e-6)]
    if wrong:
        for shift, hint in _OFF_BY_ONE:
            other = _expected(hypotheses, references, lengths, shift)
            if all(got[b] is not None and np.isclose(float(got[b]), other[b]) for b in BUCKETS):
                raise CheckFailed(f"bucket boundaries are off: a sentence of {hint}")
        averages = {}
        for name, (low, high) in zip(BUCKETS, ((0, 9), (10, 20), (21, 10**9))):
            chosen = [i for i, n in enumerate(lengths) if low <= n <= high]
            averages[name] = np.mean([sacrebleu.sentence_bleu(hypotheses[i], [references[i]]).score
                                      for i in chosen])
        if all(got[b] is not None and np.isclose(float(got[b]), averages[b]) for b in BUCKETS):
            raise CheckFailed("that is the average of sentence BLEU scores; BLEU is a corpus "
                              "statistic: score each bucket's sentences together")
        raise CheckFailed(f"BLEU is off for bucket(s) {', '.join(repr(b) for b in wrong)}: "
                          "use sacrebleu.corpus_bleu(hypotheses, [references]) per bucket")
    few = "2 sentences of 3 and 9 tokens (so the '10-20' and '> 20' buckets are empty)"
    empty = call_student(bleu_by_bucket, hypotheses[:2], references[:2], lengths[:2], given=few)
    if not isinstance(empty, dict) or empty.get("> 20", "missing") is not None:
        raise CheckFailed("right on full buckets, but an empty bucket must map to None",
                          points=2)
    done = "corpus BLEU per bucket, with the lesson's boundaries"
    return done if HIDDEN else f"{done} (when graded, it also runs on fresh sentences)"


_SCORES = {"vanilla": {"< 10": 30.5, "10-20": 22.0, "> 20": 12.5},
           "attention": {"< 10": 36.0, "10-20": 31.5, "> 20": 25.0}}


def _figure(result: object, what: str) -> AxesData:
    """The one chart of the student's figure, described as data (:class:`FigureData`, which
    is also what the grader receives from the kernel); the figure itself is closed."""
    if isinstance(result, Figure):
        data = describe_figure(result)
        plt.close(result)
        result = data
    if not isinstance(result, FigureData):
        raise CheckFailed(f"{what} must return the matplotlib Figure (e.g. `return fig`); "
                          f"got {type(result).__name__}")
    if len(result.axes) != 1:
        raise CheckFailed(f"{what} should draw one chart (one Axes); got {len(result.axes)}")
    ax = result.axes[0]
    missing = [name for name, text in [("a title", ax.title),
                                       ("a y-axis label", ax.ylabel)] if not text]
    if missing:
        raise CheckFailed(f"the chart needs {' and '.join(missing)}")
    if ax.legend is None:
        raise CheckFailed("the chart needs a legend naming the models")
    return ax


def judge_plot_bleu(plot_bleu_by_length: Callable) -> str:
    ax = _figure(plot_bleu_by_length({k: dict(v) for k, v in _SCORES.items()}),
                 "plot_bleu_by_length")
    bars = [(x, width, height) for x, width, height in ax.bars if height > 0]
    heights = sorted(round(height, 6) for _, _, height in bars)
    expected = sorted(v for scores in _SCORES.values() for v in scores.values())
    if heights != expected:
        raise CheckFailed(f"expected one bar per model and bucket ({len(expected)} bars "
                          f"with the given scores); found {len(heights)} bars"
                          + ("" if len(heights) != len(expected) else " with other heights"))
    legend = list(ax.legend or ())
    if sorted(legend) != sorted(_SCORES):
        raise CheckFailed(f"the legend should name the models {sorted(_SCORES)}; got {legend}")
    centres = {round(x + width / 2, 6) for x, width, _ in bars}
    if len(centres) < len(expected):
        raise CheckFailed("some bars are drawn on top of each other: in each group, shift "
                          "each model's bars sideways (x + offset, width / number of models)")
    ticks = " ".join(ax.xticklabels)
    if not all(bucket in ticks for bucket in BUCKETS):
        raise CheckFailed("label each group of bars with its bucket ('< 10', '10-20', '> 20')")
    return "one group per bucket, one bar per model, labelled"


def _history(offset: float) -> History:
    return History(epoch=[1, 2, 3], train_loss=[4.0 + offset, 3.0 + offset, 2.5 + offset],
                   val_loss=[3.8 + offset, 3.1 + offset, 2.9 + offset],
                   val_token_accuracy=[0.3, 0.4, 0.5], val_exact_match=[0, 0, 0],
                   seconds=[1, 2, 3])


def judge_loss_curves(plot_loss_curves: Callable) -> str:
    histories = {"vanilla": _history(0.5), "attention": _history(0.0)}
    ax = _figure(plot_loss_curves(histories), "plot_loss_curves")
    lines = [(label, ys) for label, ys in ax.lines if not label.startswith("_")]
    if len(lines) != 4:
        raise CheckFailed(f"expected 4 labelled lines (training and validation loss of each "
                          f"model); found {len(lines)}")
    wanted = [list(h.train_loss) for h in histories.values()] + [
        list(h.val_loss) for h in histories.values()]
    drawn = [list(np.round(np.asarray(ys, dtype=float), 6)) for _, ys in lines]
    if sorted(drawn) != sorted(wanted):
        raise CheckFailed("the lines should be each model's train_loss and val_loss per epoch")
    for (name, _), ydata in zip(lines, drawn):  # each label must say what its line shows
        label = name.lower()
        for model, history in histories.items():
            for kind, values, words in [("training", history.train_loss, ("train",)),
                                        ("validation", history.val_loss, ("val", "held"))]:
                if ydata == list(values) and (model not in label
                                              or not any(w in label for w in words)):
                    raise CheckFailed(f"the line labelled {name!r} shows the {kind} loss of "
                                      f"the {model} model: its label should name both")
    if not ax.xlabel:
        raise CheckFailed("label the x axis (epoch)")
    return "training and validation loss of both models, labelled"
