"""Checks for exercise E10.1: attention computed by hand, for a batch of padded sentences.

Inputs (the course page's): h_1 = [1, 0], h_2 = [0, 1], h_3 = [1, 1], s_0 = [0.5, 0.5],
W_s = W_h = I, v = [1, 1], given as a batch of one sentence (:data:`INPUTS`).

Students write, in NumPy, the batched form notebook 2 then builds in PyTorch: ``B`` sentences
padded to ``T_x`` positions, one decoder state each, a mask True at the real tokens. Each check
runs the student's function on E10.1's inputs and on fresh padded batches of other sizes (so a
hard-coded answer does not pass), compares with the library's one-sentence reference,
:func:`course_utils.attention.additive_attention`, called sentence by sentence (the batched
answer ships nowhere), and names the likely mistake (:mod:`course_utils.checks.e10_1.mistakes`)
without printing the expected numbers. Part 4 asks for a prediction first (a second query,
``s_0' = [0.5, -0.5]``), then ``winner`` for any batch, then what additive attention rewards
with E10.1's parameters, in writing.

Points: a recognised wrong formula earns nothing, even where E10.1's identity matrices or its
batch of one hide it; a function right on E10.1 but wrong elsewhere for a reason the check
cannot name keeps one point; one that hands the work to ``course_utils.attention`` earns
nothing. The notebook shows results through :func:`try_run`, so Run All always ends.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks.calling import CheckFailed, call_student, student_line, try_run
from course_utils.checks.e10_1.mistakes import (
    BATCH_ENERGY_MISTAKES,
    ENERGY_MISTAKES,
    EXTREME_ENERGIES,
    SHIFT,
    close,
    context_mistakes,
    context_shape_hint,
    energy_mistakes,
    per_sentence,
    per_sentence_energies,
    per_sentence_weights,
    right_shapes,
    sizes,
    softmax_hint,
    wrong_entries,
)
from course_utils.checks.framework import Exercise
from course_utils.checks.hints import named_mistake, raise_explained
from course_utils.checks.probes import fresh_seed

__all__ = ["EXERCISE", "INPUTS", "SECOND_QUERY", "check_context", "check_energies",
           "check_most_attended", "check_softmax", "check_winner", "try_run"]

EXERCISE = Exercise("E10.1", "Attention computed by hand")

#: The library modules that compute the answers (and the checks' wrong ones); students must not
#: call them.
REFERENCE = ("course_utils.attention", "course_utils.alignment",
             "course_utils.checks.e10_1.mistakes")

#: The exercise's inputs, a batch of one sentence: the rows of ``encoder_states[0]`` are h_1,
#: h_2, h_3, and none of its positions is padding.
INPUTS = {
    "decoder_states": np.array([[0.5, 0.5]]),
    "encoder_states": np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]),
    "W_s": np.eye(2),
    "W_h": np.eye(2),
    "v": np.array([1.0, 1.0]),
    "mask": np.array([[True, True, True]]),
}

#: Part 4's second query, for the prediction the student writes before computing it.
SECOND_QUERY = np.array([[0.5, -0.5]])

TOLERANCE = 1e-6
_ORDER = ("decoder_states", "encoder_states", "W_s", "W_h", "v")


def _args(inputs: dict[str, np.ndarray], *, mask: bool = False) -> list[np.ndarray]:
    """Fresh copies, in the signature's order: students may name their parameters freely."""
    return [inputs[name].copy() for name in (*_ORDER, *(("mask",) if mask else ()))]


def _padding(rng: np.random.Generator, batch: int, src_len: int, shortest: int = 1,
             ) -> np.ndarray:
    """A mask, real tokens first: one sentence fills the batch's length, the others are
    ``shortest`` to ``src_len - 1`` tokens long (so some positions are padding)."""
    lengths = rng.integers(shortest, src_len, size=batch)
    lengths[rng.integers(batch)] = src_len
    return np.arange(src_len) < lengths[:, None]


