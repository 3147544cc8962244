"""Checks for exercise E10.1: attention computed by hand.

Inputs of the exercise: ``h_1 = [1, 0]``, ``h_2 = [0, 1]``, ``h_3 = [1, 1]``,
``s_0 = [0.5, 0.5]``, ``W_s = W_h = I`` and ``v = [1, 1]``.

Students write four functions; each check runs the student's function on the E10.1
inputs and on fresh inputs of other sizes (so a hard-coded answer does not pass), compares
with :func:`course_utils.attention.additive_attention`, and names the wrong entries or the
likely mistake without printing the expected numbers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.attention import additive_attention
from course_utils.attention import softmax as reference_softmax
from course_utils.checks import CheckFailed, Exercise

__all__ = ["EXERCISE", "INPUTS", "check_context", "check_energies", "check_most_attended",
           "check_softmax"]

EXERCISE = Exercise("E10.1", "Attention computed by hand")

#: The exercise's inputs, rows of ``encoder_states`` are h_1, h_2, h_3.
INPUTS = {
    "decoder_state": np.array([0.5, 0.5]),
    "encoder_states": np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
    "W_s": np.eye(2),
    "W_h": np.eye(2),
    "v": np.array([1.0, 1.0]),
}

_TOLERANCE = 1e-6


def _general_inputs(seed: int = 101) -> dict[str, np.ndarray]:
    """Inputs where dec_dim, enc_dim, attn_dim and src_len all differ."""
    rng = np.random.default_rng(seed)
    dec_dim, enc_dim, attn_dim, src_len = 3, 5, 4, 6
    return {
        "decoder_state": rng.normal(size=dec_dim),
        "encoder_states": rng.normal(size=(src_len, enc_dim)),
        "W_s": rng.normal(size=(attn_dim, dec_dim)),
        "W_h": rng.normal(size=(attn_dim, enc_dim)),
        "v": rng.normal(size=attn_dim),
    }


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


# ----------------------------------------------------------------------------- energies


def _energy_mistake(got: np.ndarray, inputs: dict[str, np.ndarray]) -> str | None:
    """Name the mistake if ``got`` matches a common wrong formula."""
    s, H = inputs["decoder_state"], inputs["encoder_states"]
    query, keys = inputs["W_s"] @ s, H @ inputs["W_h"].T
    candidates = {
        "the tanh is missing: e_j = v^T tanh(W_s s + W_h h_j)": (query + keys) @ inputs["v"],
        "v is not used: reduce the alignment vector with v, not with a plain sum": np.tanh(
            query + keys
        ).sum(axis=1),
        "these are weights, not energies: return the energies before the softmax": (
            reference_softmax(np.tanh(query + keys) @ inputs["v"])
        ),
    }
    for hint, wrong in candidates.items():
        if _close(got, wrong):
            return hint
    return None


@EXERCISE.check("energies", points=3, target="compute_energies")
def check_energies(compute_energies: Callable) -> str:
    """``compute_energies(decoder_state, encoder_states, W_s, W_h, v)`` -> ``(src_len,)``."""
    exercise = INPUTS
    expected = additive_attention(**_rename(exercise)).energies
    got = _as_array(
        compute_energies(*_args(exercise)), "compute_energies", expected.shape,
        "one energy per encoder state",
    )
    if not _close(got, expected):
        hint = _energy_mistake(got, exercise)
        wrong = _wrong_entries(got, expected, "e")
        raise CheckFailed(f"on the E10.1 inputs, {wrong} are off" + (f": {hint}" if hint else ""))

    general = _general_inputs()
    expected = additive_attention(**_rename(general)).energies
    try:
        got = compute_energies(*_args(general))
    except NotImplementedError:
        raise
    except Exception as error:
        raise CheckFailed(
            "right on E10.1, but it fails when the decoder, encoder and alignment sizes differ "
            f"({type(error).__name__}: {error}); check which matrix multiplies which state",
            points=1,
        ) from None
    try:
        got = _as_array(got, "compute_energies", expected.shape, "one energy per encoder state")
    except CheckFailed as failed:
        raise CheckFailed(
            f"right on E10.1, but on other inputs {failed.message}: "
            "is something specific to E10.1 built in?",
            points=1,
        ) from None
    if not _close(got, expected):
        hint = _energy_mistake(got, general) or (
            "is something specific to E10.1 (identity matrices, 2 dimensions) built in?"
        )
        raise CheckFailed(f"right on E10.1 but not on other inputs: {hint}", points=1)
    return "energies are right on E10.1 and on inputs of other sizes"


def _rename(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The exercise's argument names mapped to :func:`additive_attention`'s."""
    renamed = dict(inputs)
    renamed["encoder_outputs"] = renamed.pop("encoder_states")
    return renamed


