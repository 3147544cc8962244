"""Checks for exercise E10.4 (optional): the dot, scaled-dot and general scores, written into
the interface every score of the course shares (:class:`~course_utils.attention.Attention`),
and a general score whose matrix has a limited rank.

Students write four classes. Each check runs the student's module and compares it with the
formula on fresh inputs in each grading run (sizes chosen so that a product over the wrong axis
fails or gives different numbers):

- ``dot``: ``DotScore``, ``e_j = s^T h_j``: keys are the encoder outputs;
- ``scaled_dot``: ``ScaledDotScore``, ``e_j = s^T h_j / sqrt(d)``, checked through the whole
  attention step, so that a scaling applied to the weights (after the softmax) or to the
  context is caught and named;
- ``general``: ``GeneralScore``, ``e_j = s^T W h_j`` with ``W h_j`` computed once per sentence
  (in ``project_keys``), not at every step; ``W`` on the wrong side is named;
- ``low_rank``: ``LowRankGeneralScore``, ``e_j = s^T U V h_j`` with ``W = U V`` of rank at most
  ``r`` (``V`` maps ``h_j`` to ``r`` numbers, ``U`` those to the decoder's size), the keys
  computed once per sentence; the student then trains it at a few ranks (Part 5's run, not
  checked: it is read in the written answer).

Named hints: a missing transpose (a product over the wrong axis), scaling by ``d`` or by the
source length instead of ``sqrt(d)``, scaling the weights instead of the scores, general's
matrix on the wrong side, and the keys recomputed at every decoder step. A class that reuses the
library's score modules (:mod:`course_utils.scores`) earns no points.

Under ``course-grade`` the three parts are judged in the grader, like E10.1's: each names an
``adapt`` (:func:`_adapter`) that, in the kernel, turns the student's class into a function of
plain data (sizes, the state, the encoder outputs, a mask and ``W`` as arrays in; energies,
weights and context as arrays out); the check body, which draws the inputs and computes the
expected answers, runs in the grader against the recorded results.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from course_utils.attention import Attention
from course_utils.checks.calling import CheckFailed, try_run
from course_utils.checks.framework import Exercise
from course_utils.checks.hints import raise_named
from course_utils.checks.own_work import module_files, references_to, watch_calls
from course_utils.checks.probes import fresh_seed
from course_utils.scores import DotAttention, GeneralAttention

__all__ = [
    "EXERCISE",
    "check_dot",
    "check_general",
    "check_low_rank",
    "check_scaled_dot",
    "score_to_train",
    "try_run",
]

EXERCISE = Exercise("E10.4", "Dot, scaled-dot and general scores")
_LIBRARY = ("course_utils.scores",)

#: Two shapes: batch 3, source length 5, states of 6 (src_len != d, so a product
#: over the wrong axis fails), then a square case (src_len == d == 4), where it would not fail
#: but gives other numbers.
_CASES = ((3, 5, 6), (2, 4, 4))

TRANSPOSE_HINT = (
    "the product runs over the wrong axis (a missing transpose?): the keys are "
    "(batch, src_len, d) and the state (batch, d); one energy per source position is the keys "
    "times the state as a column, (batch, src_len, d) @ (batch, d, 1), e.g. "
    "`torch.bmm(keys, decoder_state.unsqueeze(-1)).squeeze(-1)`")


_MIXED_UP = ("with a source as long as the states are wide (4 and 4) your energies mix up "
             f"positions and coordinates: {TRANSPOSE_HINT}")


def _class_of(student_class: object, name: str, library: type) -> type:
    if not isinstance(student_class, type) or not issubclass(student_class, Attention):
        raise CheckFailed(f"{name} must be a class that subclasses the course's score "
                          f"interface: `class {name}(Attention):`")
    if issubclass(student_class, library):
        raise CheckFailed(f"{name} subclasses the library's `{library.__name__}`, the answer "
                          "this check compares against: subclass `Attention` and write the "
                          "score yourself")
    for attribute, value in vars(student_class).items():
        function = getattr(value, "__func__", value)
        if callable(function) and hasattr(function, "__code__"):
            used = references_to(function, _LIBRARY)
            if used:
                raise CheckFailed(_not_own_work(f"{name}.{attribute}", used[0]))
    return student_class


def _not_own_work(where: str, what: str) -> str:
    return (f"`{where}` {what}: that is the course's own score, which this check compares "
            "against, so this part earns no points. Write it yourself with torch operations")


def _energies(module: Attention, name: str, state: torch.Tensor, outputs: torch.Tensor,
              ) -> torch.Tensor:
    """The student's energies through both methods, with a named hint for a shape error.
    Runs in the kernel (inside the adapted function)."""
    batch, src_len, _ = outputs.shape
    try:
        with torch.no_grad(), watch_calls(module_files(_LIBRARY)) as entered:
            keys = module.project_keys(outputs)
            energies = module.energies(state, keys)
    except (NotImplementedError, CheckFailed):
        raise
    except RuntimeError as error:
        text = str(error)
        if any(s in text for s in ("cannot be multiplied", "size of tensor", "Expected size",
                                   "must match", "shape", "mismatch")):
            raise CheckFailed(f"{name} raised `{text.splitlines()[0]}` on a batch of {batch} "
                              f"sources of {src_len} positions: {TRANSPOSE_HINT}") from None
        raise CheckFailed(f"{name} raised RuntimeError: {text.splitlines()[0]}") from None
    except Exception as error:
        raise CheckFailed(f"{name} raised {type(error).__name__}: {error}") from None
    if entered:
        raise CheckFailed(_not_own_work(name, f"calls `{entered[0]}`"))
    if isinstance(energies, torch.Tensor) and tuple(energies.shape) == (batch, outputs.shape[-1]) \
            and src_len != outputs.shape[-1]:
        raise CheckFailed(f"{name}.energies returns one number per coordinate, "
                          f"{tuple(energies.shape)}, instead of one per source position, "
                          f"(batch, src_len) = {(batch, src_len)}: {TRANSPOSE_HINT}")
    return _tensor(energies, f"{name}.energies", (batch, src_len))


def _tensor(value: object, what: str, shape: tuple[int, ...]) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise CheckFailed(f"{what} must return a torch tensor; got {type(value).__name__}")
    if value.dtype.is_complex or not value.dtype.is_floating_point:
        raise CheckFailed(f"{what} must return a float tensor; got {value.dtype}")
    if tuple(value.shape) != shape:
        raise CheckFailed(f"{what} must return shape {shape}; got {tuple(value.shape)}")
    return value.detach().float()


def _adapter(name: str, library: type) -> Callable[[object], Callable]:
    """``adapt`` for a score part: the student's class as a function of plain data.

    ``run(encoder_dim, decoder_dim, state, outputs, mask, W)`` builds the student's module
    (loading ``W`` when given), and returns a dict: ``energies`` (through ``project_keys`` and
    ``energies``), ``W_in_energies`` (whether ``energies`` applied ``self.W``) and, with a
    ``mask``, the whole attention step's ``weights`` and ``context`` (or ``step_error``); or
    ``{"error": why}`` when the module could not be built or run, which scores 0."""

    def adapt(student_class: object) -> Callable:
        cls = _class_of(student_class, name, library)

        def run(encoder_dim: int, decoder_dim: int, state: np.ndarray, outputs: np.ndarray,
                mask: np.ndarray | None, W: np.ndarray | None) -> dict:
            try:
                return _run(cls, name, encoder_dim, decoder_dim, state, outputs, mask, W)
            except CheckFailed as failed:
                return {"error": failed.message}

        run.__name__ = name
        return run

    return adapt


def _run(cls: type, name: str, encoder_dim: int, decoder_dim: int, state: np.ndarray,
         outputs: np.ndarray, mask: np.ndarray | None, W: np.ndarray | None) -> dict:
    try:
        module = cls(encoder_dim, decoder_dim)
    except NotImplementedError:
        raise
    except Exception as error:
        raise CheckFailed(f"`{name}({encoder_dim}, {decoder_dim})` raised "
                          f"{type(error).__name__}: {error}: keep the constructor the exercise "
                          "gives") from None
    if W is not None:
        try:
            module.load_state_dict({"W.weight": torch.as_tensor(W, dtype=torch.float32)})
        except RuntimeError as error:
            raise CheckFailed("the check's W does not load into your module: keep the "
                              "constructor the exercise gives (`self.W = nn.Linear(encoder_dim, "
                              f"decoder_dim, bias=False)`) ({str(error).splitlines()[0]})"
                              ) from None
    state_t = torch.as_tensor(state, dtype=torch.float32)
    outputs_t = torch.as_tensor(outputs, dtype=torch.float32)
    result: dict = {"energies": _energies(module, name, state_t, outputs_t).numpy()}
    if isinstance(getattr(module, "W", None), torch.nn.Module):  # the keys once per sentence?
        result["W_in_energies"] = _applied_per_step(module, ("W",), state_t, outputs_t)
    if mask is not None:
        batch, src_len, _ = outputs.shape
        try:
            with torch.no_grad():
                mask_t = torch.as_tensor(mask, dtype=torch.bool)
                context, weights = module(state_t, outputs_t, mask_t)
            result["weights"] = _tensor(weights, "the attention step's weights",
                                        (batch, src_len)).numpy()
            result["context"] = _tensor(context, "the attention step's context",
                                        (batch, outputs.shape[-1])).numpy()
        except (NotImplementedError, CheckFailed):
            raise
        except Exception as error:
            raise CheckFailed(f"the whole attention step (`module(state, encoder_outputs, "
                              f"mask)`) raised {type(error).__name__}: {error}") from None
    return result


def _applied_per_step(module: Attention, layers: tuple[str, ...], state: torch.Tensor,
                      outputs: torch.Tensor) -> bool:
    """Whether ``energies`` (a decoder step) calls any of these layers of the source's side."""
    calls: list[int] = []
    hooks = [getattr(module, layer).register_forward_hook(lambda *_: calls.append(1))
             for layer in layers]
    try:
        with torch.no_grad():
            keys = module.project_keys(outputs)
            before = len(calls)
            module.energies(state, keys)
    finally:
        for hook in hooks:
            hook.remove()
    return len(calls) > before


