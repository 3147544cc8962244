"""Checks for exercise E10.1: attention computed by hand.

Inputs: h_1 = [1, 0], h_2 = [0, 1], h_3 = [1, 1], s_0 = [0.5, 0.5], W_s = W_h = I, v = [1, 1].

Students write five functions; each check runs the student's function on the E10.1
inputs and on fresh inputs of other sizes (so a hard-coded answer does not pass), compares
with :func:`course_utils.attention.additive_attention`, and names the wrong entries or the
likely mistake without printing the expected numbers. Part 4 asks for a prediction first (a
second query, ``s_0' = [0.5, -0.5]``), then ``winner`` for any query, then what additive
attention rewards here: with these ``W_s``, ``W_h`` and ``v`` each energy increases with every
coordinate of the key, so ``h_3`` wins whatever the query.

Points: a recognised wrong formula (:func:`_energy_mistake`) earns nothing, even where E10.1's
identity matrices hide it; a function right on E10.1 but wrong elsewhere for a reason the check
cannot name keeps one point; one that hands the work to ``course_utils.attention`` earns
nothing. The notebook shows results through :func:`try_run`, so Run All always ends.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.attention import additive_attention
from course_utils.attention import softmax as reference_softmax
from course_utils.checks.calling import CheckFailed, call_student, student_line, try_run
from course_utils.checks.framework import Exercise
from course_utils.checks.hints import named_mistake, raise_explained
from course_utils.checks.probes import fresh_seed

__all__ = ["EXERCISE", "INPUTS", "SECOND_QUERY", "check_context", "check_energies",
           "check_most_attended", "check_softmax", "check_winner", "try_run"]

EXERCISE = Exercise("E10.1", "Attention computed by hand")

#: The library module that computes the answers; students must not call it.
REFERENCE = ("course_utils.attention", "course_utils.alignment")

#: The exercise's inputs, rows of ``encoder_states`` are h_1, h_2, h_3.
INPUTS = {
    "decoder_state": np.array([0.5, 0.5]),
    "encoder_states": np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
    "W_s": np.eye(2),
    "W_h": np.eye(2),
    "v": np.array([1.0, 1.0]),
}

#: Part 4's second query, for the prediction the student writes before computing it.
SECOND_QUERY = np.array([0.5, -0.5])

_TOLERANCE = 1e-6


def _random_inputs(seed: int, dec_dim: int, enc_dim: int, attn_dim: int,
                   src_len: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(fresh_seed(seed))
    return {
        "decoder_state": rng.normal(size=dec_dim),
        "encoder_states": rng.normal(size=(src_len, enc_dim)),
        "W_s": rng.normal(size=(attn_dim, dec_dim)),
        "W_h": rng.normal(size=(attn_dim, enc_dim)),
        "v": rng.normal(size=attn_dim),
    }


def _general_inputs(seed: int = 101) -> dict[str, np.ndarray]:
    """Inputs where dec_dim, enc_dim, attn_dim and src_len all differ."""
    return _random_inputs(seed, dec_dim=3, enc_dim=5, attn_dim=4, src_len=6)


def _square_inputs(seed: int = 202) -> dict[str, np.ndarray]:
    """dec_dim = enc_dim = attn_dim (but src_len differs), with matrices that are neither the
    identity nor symmetric: a formula that mixes the matrices up still runs here, and its
    numbers tell which mix-up it is."""
    return _random_inputs(seed, dec_dim=4, enc_dim=4, attn_dim=4, src_len=5)


_ORDER = ("decoder_state", "encoder_states", "W_s", "W_h", "v")


def _args(inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Fresh copies, in the signature's order: students may name their parameters freely."""
    return [inputs[name].copy() for name in _ORDER]