def _random_batch(seed: int, batch: int, src_len: int, dec_dim: int, enc_dim: int,
                  attn_dim: int, shortest: int = 1) -> dict[str, np.ndarray]:
    """A padded batch; its padded positions hold numbers too (whatever the encoder left
    there), which the mask, not their value, must keep out of the weights."""
    rng = np.random.default_rng(fresh_seed(seed))
    return {
        "decoder_states": rng.normal(size=(batch, dec_dim)),
        "encoder_states": rng.normal(size=(batch, src_len, enc_dim)),
        "W_s": rng.normal(size=(attn_dim, dec_dim)),
        "W_h": rng.normal(size=(attn_dim, enc_dim)),
        "v": rng.normal(size=attn_dim),
        "mask": _padding(rng, batch, src_len, shortest),
    }


def _general_inputs(seed: int = 101) -> dict[str, np.ndarray]:
    """A padded batch where B, T_x, dec_dim, enc_dim and attn_dim all differ."""
    return _random_batch(seed, batch=3, src_len=6, dec_dim=3, enc_dim=5, attn_dim=4)


def _square_inputs(seed: int = 202) -> dict[str, np.ndarray]:
    """B = T_x = dec_dim = enc_dim = attn_dim, with matrices that are neither the identity nor
    symmetric: a formula that mixes up the matrices or the axes still runs here, and its
    numbers tell which mix-up it is."""
    return _random_batch(seed, batch=4, src_len=4, dec_dim=4, enc_dim=4, attn_dim=4)


def _numbers(result: object, what: str, shape: tuple[int, ...], meaning: str) -> np.ndarray:
    """The student's return value as a float array of ``shape`` (NaN allowed), or
    CheckFailed saying why."""
    if result is None:
        raise CheckFailed(f"{what} returned None: did you forget `return`?")
    if hasattr(result, "detach"):
        result = result.detach().cpu().numpy()
    try:
        array = np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(f"{what} must return numbers; got a {type(result).__name__}") from None
    if array.shape != shape:
        raise CheckFailed(f"{what} must return shape {shape} ({meaning}); got {array.shape}")
    return array


def _as_array(result: object, what: str, shape: tuple[int, ...], meaning: str) -> np.ndarray:
    """:func:`_numbers`, finite."""
    array = _numbers(result, what, shape, meaning)
    if not np.all(np.isfinite(array)):
        raise CheckFailed(f"{what} returned NaN or infinity")
    return array


def _batch_of(inputs: dict[str, np.ndarray]) -> str:
    n = sizes(inputs)
    return (f"a padded batch of {n['batch']} sentences of {n['src_len']} positions (dec_dim "
            f"{n['dec_dim']}, enc_dim {n['enc_dim']}, attn_dim {n['attn_dim']})")


# ----------------------------------------------------------------------------- energies


def _energy_mistake(got: np.ndarray, inputs: dict[str, np.ndarray],
                    shapes_of: dict[str, np.ndarray] | None = None) -> str | None:
    """Name the mistake if ``got`` matches a common wrong formula on ``inputs``; the hint
    quotes the sizes of ``shapes_of`` (default: ``inputs``)."""
    hint = named_mistake(got, energy_mistakes(_args(inputs)), close)
    return None if hint is None else hint.format(**sizes(inputs if shapes_of is None
                                                         else shapes_of))