# --------------------------------------------------------------- the grader's side of a part


def _inputs(batch: int, src_len: int, encoder_dim: int, decoder_dim: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    outputs = torch.randn(batch, src_len, encoder_dim, generator=generator)
    state = torch.randn(batch, decoder_dim, generator=generator)
    return state, outputs


def _call(run: Callable, name: str, state: torch.Tensor, outputs: torch.Tensor,
          mask: torch.Tensor | None = None, W: torch.Tensor | None = None) -> dict:
    """The adapted student module on these inputs; its results as float tensors of the shapes
    expected, or :class:`CheckFailed` naming what came back instead."""
    batch, src_len, encoder_dim = outputs.shape
    out = run(encoder_dim, state.shape[1], state.numpy(), outputs.numpy(),
              None if mask is None else mask.numpy(), None if W is None else W.numpy())
    return _reported(out, name, batch, src_len, encoder_dim)


def _reported(out: object, name: str, batch: int, src_len: int, encoder_dim: int) -> dict:
    """What an adapted class reported, checked: float tensors of the expected shapes."""
    if not isinstance(out, dict):
        raise CheckFailed(f"{name} reported no result")
    if "error" in out:
        raise CheckFailed(str(out["error"])[:1000])
    shapes = {"energies": (batch, src_len), "weights": (batch, src_len),
              "context": (batch, encoder_dim)}
    got: dict = {"W_in_energies": out.get("W_in_energies") is True}
    for key, shape in shapes.items():
        if key not in out:
            continue
        value = np.asarray(out[key])
        if value.dtype.kind != "f" or value.shape != shape:
            raise CheckFailed(f"{name}: {key} of shape {shape} expected; got "
                              f"{value.dtype} {value.shape}")
        got[key] = torch.as_tensor(value, dtype=torch.float32)
    if "energies" not in got:
        raise CheckFailed(f"{name} reported no energies")
    return got


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a, b, rtol=1e-4, atol=1e-5))