def _as_array(result: object, what: str, shape: tuple[int, ...], meaning: str) -> np.ndarray:
    """The student's return value as a float array of ``shape``, or CheckFailed saying why."""
    if result is None:
        raise CheckFailed(f"{what} returned None: did you forget `return`?")
    if hasattr(result, "detach"):
        result = result.detach().cpu().numpy()
    try:
        array = np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(
            f"{what} must return numbers; got a {type(result).__name__}"
        ) from None
    if array.shape != shape:
        raise CheckFailed(f"{what} must return shape {shape} ({meaning}); got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise CheckFailed(f"{what} returned NaN or infinity")
    return array


def _wrong_entries(got: np.ndarray, expected: np.ndarray, symbol: str) -> str:
    wrong = np.flatnonzero(~np.isclose(got, expected, rtol=0, atol=_TOLERANCE))
    return ", ".join(f"{symbol}_{j + 1}" for j in wrong)


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=0, atol=_TOLERANCE))


def _rename(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The exercise's argument names mapped to :func:`additive_attention`'s."""
    renamed = dict(inputs)
    renamed["encoder_outputs"] = renamed.pop("encoder_states")
    return renamed


# ----------------------------------------------------------------------------- energies


def _sizes(inputs: dict[str, np.ndarray]) -> dict[str, int]:
    src_len, enc_dim = inputs["encoder_states"].shape
    attn_dim, dec_dim = inputs["W_s"].shape
    return {"src_len": src_len, "enc_dim": enc_dim, "attn_dim": attn_dim, "dec_dim": dec_dim}


def _shapes(inputs: dict[str, np.ndarray]) -> str:
    return ", ".join(f"{name} {inputs[name].shape}" for name in _ORDER)


def _right_shapes(inputs: dict[str, np.ndarray]) -> str:
    """How the shapes fit together in e_j = v^T tanh(W_s s + W_h h_j), for these inputs."""
    n = _sizes(inputs)
    return (
        f"the query W_s @ decoder_state is (attn_dim,) = ({n['attn_dim']},); the keys, row j "
        f"being W_h h_j, are encoder_states @ W_h.T, (src_len, attn_dim) = ({n['src_len']}, "
        f"{n['attn_dim']}); the query is added to every row, tanh applies entry by entry, and "
        f"@ v leaves one energy per position, ({n['src_len']},)"
    )


# Each usual mistake: how it is computed, and what to tell the student about it. The hints
# are formatted with the sizes of the inputs the mistake was seen on.
_ENERGY_MISTAKES: list[tuple[str, Callable[..., np.ndarray]]] = [
    ("the tanh is missing: e_j = v^T tanh(W_s s + W_h h_j)",
     lambda s, H, W_s, W_h, v: (W_s @ s + H @ W_h.T) @ v),
    ("v is inside the tanh: first squash the alignment vector W_s s + W_h h_j with tanh, "
     "then reduce it to one number with v (e_j = v^T tanh(...)); multiplying by v before the "
     "tanh changes what gets squashed",
     lambda s, H, W_s, W_h, v: np.tanh((W_s @ s + H @ W_h.T) * v).sum(axis=1)),
    ("v is inside the tanh: first squash the alignment vector W_s s + W_h h_j with tanh, "
     "then take its dot product with v (e_j = v^T tanh(...)), not tanh of that dot product",
     lambda s, H, W_s, W_h, v: np.tanh((W_s @ s + H @ W_h.T) @ v)),
    ("v is not used: reduce the alignment vector with v, not with a plain sum",
     lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + H @ W_h.T).sum(axis=1)),
    ("the projections are left out: tanh(s + h_j) adds the raw states, but the query is "
     "W_s s and the keys are W_h h_j. Only the projections bring both into the same "
     "{attn_dim}-d alignment space; E10.1's identity matrices hide this",
     lambda s, H, W_s, W_h, v: np.tanh(s + H) @ v),
    ("W_s is left out: the query is W_s s, not s (E10.1's W_s = I hides this)",
     lambda s, H, W_s, W_h, v: np.tanh(s + H @ W_h.T) @ v),
    ("W_h is left out: the keys are W_h h_j, not h_j (E10.1's W_h = I hides this)",
     lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + H) @ v),
    ("`encoder_states @ W_h` needs a transpose: encoder_states is (src_len, enc_dim) = "
     "({src_len}, {enc_dim}) and W_h is (attn_dim, enc_dim) = ({attn_dim}, {enc_dim}). "
     "Each key is W_h h_j; with the h_j as rows, all keys at once are encoder_states @ W_h.T, "
     "a (src_len, attn_dim) = ({src_len}, {attn_dim}) matrix. Without .T the product only "
     "fits when enc_dim = attn_dim, and then it computes the wrong keys (h_j^T W_h); "
     "E10.1's W_h = I hides this",
     lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + H @ W_h) @ v),
    ("the query is s^T W_s (decoder_state @ W_s) but should be W_s s (W_s @ decoder_state): "
     "W_s is (attn_dim, dec_dim) = ({attn_dim}, {dec_dim}), so it multiplies the state from "
     "the left",
     lambda s, H, W_s, W_h, v: np.tanh(s @ W_s + H @ W_h.T) @ v),
    ("W_s and W_h are swapped: W_s projects the decoder state s, W_h the encoder states h_j",
     lambda s, H, W_s, W_h, v: np.tanh(W_h @ s + H @ W_s.T) @ v),
    ("these are weights, not energies: return the energies before the softmax",
     lambda s, H, W_s, W_h, v: reference_softmax(np.tanh(W_s @ s + H @ W_h.T) @ v)),
]


def _energy_mistake(got: np.ndarray, inputs: dict[str, np.ndarray],
                    shapes_of: dict[str, np.ndarray] | None = None) -> str | None:
    """Name the mistake if ``got`` matches a common wrong formula on ``inputs``; the hint
    quotes the sizes of ``shapes_of`` (default: ``inputs``)."""

    def wrong_energies():
        for hint, formula in _ENERGY_MISTAKES:
            try:
                with np.errstate(all="ignore"):
                    yield np.asarray(formula(*_args(inputs)), dtype=float), hint
            except ValueError:  # this mistake cannot run on these shapes
                continue

    hint = named_mistake(got, wrong_energies(), _close)
    return None if hint is None else hint.format(
        **_sizes(inputs if shapes_of is None else shapes_of))


def _energies_raised(compute_energies: Callable, inputs: dict[str, np.ndarray],
                     error: Exception, where: str, points: float) -> CheckFailed:
    """What to tell a student whose function raised ``error`` on ``inputs``.

    NumPy's own message (a matmul "gufunc signature", or "operands could not be broadcast")
    does not say which product is wrong. So the function also runs on inputs where every
    matrix is square: a mix-up runs there, and its numbers name it. Otherwise the message
    lists the shapes and how they must fit.
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
        return CheckFailed(
            f"{where} the shapes do not fit together{student_line(error)}. There "
            f"{_shapes(inputs)}: {_right_shapes(inputs)}",
            points=points,
        )
    return CheckFailed(
        f"{where} it raises {type(error).__name__}: {error}{student_line(error)}; "
        "check which matrix multiplies which state",
        points=points,
    )


@EXERCISE.check("energies", points=3, target="compute_energies", own_work=REFERENCE)
def check_energies(compute_energies: Callable) -> str:
    """``compute_energies(decoder_state, encoder_states, W_s, W_h, v)`` -> ``(src_len,)``."""
    # Each expected answer is computed only after the student's function has returned: under
    # the grader's probe, no answer for the inputs being worked on sits in a frame it could read.
    exercise = INPUTS
    try:
        got = compute_energies(*_args(exercise))
    except ValueError as error:  # NumPy's shape errors; other errors are reported as raised
        raise _energies_raised(compute_energies, exercise, error, "on the E10.1 inputs",
                               points=0) from None
    expected = additive_attention(**_rename(exercise)).energies
    got = _as_array(got, "compute_energies", expected.shape, "one energy per encoder state")
    if not _close(got, expected):
        hint = _energy_mistake(got, exercise)
        wrong = _wrong_entries(got, expected, "e")
        raise CheckFailed(f"on the E10.1 inputs, {wrong} are off" + (f": {hint}" if hint else ""))

    general = _general_inputs()
    where = (
        "right on E10.1, but on inputs where the sizes differ (dec_dim {dec_dim}, enc_dim "
        "{enc_dim}, attn_dim {attn_dim}, src_len {src_len})".format(**_sizes(general))
    )
    try:
        got = compute_energies(*_args(general))
    except NotImplementedError:
        raise
    except Exception as error:
        raise _energies_raised(compute_energies, general, error, where, points=1) from None
    expected = additive_attention(**_rename(general)).energies
    try:
        got = _as_array(got, "compute_energies", expected.shape, "one energy per encoder state")
    except CheckFailed as failed:
        raise CheckFailed(
            f"{where}, {failed.message}: is something specific to E10.1 built in?",
            points=1,
        ) from None
    if not _close(got, expected):
        hint = _energy_mistake(got, general)
        if hint is not None:
            raise CheckFailed(f"{where}, the energies are off: {hint}")
        raise CheckFailed(
            f"{where}, the energies are off: is something specific to E10.1 (identity "
            "matrices, 2 dimensions) built in?",
            points=1,
        )
    return "energies are right on E10.1 and on inputs of other sizes"


# ------------------------------------------------------------------------------ softmax

#: Energies a softmax must survive, and what goes wrong when it does not. Subtracting the
#: largest energy passes all of them; subtracting nothing fails the first, and subtracting the
#: smallest energy (or the mean) passes the first and fails a wide spread.
_EXTREME_ENERGIES = [
    (np.array([1000.0, 1001.0, 1002.0]),
     "on energies near 1000, [1000, 1001, 1002], exp() overflows (exp(1000) is infinite in "
     "floating point)"),
    (np.array([0.0, 1000.0]),
     "on energies far apart, [0, 1000], exp() still overflows: shifting by the smallest "
     "energy leaves the largest one at 1000"),
    (np.array([-1500.0, 0.0, 1500.0]),
     "on energies far apart, [-1500, 0, 1500], exp() still overflows: shifting by the mean "
     "(or the smallest energy) leaves the largest one huge"),
    (np.array([-1002.0, -1001.0, -1000.0]),
     "on very negative energies, [-1002, -1001, -1000], every exp() underflows to 0 and the "
     "division is 0 / 0"),
]


def _survives(softmax: Callable, energies: np.ndarray) -> bool:
    """Whether ``softmax(energies)`` is finite, non-negative, sums to 1 and is right."""
    with np.errstate(all="ignore"):
        try:
            got = np.asarray(softmax(energies.copy()), dtype=float)
        except (OverflowError, FloatingPointError, ZeroDivisionError):
            return False
    return bool(
        got.shape == energies.shape
        and np.all(np.isfinite(got))
        and np.all(got >= 0)
        and abs(got.sum() - 1.0) <= _TOLERANCE
        and np.allclose(got, reference_softmax(energies), rtol=0, atol=_TOLERANCE)
    )


@EXERCISE.check("softmax", points=2, target="softmax", own_work=REFERENCE)
def check_softmax(softmax: Callable) -> str:
    """``softmax(energies)`` -> weights of the same shape that sum to 1."""
    rng = np.random.default_rng(fresh_seed(7))
    cases = [
        additive_attention(**_rename(INPUTS)).energies,
        rng.normal(scale=2.0, size=6),
        np.array([0.8, 2.8, 1.5, -0.4, 1.9, 0.3, 1.1]),
    ]
    for case in cases:
        got = _as_array(softmax(case.copy()), "softmax", case.shape, "one weight per energy")
        total = float(got.sum())
        if np.any(got < 0):
            raise CheckFailed("some weights are negative: exp(e) is always positive")
        if abs(total - 1.0) > _TOLERANCE:
            raise CheckFailed(
                f"the weights sum to {total:.4f}, not 1: divide by the sum of the exponentials"
            )
        if int(np.argmax(got)) != int(np.argmax(case)):
            raise CheckFailed("the largest energy must receive the largest weight")
        expected = reference_softmax(case)
        if not _close(got, expected):
            wrong = _wrong_entries(got, expected, "alpha")
            raise CheckFailed(f"{wrong} are off: alpha_j = exp(e_j) / sum_k exp(e_k)")

    for energies, problem in _EXTREME_ENERGIES:
        if not _survives(softmax, energies):
            raise CheckFailed(
                f"right on ordinary energies, but {problem}. Subtract the largest energy "
                "first: softmax does not change when every energy shifts by the same amount, "
                "and after that shift every exponent is at most 0, so each exp() lies between "
                "0 and 1 and the largest is exactly 1",
                points=1,
            )
    return "weights are right, sum to 1, and large or far-apart energies do not overflow"


# ------------------------------------------------------------------------------ context


@EXERCISE.check("context", points=1, target="compute_context", own_work=REFERENCE)
def check_context(compute_context: Callable) -> str:
    """``compute_context(weights, encoder_states)`` -> ``(enc_dim,)``."""
    rng = np.random.default_rng(fresh_seed(3))
    exercise_weights = additive_attention(**_rename(INPUTS)).weights
    cases = [
        ("on the E10.1 inputs", exercise_weights, INPUTS["encoder_states"]),
        ("on other inputs", rng.dirichlet(np.ones(6)), rng.normal(size=(6, 5))),
    ]
    for where, weights, H in cases:
        answer = compute_context(weights.copy(), H.copy())
        expected = weights @ H  # (enc_dim,), computed once the student's answer is in
        got = _as_array(answer, "compute_context", expected.shape,
                        "one entry per dimension of h_j: sum over the positions j")
        if _close(got, expected):
            continue
        if _close(got, H.mean(axis=0)):
            hint = "that is the plain average of the states: weight each h_j by alpha_j"
        elif _close(got, H.sum(axis=0)):
            hint = "that is the unweighted sum of the states: weight each h_j by alpha_j"
        else:
            hint = "c = sum_j alpha_j h_j"
        wrong = _wrong_entries(got, expected, "c")
        raise CheckFailed(f"{where}, {wrong} are off: {hint}")
    return "the context is the weighted sum of the encoder states"


# ------------------------------------------------------------------------ most attended


def _position(answer: object, what: str, where: str = "") -> int:
    """The student's answer as given (the grader judges its decoded copy), or CheckFailed."""
    if isinstance(answer, (bool, np.bool_)) or not isinstance(answer, (int, np.integer)):
        raise CheckFailed(f"{what} must return a position as an int; got "
                          f"{type(answer).__name__}{where}")
    return answer  # type: ignore[return-value]


@EXERCISE.check("most_attended", points=1, target="most_attended", own_work=REFERENCE)
def check_most_attended(most_attended: Callable) -> str:
    """``most_attended(weights)`` -> the position j (1, 2, 3, ...) with the largest weight."""
    cases = [
        additive_attention(**_rename(INPUTS)).weights,
        np.array([0.1, 0.7, 0.2]),
        np.array([0.6, 0.3, 0.1]),
        np.array([0.05, 0.1, 0.15, 0.2, 0.5]),
    ]
    for weights in cases:
        answer = _position(most_attended(weights.copy()), "most_attended")
        expected = int(np.argmax(weights)) + 1
        if answer == expected - 1:
            raise CheckFailed(
                "positions are numbered from 1, as in h_1, h_2, h_3: "
                "your answer looks like a 0-based index"
            )
        if answer != expected:
            raise CheckFailed("that position does not have the largest weight")
    return "the position with the largest weight, counted from 1"


# ------------------------------------------------------------------------------ winner


def _winner_cases(seed: int = 11) -> list[tuple[str, dict[str, np.ndarray]]]:
    """E10.1, its second query, v turned negative, then fresh inputs (eight with every size 3,
    where a mixed-up formula still runs and has its own winners, two of other sizes), none
    with a near tie."""
    rng = np.random.default_rng(fresh_seed(seed))
    second = {**INPUTS, "decoder_state": SECOND_QUERY}
    cases = [("the E10.1 inputs", INPUTS), ("the second query s_0' = [0.5, -0.5]", second),
             ("the second query with v = [-1, -1]", {**second, "v": -INPUTS["v"]})]
    while len(cases) < 13:
        size = 3 if len(cases) < 11 else int(rng.integers(4, 6))
        inputs = _random_inputs(int(rng.integers(1 << 30)), dec_dim=3, enc_dim=size,
                                attn_dim=3, src_len=int(rng.integers(3, 7)))
        top = np.sort(additive_attention(**_rename(inputs)).energies)[-2:]
        if top[1] - top[0] >= 0.05:
            cases.append(("inputs you have not seen", inputs))
    return cases


def _winners(energies_of: Callable, cases: list) -> list[int | None]:
    """Per case, the position (from 1) of ``energies_of``'s largest value; None: cannot run."""
    found: list[int | None] = []
    for _, inputs in cases:
        try:
            with np.errstate(all="ignore"):
                found.append(int(np.argmax(energies_of(*_args(inputs)))) + 1)
        except ValueError:
            found.append(None)
    return found


@EXERCISE.check("winner", points=1, target="winner", own_work=REFERENCE)
def check_winner(winner: Callable) -> str:
    """``winner(decoder_state, encoder_states, W_s, W_h, v)`` -> the position j (from 1) of
    the encoder state with the largest weight, for any query and any parameters."""
    cases, got, failed = _winner_cases(), [], None
    for where, inputs in cases:
        try:
            got.append(_position(call_student(winner, *_args(inputs), given=where), "winner",
                                 f" on {where}"))
        except CheckFailed as error:  # named below if an earlier answer explains it
            failed = error
            break
    right = _winners(lambda *a: additive_attention(*a).energies, cases)[:len(got)]
    wrong = [i for i, (g, r) in enumerate(zip(got, right)) if g != r]
    if not wrong:
        if failed is not None:
            raise failed
        return "the winning position is right for every query, E10.1's and unseen ones"
    mistakes: list[tuple[list[int | None], str]] = [
        ([None if r is None else r - 1 for r in right],
         "positions are numbered from 1, as in h_1, h_2, h_3: your answers look like 0-based "
         "indices"),
        (_winners(lambda *a: -additive_attention(*a).energies, cases), "that is the state "
         "with the smallest energy: the largest energy gets the largest weight"),
        ([right[0]] * len(got), "it gives E10.1's answer whatever it is given: does it use "
                                "its arguments, or the notebook's `s0`, `h`, `W_s`, `W_h`, `v`?"),
        (_winners(lambda s, H, W_s, W_h, v: H.sum(axis=1), cases), "that is the state with "
         "the largest sum of entries: a rule that holds for E10.1's identity matrices and "
         "positive v, not in general; compute the energies from the arguments"),
        *[(_winners(formula, cases), f"these are the winners of a wrong energy formula: {hint}. "
           "Does `winner` use your `compute_energies`, and does it pass its check?")
          for hint, formula in _ENERGY_MISTAKES],
    ]
    raise_explained(hint.format(**_sizes(cases[wrong[0]][1])) for answers, hint in mistakes
                    if all(a in (None, g) for a, g in zip(answers, got))  # each answer, and
                    and any(answers[i] == got[i] for i in wrong))  # a wrong one too
    raise CheckFailed(f"on {cases[wrong[0]][0]}, that position does not have the largest weight")


EXERCISE.manual_question("predict", points=1, prompt=(
    "Before computing it: which state wins for the second query s_0' = [0.5, -0.5], with the "
    "same h_j, W_s, W_h and v, and why do you expect it? (A reason earns the point, right or "
    "wrong.)"))
EXERCISE.manual_question("why", points=2, prompt=(
    "What does additive attention reward here? Compare your prediction with the result: which "
    "keys win with these W_s, W_h and v, does the query decide it, and is it similarity "
    "between the query and the key?"))