def _energies_raised(compute_energies: Callable, inputs: dict[str, np.ndarray],
                     error: Exception, where: str, points: float) -> CheckFailed:
    """What to tell a student whose function raised ``error`` on ``inputs``.

    NumPy's own message (a matmul "gufunc signature", or "operands could not be broadcast")
    does not say which product is wrong. So the function also runs on a batch where every
    size is the same: a mix-up of matrices or axes runs there, and its numbers name it.
    Otherwise the message lists the shapes and how they must fit.
    """
    square = _square_inputs()
    try:
        with np.errstate(all="ignore"):
            on_square = np.asarray(compute_energies(*_args(square)), dtype=float)
        mistake = _energy_mistake(on_square, square, shapes_of=inputs)
    except Exception:
        mistake = None
    if mistake is not None:
        return CheckFailed(f"{where} it raises {type(error).__name__}: {mistake}")
    if isinstance(error, ValueError):  # NumPy's shape errors: matmul, broadcasting
        shapes = ", ".join(f"{name} {inputs[name].shape}" for name in _ORDER)
        return CheckFailed(f"{where} the shapes do not fit together{student_line(error)}. "
                           f"There {shapes}: {right_shapes(inputs)}", points=points)
    return CheckFailed(
        f"{where} it raises {type(error).__name__}: {error}{student_line(error)}; "
        "check which matrix multiplies which state", points=points)


_MEANING = "one energy per sentence and position"


@EXERCISE.check("energies", points=3, target="compute_energies", own_work=REFERENCE)
def check_energies(compute_energies: Callable) -> str:
    """``compute_energies(decoder_states, encoder_states, W_s, W_h, v)`` -> ``(B, T_x)``."""
    # Each expected answer is computed only after the student's function has returned: under
    # the grader's probe, no answer for the inputs being worked on sits in a frame it could read.
    exercise = INPUTS
    try:
        got = compute_energies(*_args(exercise))
    except ValueError as error:  # NumPy's shape errors; other errors are reported as raised
        raise _energies_raised(compute_energies, exercise, error, "on the E10.1 inputs",
                               points=0) from None
    expected = per_sentence_energies(*_args(exercise))
    got = _as_array(got, "compute_energies", expected.shape, _MEANING)
    if not close(got, expected):
        hint = _energy_mistake(got, exercise)
        raise CheckFailed(f"on the E10.1 inputs, {wrong_entries(got, expected, 'e')}"
                          + (f": {hint}" if hint else ""))

    general = _general_inputs()
    where = f"right on E10.1, but on {_batch_of(general)}"
    try:
        got = compute_energies(*_args(general))
    except NotImplementedError:
        raise
    except Exception as error:
        raise _energies_raised(compute_energies, general, error, where, points=1) from None
    expected = per_sentence_energies(*_args(general))
    try:
        got = _as_array(got, "compute_energies", expected.shape, _MEANING)
    except CheckFailed as failed:
        raise CheckFailed(f"{where}, {failed.message}: is something specific to E10.1 (a "
                          "batch of one, 2 dimensions) built in?", points=1) from None
    if not close(got, expected):
        hint = _energy_mistake(got, general)
        if hint is not None:
            raise CheckFailed(f"{where}, {wrong_entries(got, expected, 'e')}: {hint}")
        raise CheckFailed(f"{where}, {wrong_entries(got, expected, 'e')}: is something specific to "
                          "E10.1 (identity matrices, 2 dimensions, one sentence) built in?",
                          points=1)
    return "energies are right on E10.1 and on padded batches of other sizes"


# ------------------------------------------------------------------------------ softmax

def _survives(softmax: Callable, energies: np.ndarray) -> bool:
    """Whether ``softmax(energies, all real)`` is finite, non-negative and right."""
    mask = np.ones(energies.shape, dtype=bool)
    with np.errstate(all="ignore"):
        try:
            answer = softmax(energies.copy(), mask.copy())
        except (OverflowError, FloatingPointError, ZeroDivisionError):
            return False
    try:
        got = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        return False
    return bool(got.shape == energies.shape and np.all(np.isfinite(got))
                and close(got, per_sentence_weights(energies, mask)))