def _wrong_axis(state: torch.Tensor, outputs: torch.Tensor) -> torch.Tensor | None:
    """``s^T`` times the keys' *columns*: what a product without the transpose gives when
    ``src_len == d``."""
    if outputs.shape[1] != outputs.shape[2] or outputs.shape[2] != state.shape[1]:
        return None
    return torch.bmm(state.unsqueeze(1), outputs).squeeze(1)


# ------------------------------------------------------------------------------ dot


@EXERCISE.check("dot", points=2, target="DotScore", adapt=_adapter("DotScore", DotAttention))
def check_dot(run: Callable) -> str:
    for case, (batch, src_len, d) in enumerate(_CASES):
        state, outputs = _inputs(batch, src_len, d, d, fresh_seed(40 + case))
        got = _call(run, "DotScore", state, outputs)["energies"]
        expected = torch.bmm(outputs, state.unsqueeze(-1)).squeeze(-1)
        if _close(got, expected):
            continue
        raise_named(got, [
            (_wrong_axis(state, outputs), _MIXED_UP),
            (expected / math.sqrt(d), "your energies are divided by sqrt(d): that is the scaled "
                                      "score of Part 2; Part 1 is the plain dot product s^T h_j"),
        ], _close)
        raise CheckFailed(f"energies differ from s^T h_j on a batch of {batch} sources of "
                          f"{src_len} positions with states of {d}: each energy is the sum "
                          "over coordinates of the state times one encoder output")
    return "s^T h_j for every position, on fresh inputs of two shapes"