# ------------------------------------------------------------------------------ softmax


@EXERCISE.check("softmax", points=2, target="softmax")
def check_softmax(softmax: Callable) -> str:
    """``softmax(energies)`` -> weights of the same shape that sum to 1."""
    rng = np.random.default_rng(7)
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

    large = np.array([1000.0, 1001.0, 1002.0])
    with np.errstate(all="ignore"):
        try:
            got = np.asarray(softmax(large.copy()), dtype=float)
        except (OverflowError, FloatingPointError):
            got = np.full(3, np.nan)
    if got.shape != large.shape or not np.allclose(got, reference_softmax(large), atol=1e-6):
        raise CheckFailed(
            "right on ordinary energies, but energies near 1000 overflow exp(): subtract the "
            "largest energy first (softmax does not change when every energy shifts by the "
            "same amount)",
            points=1,
        )
    return "weights are right, sum to 1, and large energies do not overflow"


# ------------------------------------------------------------------------------ context


@EXERCISE.check("context", points=2, target="compute_context")
def check_context(compute_context: Callable) -> str:
    """``compute_context(weights, encoder_states)`` -> ``(enc_dim,)``."""
    rng = np.random.default_rng(3)
    exercise_weights = additive_attention(**_rename(INPUTS)).weights
    cases = [
        ("on the E10.1 inputs", exercise_weights, INPUTS["encoder_states"]),
        ("on other inputs", rng.dirichlet(np.ones(6)), rng.normal(size=(6, 5))),
    ]
    for where, weights, H in cases:
        expected = weights @ H  # (enc_dim,)
        got = _as_array(
            compute_context(weights.copy(), H.copy()), "compute_context", expected.shape,
            "one entry per dimension of h_j: sum over the positions j",
        )
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


@EXERCISE.check("most_attended", points=1, target="most_attended")
def check_most_attended(most_attended: Callable) -> str:
    """``most_attended(weights)`` -> the position j (1, 2, 3, ...) with the largest weight."""
    cases = [
        additive_attention(**_rename(INPUTS)).weights,
        np.array([0.1, 0.7, 0.2]),
        np.array([0.6, 0.3, 0.1]),
        np.array([0.05, 0.1, 0.15, 0.2, 0.5]),
    ]
    for weights in cases:
        answer = most_attended(weights.copy())
        if isinstance(answer, (bool, np.bool_)) or not isinstance(answer, (int, np.integer)):
            raise CheckFailed(
                f"most_attended must return a position as an int; got {type(answer).__name__}"
            )
        expected = int(np.argmax(weights)) + 1
        if answer == expected - 1:
            raise CheckFailed(
                "positions are numbered from 1, as in h_1, h_2, h_3: "
                "your answer looks like a 0-based index"
            )
        if answer != expected:
            raise CheckFailed("that position does not have the largest weight")
    return "the position with the largest weight, counted from 1"


EXERCISE.manual_question(
    "why",
    points=2,
    prompt=(
        "Which encoder state gets the most attention, and why? Explain with the energies: "
        "what does that state share with the decoder state, and what does tanh do to the gap?"
    ),
)