@EXERCISE.check("softmax", points=2, target="softmax", own_work=REFERENCE)
def check_softmax(softmax: Callable) -> str:
    """``softmax(energies, mask)`` -> weights ``(B, T_x)``: each row a distribution over its
    real tokens, exactly 0 at padding."""
    rng = np.random.default_rng(fresh_seed(7))
    cases = [("on the E10.1 inputs", per_sentence_energies(*_args(INPUTS)), INPUTS["mask"]),
             ("on a padded batch of 4 sentences of 6 positions",
              rng.normal(scale=2.0, size=(4, 6)), _padding(rng, 4, 6))]
    for where, energies, mask in cases:
        answer = softmax(energies.copy(), mask.copy())
        got = _numbers(answer, "softmax", energies.shape, "one weight per sentence and position")
        if not close(got, per_sentence_weights(energies, mask)):
            raise CheckFailed(f"{where}, {softmax_hint(got, energies, mask)}")

    for energies, problem in EXTREME_ENERGIES:
        if not _survives(softmax, energies):
            raise CheckFailed(f"right on ordinary energies, but {problem}. {SHIFT}", points=1)
    return "weights are right, 0 at padding, and large or far-apart energies do not overflow"


# ------------------------------------------------------------------------------ context


def _shape_of(value: object) -> tuple[int, ...] | None:
    """The shape of an array-like answer; None for one that has none."""
    if value is None:
        return None
    try:
        return tuple(np.shape(value))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


@EXERCISE.check("context", points=1, target="compute_context", own_work=REFERENCE)
def check_context(compute_context: Callable) -> str:
    """``compute_context(weights, encoder_states)`` -> ``(B, enc_dim)``."""
    rng = np.random.default_rng(fresh_seed(3))
    mask = _padding(rng, 3, 5)
    cases = [
        ("on the E10.1 inputs",
         per_sentence_weights(per_sentence_energies(*_args(INPUTS)), INPUTS["mask"]),
         INPUTS["encoder_states"]),
        ("on a padded batch of 3 sentences of 5 positions",
         per_sentence_weights(rng.normal(size=(3, 5)), mask), rng.normal(size=(3, 5, 4))),
    ]
    for where, weights, H in cases:
        answer = compute_context(weights.copy(), H.copy())
        # sum_j alpha_bj h_bj, one sentence at a time, once the student's answer is in
        expected = np.stack([w @ h for w, h in zip(weights, H)])  # (B, enc_dim)
        shape = _shape_of(answer)
        if shape is not None and shape != expected.shape:
            hint = context_shape_hint(shape, *H.shape)
            if hint is not None:
                raise CheckFailed(f"{where}, compute_context returns shape {shape}: "
                                  f"{hint}")
        got = _as_array(answer, "compute_context", expected.shape,
                        "one vector per sentence: its states weighted and summed over j")
        if close(got, expected):
            continue
        hint = named_mistake(got, context_mistakes(weights, H), close)
        raise CheckFailed(f"{where}, {wrong_entries(got, expected, 'c')}: "
                          f"{hint or 'c_b = sum_j alpha_bj h_bj'}")
    return "each sentence's context is the weighted sum of its states"


# ------------------------------------------------------------------------ most attended


def _positions(answer: object, batch: int, src_len: int, what: str, where: str = "",
               ) -> np.ndarray:
    """The student's positions as an int array ``(batch,)``, or CheckFailed saying why."""
    if isinstance(answer, (int, np.integer)) and not isinstance(answer, (bool, np.bool_)):
        raise CheckFailed(
            f"{what} must return one position per sentence, an int array of shape "
            f"({batch},); got a single int{where}: np.argmax without axis= reads the whole "
            "batch as one flat list")
    try:
        array = np.asarray(answer)
    except (TypeError, ValueError):
        array = np.asarray(None)
    if array.dtype.kind not in "iu":
        kind = type(answer).__name__ if array.dtype.kind in "OSU" else str(array.dtype)
        raise CheckFailed(f"{what} must return positions as integers (an int array); got "
                          f"{kind}{where}")
    if array.shape != (batch,):
        why = (": one per position, so the arg max ran down each column, over the sentences "
               "(axis 0), not along each sentence" if array.shape == (src_len,) else "")
        raise CheckFailed(f"{what} must return one position per sentence, shape ({batch},); "
                          f"got {array.shape}{where}{why}")
    return array