# ------------------------------------------------------------------------------ scaled dot


@EXERCISE.check("scaled_dot", points=2, target="ScaledDotScore",
                adapt=_adapter("ScaledDotScore", DotAttention))
def check_scaled_dot(run: Callable) -> str:
    for case, (batch, src_len, d) in enumerate(_CASES):
        state, outputs = _inputs(batch, src_len, d, d, fresh_seed(50 + case))
        mask = torch.ones(batch, src_len, dtype=torch.bool)
        mask[0, src_len - 2:] = False  # a padded sentence too
        result = _call(run, "ScaledDotScore", state, outputs, mask)
        if "weights" not in result or "context" not in result:
            raise CheckFailed("ScaledDotScore reported no attention step")
        got, weights, context = result["energies"], result["weights"], result["context"]
        dot = torch.bmm(outputs, state.unsqueeze(-1)).squeeze(-1)
        expected = dot / math.sqrt(d)
        right = torch.softmax(expected.masked_fill(~mask, float("-inf")), dim=-1)
        unscaled = torch.softmax(dot.masked_fill(~mask, float("-inf")), dim=-1)
        if _close(weights, unscaled / math.sqrt(d)):
            raise CheckFailed("you scaled the weights, after the softmax, so they no longer sum "
                              "to 1: scale the scores (the energies), before the softmax; that "
                              "is what keeps the softmax from saturating")
        wrong = _wrong_axis(state, outputs)
        raise_named(got, [
            (dot if _close(weights, unscaled) else None,
             "the energies are not scaled: divide s^T h_j by sqrt(d), the square root of the "
             "size of the vectors"),
            (dot / d, "the energies are divided by d: divide by its square root"),
            (dot * math.sqrt(d), "the energies are multiplied by sqrt(d): divide by it"),
            (dot / math.sqrt(src_len) if src_len != d else None,
             "the energies are divided by the square root of the source length; d is the size "
             "of the vectors (`self.key_dim`)"),
            (None if wrong is None else wrong / math.sqrt(d), _MIXED_UP),
            (wrong, _MIXED_UP),
        ], _close)
        if not _close(got, expected):
            raise CheckFailed(f"energies differ from s^T h_j / sqrt(d) on a batch of {batch} "
                              f"sources of {src_len} positions with states of {d}")
        if not _close(weights, right):
            raise CheckFailed("the energies are right, but the attention step's weights are "
                              "not their softmax over the real positions: do not override "
                              "`attend` or `forward`, the interface does that part")
        if not _close(context, torch.bmm(right.unsqueeze(1), outputs.masked_fill(
                ~mask.unsqueeze(-1), 0.0)).squeeze(1)):
            raise CheckFailed("energies and weights are right, but the context is not "
                              "sum_j alpha_j h_j: scaling belongs to the scores only")
    return "s^T h_j / sqrt(d), before the softmax, on fresh inputs of two shapes"


