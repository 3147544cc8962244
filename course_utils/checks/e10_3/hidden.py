"""The grader's criteria for E10.3's finds: does a record of the student's model show monotonic
alignment, a reordering, a many-to-one alignment?

A student's copy of the course (``course-handout``) leaves out every ``checks/hidden_*.py``:
there, :mod:`course_utils.checks.e10_3` records each pick and prints its hard alignment for the
student to read against the criteria the exercise states (``e10_3.CRITERIA``), and the grader,
which runs from the course's repository, decides with this module. Without it, a student cannot
loop over the test set asking which sentence passes: the finding stays a matter of reading
heatmaps.

Each function takes an :class:`~course_utils.checks.e10_3.Alignment` (rows: German words,
columns: English tokens) and the exercise's ``Thresholds``. :func:`lacks` names what a pick
lacks (``None`` when it has the pattern); :func:`shows` says where the pattern is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from course_utils.alignment import word_class

__all__ = ["crossing", "lacks", "many_to_one", "monotonic_steps", "shows"]


def _content(word: str) -> bool:
    """A German content word: ``word_class`` says so, and the model knew it (not ``<unk>``)."""
    return word != "<unk>" and word_class(word) == "content"


def _confident_words(found: Any, limits: Any) -> list[int]:
    """German words, not punctuation, whose largest weight is at least ``limits.confident``."""
    return [step for step, word in enumerate(found.output_tokens)
            if word_class(word) != "punctuation"
            and found.weights[step].max() >= limits.confident]


def monotonic_steps(found: Any, limits: Any) -> tuple[list[int], tuple[int, int] | None]:
    """The confident German words, and the first pair of them (earlier, later) whose hard
    alignments move left, if any."""
    steps = _confident_words(found, limits)
    aligned = found.weights.argmax(axis=1)
    furthest = None  # the confident step read furthest right so far
    for step in steps:
        if furthest is not None and aligned[step] < aligned[furthest]:
            return steps, (furthest, step)
        if furthest is None or aligned[step] >= aligned[furthest]:
            furthest = step
    return steps, None


def crossing(found: Any, limits: Any) -> tuple[int, int] | None:
    """The first local crossing that the reordering criterion accepts: confident German words
    ``(i, k)``, ``i < k <= i + near``, neither punctuation, one a content word, with
    ``a[k] < a[i] <= a[k] + near``, where ``a[k]`` is read by no confident content word before
    ``k``."""
    steps = _confident_words(found, limits)
    aligned = found.weights.argmax(axis=1)
    for n, i in enumerate(steps):
        for k in steps[n + 1:]:
            if k - i > limits.near:
                break
            content = any(_content(found.output_tokens[s]) for s in (i, k))
            first_time = all(aligned[s] != aligned[k] for s in steps
                             if s < k and _content(found.output_tokens[s]))
            if content and aligned[k] < aligned[i] <= aligned[k] + limits.near \
                    and first_time:
                return i, k
    return None


def many_to_one(found: Any, limits: Any) -> tuple[int, list[int]] | None:
    """The first German content word that gives at least ``limits.share`` to each of two or
    more neighbouring English words that are not punctuation: ``(step, English positions)``."""
    for step, word in enumerate(found.output_tokens):
        if not _content(word):
            continue
        strong = [int(j) for j in np.flatnonzero(found.weights[step] >= limits.share)
                  if word_class(found.source_tokens[j]) != "punctuation"]
        for left in strong:
            run = [left]
            while run[-1] + 1 in strong:
                run.append(run[-1] + 1)
            if len(run) > 1:  # two neighbours at least
                return step, run
    return None


def lacks(part: str, found: Any, limits: Any) -> str | None:
    """What the pick lacks for ``part``, naming its own words, or ``None`` when it shows the
    pattern."""
    if part == "monotonic":
        steps, back = monotonic_steps(found, limits)
        if back is not None:
            earlier, later = back
            return (f"{found.reads(later)} is read left of {found.reads(earlier)}, written "
                    "before it: the hard alignment moves left (a crossing)")
        if len(steps) < limits.monotonic_words:
            return (f"only {len(steps)} German words (not punctuation) are read confidently "
                    f"(largest weight >= {limits.confident}); the criterion asks for "
                    f"{limits.monotonic_words}: try a longer sentence, or one your model "
                    "translates more surely")
        read = {int(found.weights[s].argmax()) for s in steps}
        if len(read) < limits.monotonic_words:
            return (f"its confident German words read only {len(read)} different English "
                    f"words; the criterion asks for {limits.monotonic_words}")
        return None
    if part == "reordering":
        if crossing(found, limits) is None:
            return (f"no two confidently read German words (one of them a content word, at "
                    f"most {limits.near} steps apart) cross over a nearby English word read for "
                    "the first time: each reads an English word right of the one before, or a "
                    "word already read")
        return None
    if part == "many-to-one":
        if many_to_one(found, limits) is None:
            return (f"no German content word gives at least {limits.share} of its weight to "
                    "each of two neighbouring English words (not punctuation): each reads one "
                    "English word, or splits its weight between words that are not neighbours")
        return None
    raise ValueError(f"no criterion for {part!r}")


def shows(part: str, found: Any, limits: Any) -> str:
    """Where ``found`` shows ``part``, for the passed check's message."""
    if part == "monotonic":
        steps, _ = monotonic_steps(found, limits)
        return (f"{len(steps)} confidently read German words, left to right: "
                + ", ".join(found.reads(s) for s in steps))
    if part == "reordering":
        i, k = crossing(found, limits) or (0, 0)
        return f"{found.reads(i)}, then {found.reads(k)}: a crossing"
    step, columns = many_to_one(found, limits) or (0, [])
    return (f"{found.output_tokens[step]} reads "
            + " + ".join(f"{found.source_tokens[j]} {found.weights[step, j]:.2f}"
                         for j in columns))