@EXERCISE.check("most_attended", points=1, target="most_attended", own_work=REFERENCE)
def check_most_attended(most_attended: Callable) -> str:
    """``most_attended(weights)`` -> ``(B,)``: in each sentence, the position j (1, 2, 3, ...)
    with the largest weight."""
    rng = np.random.default_rng(fresh_seed(5))
    cases = [("on the E10.1 inputs",
              per_sentence_weights(per_sentence_energies(*_args(INPUTS)), INPUTS["mask"]))]
    for batch, src_len in ((4, 6), (4, 4)):  # 4 x 4: an arg max over the sentences fits too
        cases.append((f"on a padded batch of {batch} sentences of {src_len} positions",
                      per_sentence_weights(rng.normal(scale=2.0, size=(batch, src_len)),
                                           _padding(rng, batch, src_len))))
    for where, weights in cases:
        batch, src_len = weights.shape
        got = _positions(most_attended(weights.copy()), batch, src_len, "most_attended",
                         f" {where}")
        expected = np.array([int(np.argmax(w)) + 1 for w in weights])
        if np.array_equal(got, expected):
            continue
        if np.array_equal(got, expected - 1):
            raise CheckFailed(f"{where}, positions are numbered from 1, as in h_1, h_2, h_3: "
                              "your answer looks like 0-based indices")
        if np.array_equal(got, [int(np.argmax(column)) + 1 for column in weights.T]):
            raise CheckFailed(f"{where}, the largest weight was looked for down each column, "
                              "over the sentences (axis 0): look along each row, over the "
                              "positions of one sentence")
        wrong = np.flatnonzero(got != expected)
        padded = [int(b) for b in wrong if not 1 <= got[b] <= weights.shape[1]
                  or weights[b, got[b] - 1] == 0]
        if padded:
            raise CheckFailed(f"{where}, sentence {padded[0] + 1}'s answer is a padded (or "
                              "missing) position, whose weight is 0: it can never have the "
                              "largest weight")
        raise CheckFailed(f"{where}, in sentence {wrong[0] + 1} that position does not have "
                          "the largest weight")
    return "each sentence's position of the largest weight, counted from 1"


# ------------------------------------------------------------------------------ winner


def _winner_cases(seed: int = 11) -> list[tuple[str, dict[str, np.ndarray]]]:
    """E10.1, its second query, v turned negative, then fresh padded batches (three with
    every size 3, where a mixed-up formula still runs and has its own winners, one of other
    sizes), with no near tie in any sentence."""
    rng = np.random.default_rng(fresh_seed(seed))
    second = {**INPUTS, "decoder_states": SECOND_QUERY}
    cases = [("the E10.1 inputs", INPUTS), ("the second query s_0' = [0.5, -0.5]", second),
             ("the second query with v = [-1, -1]", {**second, "v": -INPUTS["v"]})]
    while len(cases) < 7:
        size = 3 if len(cases) < 6 else int(rng.integers(4, 6))
        inputs = _random_batch(int(rng.integers(1 << 30)), batch=int(rng.integers(3, 6)),
                               src_len=int(rng.integers(3, 7)), dec_dim=3, enc_dim=size,
                               attn_dim=3, shortest=2)
        energies = per_sentence_energies(*_args(inputs))
        top = [np.sort(e[m])[-2:] for e, m in zip(energies, inputs["mask"])]
        if all(t[1] - t[0] >= 0.05 for t in top):
            cases.append(("a padded batch you have not seen", inputs))
    return cases


def _winners(energies_of: Callable, cases: list, masked: bool = True) -> list[int | None]:
    """Per sentence of every case, the position (from 1) of ``energies_of``'s largest value
    over its real tokens (over every position if not ``masked``); None: cannot run."""
    found: list[int | None] = []
    for _, inputs in cases:
        try:
            with np.errstate(all="ignore"):
                energies = np.asarray(energies_of(*_args(inputs)), dtype=float)
            if energies.shape != inputs["mask"].shape:
                raise ValueError("not one energy per position")
        except ValueError:
            found += [None] * len(inputs["mask"])
            continue
        if masked:
            energies = np.where(inputs["mask"], energies, -np.inf)
        found += [int(np.argmax(e)) + 1 for e in energies]
    return found