# ------------------------------------------------------------------------------ general


@EXERCISE.check("general", points=3, target="GeneralScore",
                adapt=_adapter("GeneralScore", GeneralAttention))
def check_general(run: Callable) -> str:
    recomputed = False
    for case, (batch, src_len, (encoder_dim, decoder_dim)) in enumerate(
            [(3, 5, (6, 4)), (2, 5, (5, 5))]):
        state, outputs = _inputs(batch, src_len, encoder_dim, decoder_dim,
                                 fresh_seed(60 + case))
        generator = torch.Generator().manual_seed(fresh_seed(70 + case))
        # W maps an encoder output to the decoder's size: W h_j has decoder_dim numbers
        W = torch.randn(decoder_dim, encoder_dim, generator=generator) / math.sqrt(encoder_dim)
        expected = torch.einsum("bd,de,bte->bt", state, W, outputs)
        try:
            result = _call(run, "GeneralScore", state, outputs, W=W)
        except CheckFailed as failed:
            if encoder_dim != decoder_dim and "cannot be multiplied" in failed.message:
                raise CheckFailed("W is applied to something of the wrong size: it maps an "
                                  f"encoder output ({encoder_dim} numbers) to the decoder's "
                                  f"size ({decoder_dim}), so it belongs on h_j: the keys are "
                                  "W h_j, computed in `project_keys`, and the energy is "
                                  f"s^T (W h_j). ({failed.message})") from None
            raise
        got = result["energies"]
        if not _close(got, expected):
            raise_named(got, [
                (torch.einsum("bd,ed,bte->bt", state, W, outputs)
                 if encoder_dim == decoder_dim else None,
                 "W is on the wrong side: you computed (W s)^T h_j = s^T W^T h_j; the general "
                 "score is s^T (W h_j), with W applied to the encoder outputs (the keys)"),
                (_wrong_axis(state, torch.einsum("de,bte->btd", W, outputs)),
                 f"your energies mix up positions and coordinates: {TRANSPOSE_HINT}"),
            ], _close)
            raise CheckFailed(f"energies differ from s^T W h_j on a batch of {batch} sources "
                              f"of {src_len} positions (encoder outputs of {encoder_dim}, "
                              f"states of {decoder_dim})")
        recomputed = recomputed or result["W_in_energies"]
    if recomputed:  # the keys once per sentence: the decoder's steps call only `energies`
        raise CheckFailed("the energies are right, but `energies` applies W at every decoder "
                          "step: W h_j does not depend on the step, so compute it once per "
                          "sentence in `project_keys` and let `energies` use the keys",
                          points=2)
    return "s^T W h_j, with the keys W h_j computed once per sentence, on fresh inputs"


# ------------------------------------------------------------------------------ low rank

_LOW_RANK = "LowRankGeneralScore"
#: (batch, src_len, encoder_dim, decoder_dim, rank): the sizes all differ, then the source is as
#: long as the keys are wide (3 and 3), where a product over the wrong axis gives other numbers.
_LOW_RANK_CASES = ((3, 5, 6, 4, 2), (2, 3, 5, 4, 3))
_U_HINT = ("U maps r numbers to the decoder's size, so it does not apply to the state: the query "
           "is U^T s, r numbers (look at the shape of U.weight: which side of the state does "
           "it go?), and the energy of position j is the key V h_j times it")