@EXERCISE.check("winner", points=1, target="winner", own_work=REFERENCE)
def check_winner(winner: Callable) -> str:
    """``winner(decoder_states, encoder_states, W_s, W_h, v, mask)`` -> ``(B,)``: in each
    sentence, the position j (from 1) of the encoder state with the largest weight, for any
    queries and any parameters."""
    cases, got, owner, failed = _winner_cases(), [], [], None
    for index, (where, inputs) in enumerate(cases):
        answer = None
        try:
            answer = call_student(winner, *_args(inputs, mask=True), given=where)
            batch, src_len = inputs["mask"].shape
            got += _positions(answer, batch, src_len, "winner", f" on {where}").tolist()
        except CheckFailed as error:  # named below if an earlier answer explains it
            failed = error
            if index and _shape_of(answer) == (1,) and np.array_equal(np.asarray(answer),
                                                                       got[:1]):
                failed = CheckFailed(f"{error.message}: it gives E10.1's answer whatever it is "
                                     "given. Does it use its arguments, or the notebook's "
                                     "`s0`, `h`, `W_s`, `W_h`, `v`?")
            break
        owner += [index] * len(inputs["mask"])
    right = _winners(per_sentence_energies, cases)[:len(got)]
    wrong = [i for i, (g, r) in enumerate(zip(got, right)) if g != r]
    if not wrong:
        if failed is not None:
            raise failed
        return "the winning positions are right for every query, E10.1's and unseen ones"
    mistakes: list[tuple[list[int | None], str]] = [
        ([None if r is None else r - 1 for r in right],
         "positions are numbered from 1, as in h_1, h_2, h_3: your answers look like 0-based "
         "indices"),
        (_winners(lambda *a: -per_sentence_energies(*a), cases), "that is the state with the "
         "smallest energy: the largest energy gets the largest weight"),
        (_winners(per_sentence_energies, cases, masked=False), "some winners are padded "
         "positions: the mask must keep padding out (is it passed on to your softmax?)"),
        ([right[0]] * len(got), "it gives E10.1's answer whatever it is given: does it use "
                                "its arguments, or the notebook's `s0`, `h`, `W_s`, `W_h`, `v`?"),
        (_winners(lambda S, H, W_s, W_h, v: H.sum(axis=2), cases), "that is the state with "
         "the largest sum of entries: a rule that holds for E10.1's identity matrices and "
         "positive v, not in general; compute the energies from the arguments"),
        *[(_winners(per_sentence(formula), cases), f"these are the winners of a wrong energy "
           f"formula: {hint}. Does `winner` use your `compute_energies`, and does it pass its "
           "check?") for hint, formula in ENERGY_MISTAKES],
        *[(_winners(formula, cases), f"these are the winners of a wrong energy formula: "
           f"{hint}. Does `winner` use your `compute_energies`, and does it pass its check?")
          for hint, formula in BATCH_ENERGY_MISTAKES],
    ]
    first = cases[owner[wrong[0]]]
    raise_explained(hint.format(**sizes(first[1])) for answers, hint in mistakes
                    if all(a in (None, g) for a, g in zip(answers, got))  # each answer, and
                    and any(answers[i] == got[i] for i in wrong))  # a wrong one too
    raise CheckFailed(f"on {first[0]}, that position does not have the largest weight")


EXERCISE.manual_question("predict", points=1, prompt=(
    "Before computing it: which state wins for the second query s_0' = [0.5, -0.5], with the "
    "same h_j, W_s, W_h and v, and why do you expect it? (A reason earns the point, right or "
    "wrong.)"))
EXERCISE.manual_question("why", points=2, prompt=(
    "What does additive attention reward here? Compare your prediction with the result: which "
    "keys win with these W_s, W_h and v, does the query decide it, and is it similarity "
    "between the query and the key?"))