def _low_rank_adapter(student_class: object) -> Callable:
    """``adapt`` for the low-rank part: ``run(encoder_dim, decoder_dim, rank, state, outputs, U,
    V)`` builds the student's module with these ``U`` and ``V`` and returns its ``energies`` and
    ``W_in_energies`` (whether a decoder step applies ``U`` or ``V`` to the source's side), or
    ``{"error": why}``."""
    cls = _class_of(student_class, _LOW_RANK, GeneralAttention)

    def run(encoder_dim: int, decoder_dim: int, rank: int, state: np.ndarray,
            outputs: np.ndarray, U: np.ndarray, V: np.ndarray) -> dict:
        try:
            try:
                module = cls(encoder_dim, decoder_dim, rank)
                module.load_state_dict({"U.weight": torch.as_tensor(U, dtype=torch.float32),
                                        "V.weight": torch.as_tensor(V, dtype=torch.float32)})
            except NotImplementedError:
                raise
            except Exception as error:
                raise CheckFailed(
                    f"`{_LOW_RANK}({encoder_dim}, {decoder_dim}, {rank})` with the check's U and "
                    f"V raised {type(error).__name__}: {str(error).splitlines()[0]}: keep the "
                    "constructor the exercise gives") from None
            state_t = torch.as_tensor(state, dtype=torch.float32)
            outputs_t = torch.as_tensor(outputs, dtype=torch.float32)
            return {"energies": _energies(module, _LOW_RANK, state_t, outputs_t).numpy(),
                    "W_in_energies": _applied_per_step(module, ("U", "V"), state_t, outputs_t)}
        except CheckFailed as failed:
            return {"error": failed.message}

    run.__name__ = _LOW_RANK
    return run


@EXERCISE.check("low_rank", points=2, target=_LOW_RANK, adapt=_low_rank_adapter)
def check_low_rank(run: Callable) -> str:
    recomputed = False
    for case, (batch, src_len, encoder_dim, decoder_dim, rank) in enumerate(_LOW_RANK_CASES):
        state, outputs = _inputs(batch, src_len, encoder_dim, decoder_dim, fresh_seed(80 + case))
        generator = torch.Generator().manual_seed(fresh_seed(90 + case))
        V = torch.randn(rank, encoder_dim, generator=generator) / math.sqrt(encoder_dim)
        U = torch.randn(decoder_dim, rank, generator=generator) / math.sqrt(rank)
        out = run(encoder_dim, decoder_dim, rank, state.numpy(), outputs.numpy(), U.numpy(),
                  V.numpy())
        try:
            result = _reported(out, _LOW_RANK, batch, src_len, encoder_dim)
        except CheckFailed as failed:
            if "cannot be multiplied" in failed.message:
                raised = failed.message.split(": the product runs")[0]
                raise CheckFailed(f"{_U_HINT} ({raised})") from None
            raise
        keys = torch.einsum("re,bte->btr", V, outputs)  # V h_j: (batch, src_len, rank)
        query = state @ U  # U^T s: (batch, rank)
        expected = torch.bmm(keys, query.unsqueeze(-1)).squeeze(-1)
        if not _close(result["energies"], expected):
            raise_named(result["energies"], [(_wrong_axis(query, keys), _MIXED_UP)], _close)
            raise CheckFailed(f"energies differ from s^T U V h_j on a batch of {batch} sources "
                              f"of {src_len} positions (encoder outputs of {encoder_dim}, "
                              f"states of {decoder_dim}, rank {rank})")
        recomputed = recomputed or result["W_in_energies"]
    if recomputed:
        raise CheckFailed("the energies are right, but `energies` applies U or V to the source's "
                          "side at every decoder step: V h_j does not depend on the step, so "
                          "compute it once per sentence in `project_keys`; at each step only "
                          "the query U^T s is new", points=1)
    return "s^T U V h_j, with the keys V h_j computed once per sentence, on fresh inputs"


EXERCISE.manual_question(
    "prediction", points=1,
    prompt="Before the run: held-out exact match of the general score at ranks 1, 2 and 8 "
           "(against Part 4's full rank), and why.")
EXERCISE.manual_question(
    "outcome", points=2,
    prompt="After the run: the measured outcome against your prediction, explained from "
           "what a rank-r score s^T U V h_j can and cannot do with the weights over positions.")


# ------------------------------------------------------------------------------ training


def score_to_train(student_class: object) -> type[Attention]:
    """The student's ``GeneralScore`` once it passes its check, else the library's
    :class:`~course_utils.scores.GeneralAttention` (printing which), for Part 4's model."""
    result = check_general(student_class)
    if result.passed:
        print("Part 4 trains with your GeneralScore")
        return student_class  # type: ignore[return-value]
    print("Part 4 trains with the library's GeneralAttention until your GeneralScore passes "
          "its check")
    return GeneralAttention
