"""Checks for exercise E10.4 (optional): the scores of notebook 6 for every decoder step at
once, and a general score whose matrix has a limited rank.

Parts 1-3 are plain functions of tensors that score all the decoder states of a batch, ``S``
``(batch, tgt_len, decoder_dim)``, against all its encoder outputs ``H`` in one batched product
or broadcast (Day 11's ``Q K^T``); the library (:mod:`course_utils.scores`) has only the
step-by-step form, which the checks call in a loop over the steps for their reference
(:mod:`course_utils.checks.e10_4.all_steps`), on fresh inputs in each grading run:

- ``dot``: ``dot_scores(S, H, scaled)``, ``s_t^T h_j`` (divided by ``sqrt(d)`` when scaled);
- ``scaled_dot``: ``scaled_dot_attention(S, H, mask)``, the weights and contexts of every step,
  padded source positions masked;
- ``general``: ``general_scores(S, H, W)``, ``s_t^T W h_j``;
- ``additive``: ``additive_scores(S, H, W_s, W_h, v)``, ``v^T tanh(W_s s_t + W_h h_j)``;
- ``low_rank``: the class ``LowRankGeneralScore``, ``e_j = s^T U V h_j`` with ``W = U V`` of rank
  at most ``r``, the keys computed once per sentence; the student then trains it at a few ranks
  (Part 5's run, not checked: it is read in the written answer).

Named hints: the last two axes swapped, the scaling missing or by ``d``, the softmax over the
steps, the mask not applied, applied after the softmax or the wrong way round, ``W`` on the wrong
side, the additive broadcast that pairs step t with position t only, the tanh missing; a function
that loops over the steps or the sentences (its number of torch operations grows with them) earns
half the points. A function that uses the library earns none.

Under ``course-grade`` every part is judged in the grader: its ``adapt`` runs the student's
function (or class) in the kernel as a function of plain arrays; the check body, which draws the
inputs and computes the expected answers, runs in the grader against the recorded results.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from course_utils.attention import Attention, BahdanauAttention
from course_utils.checks.calling import CheckFailed, reported, try_run
from course_utils.checks.e10_4.all_steps import (
    function_adapter,
    loop_over_steps,
    outputs_of,
    per_step_loop,
)
from course_utils.checks.framework import Check, Exercise
from course_utils.checks.hints import raise_named
from course_utils.checks.own_work import module_files, references_to, watch_calls
from course_utils.checks.probes import fresh_seed
from course_utils.checks.registry import load_hidden
from course_utils.scores import DotAttention, GeneralAttention, ScaledDotAttention

__all__ = [
    "EXERCISE",
    "check_additive",
    "check_dot",
    "check_general",
    "check_low_rank",
    "check_scaled_dot",
    "try_run",
]

EXERCISE = Exercise("E10.4", "Every decoder step at once; a general score of limited rank")
_LIBRARY = ("course_utils.scores",)

TRANSPOSE_HINT = (
    "the product runs over the wrong axis (a missing transpose?): the keys are "
    "(batch, src_len, d) and the state (batch, d); one energy per source position is the keys "
    "times the state as a column, (batch, src_len, d) @ (batch, d, 1), e.g. "
    "`torch.bmm(keys, decoder_state.unsqueeze(-1)).squeeze(-1)`")



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


def _reported(out: object, name: str, batch: int, src_len: int, encoder_dim: int) -> dict:
    """What an adapted class reported, checked: float tensors of the expected shapes."""
    out = reported(out, name)
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


# ------------------------------------------------------- Parts 1-3: every decoder step at once

#: (batch, tgt_len, src_len): a target as long as the source, where a transpose keeps the shape
#: and a forgotten broadcast axis pairs step t with position t only; a first shape; then more
#: decoder steps and more sentences (these two count the torch operations a loop would add).
_STEP_CASES = {"square": (2, 4, 4), "small": (2, 3, 5), "long": (2, 9, 5), "wide": (5, 3, 5)}
_TOL = {"rtol": 1e-4, "atol": 1e-4}  # float32: a batched sum against a loop of per-step sums
_SWAPPED = ("the last two axes are swapped (a transpose on the wrong side?): row t of the "
            "result belongs to decoder step t and column j to source position j, so the "
            "product is (batch, tgt_len, d) @ (batch, d, src_len): which of the two factors "
            "needs its last two axes swapped?")


def _near(a: torch.Tensor, b: torch.Tensor | None) -> bool:
    return b is not None and a.shape == b.shape and bool(
        torch.allclose(a, b, **_TOL, equal_nan=True))  # NaN: a softmax over an all--inf axis


def _draw(case: str, dims: tuple[int, int], base: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh decoder states ``S`` (batch, tgt_len, dims[1]) and encoder outputs ``H``
    (batch, src_len, dims[0]) for one of :data:`_STEP_CASES`."""
    batch, tgt_len, src_len = _STEP_CASES[case]
    generator = torch.Generator().manual_seed(fresh_seed(base + list(_STEP_CASES).index(case)))
    H = torch.randn(batch, src_len, dims[0], generator=generator)
    S = torch.randn(batch, tgt_len, dims[1], generator=generator)
    return S, H


def _padding(batch: int, src_len: int, seed: int) -> torch.Tensor:
    """A mask, real tokens first: every sentence has at least one real and one padded
    position (so the mask the wrong way round is a mask too)."""
    lengths = torch.randint(1, src_len, (batch,), generator=torch.Generator().manual_seed(seed))
    return torch.arange(src_len) < lengths.unsqueeze(1)


def _all_steps(name: str, points: float, ops: dict[str, int]) -> str:
    hint = per_step_loop(ops, name)
    if hint:
        raise CheckFailed(hint, points=points / 2)
    return (f"right on every step of every sentence, on fresh inputs of four shapes, with as "
            f"many torch operations for {_STEP_CASES['long'][1]} steps or "
            f"{_STEP_CASES['wide'][0]} sentences as for {_STEP_CASES['small'][1]} steps of "
            f"{_STEP_CASES['small'][0]}")


def _every_step_part(name: str, points: float, target: str, outputs: tuple[str, ...]
                     ) -> Callable[[Callable[[Callable], str]], Check]:
    """Register one of Parts 1-3: the student's function ``target`` of tensors, run in the kernel
    on plain arrays with its torch operations counted (:func:`.all_steps.function_adapter`),
    reporting ``outputs``."""
    return EXERCISE.check(name, points=points, target=target,
                          adapt=function_adapter(target, outputs))


_D = 6  # the size of states and encoder outputs in Parts 1-2 (not a length of the cases)


@_every_step_part("dot", 2, "dot_scores", ("scores",))
def check_dot(run: Callable) -> str:
    ops: dict[str, int] = {}
    for case in _STEP_CASES:
        S, H = _draw(case, (_D, _D), 40)
        plain = loop_over_steps(DotAttention(_D, _D), S, H)[0]
        scaled = loop_over_steps(ScaledDotAttention(_D, _D), S, H)[0]
        for flag, expected in ((False, plain), (True, scaled)):
            got = outputs_of(run(S.numpy(), H.numpy(), flag), "dot_scores",
                             {"scores": expected.shape}, _SWAPPED)
            ops.setdefault(case, got["ops"])
            if _near(got["scores"], expected):
                continue
            raise_named(got["scores"], [
                (expected.transpose(1, 2) if case == "square" else None,
                 f"with as many steps as source positions: {_SWAPPED}"),
                (plain, "with scaled=True the scores must be divided by sqrt(d), the size of "
                        "the vectors (S.shape[-1]); yours are not"),
                (scaled, "with scaled=False the scores are the plain dot products s_t^T h_j; "
                         "yours are divided by sqrt(d)"),
                (plain / _D, "your scores are divided by d; the scaled score divides by sqrt(d)"),
            ], _near)
            raise CheckFailed(f"scores (scaled={flag}) differ from s_t^T h_j on a batch of "
                              f"{S.shape[0]} sentences, {S.shape[1]} decoder steps and "
                              f"{H.shape[1]} source positions: entry (b, t, j) is the dot "
                              "product of step t's state with position j's encoder output")
    return _all_steps("dot_scores", 2, ops)


@_every_step_part("scaled_dot", 2, "scaled_dot_attention", ("weights", "contexts"))
def check_scaled_dot(run: Callable) -> str:
    ops: dict[str, int] = {}
    for case in _STEP_CASES:
        S, H = _draw(case, (_D, _D), 50)
        batch, _, src_len = _STEP_CASES[case]
        mask = _padding(batch, src_len, fresh_seed(60 + len(ops)))
        _, weights, contexts = loop_over_steps(ScaledDotAttention(_D, _D), S, H, mask)
        got = outputs_of(run(S.numpy(), H.numpy(), mask.numpy()), "scaled_dot_attention",
                         {"weights": weights.shape, "contexts": contexts.shape}, _SWAPPED)
        ops[case] = got["ops"]
        if not _near(got["weights"], weights):
            energies = loop_over_steps(ScaledDotAttention(_D, _D), S, H)[0]
            unmasked = loop_over_steps(ScaledDotAttention(_D, _D), S, H)[1]
            real = mask[:, None, :].expand_as(energies)  # the mistakes, never the answer
            raise_named(got["weights"], [
                (torch.where(real, energies, -math.inf).softmax(1), "each row of weights must "
                 "sum to 1 over the source positions: the softmax runs over the wrong axis (the "
                 "decoder steps, dim=1); it belongs on the last axis, dim=-1"),
                (unmasked, "padded source positions get weight: the mask is not applied. Their "
                 "scores must be -inf before the softmax (the mask is (batch, src_len): one row "
                 "per sentence, the same for every step, so it needs an axis for the steps)"),
                (unmasked * real, "the mask is applied after the softmax: the real positions' "
                 "weights no longer sum to 1. Mask the scores (-inf) before the softmax"),
                (loop_over_steps(ScaledDotAttention(_D, _D), S, H, ~mask)[1],
                 "the mask is the wrong way round: True marks a real token, which keeps its "
                 "score; the padded positions (False) get -inf"),
                (loop_over_steps(DotAttention(_D, _D), S, H, mask)[1],
                 "the weights are the softmax of the plain dot products: divide the scores by "
                 "sqrt(d) before the softmax"),
            ], _near)
            raise CheckFailed(f"weights differ from softmax(s_t^T h_j / sqrt(d)) over the real "
                              f"positions, on a batch of {batch} sentences with padding")
        if not _near(got["contexts"], contexts):
            raise CheckFailed("the weights are right, but the contexts differ from "
                              "sum_j alpha_tj h_j: one batched product of the weights "
                              "(batch, tgt_len, src_len) with H (batch, src_len, d)")
    return _all_steps("scaled_dot_attention", 2, ops)


def _wrong_side(W: torch.Tensor, S: torch.Tensor, H: torch.Tensor) -> torch.Tensor:
    """s_t^T W^T h_j, step by step: the library's general score with W transposed."""
    library = GeneralAttention(W.shape[0], W.shape[1])
    library.load_state_dict({"W.weight": W.T.contiguous()})
    return loop_over_steps(library, S, H)[0]


_ENC, _DEC, _ATT = 6, 4, 7  # Part 3's sizes: encoder outputs, decoder states, additive space


@_every_step_part("general", 1, "general_scores", ("scores",))
def check_general(run: Callable) -> str:
    ops: dict[str, int] = {}
    for case in _STEP_CASES:
        square = case == "square"  # here encoder and decoder sizes are equal too
        enc, dec = (_DEC, _DEC) if square else (_ENC, _DEC)
        S, H = _draw(case, (enc, dec), 70)
        generator = torch.Generator().manual_seed(fresh_seed(75 + len(ops)))
        W = torch.randn(dec, enc, generator=generator) / enc ** 0.5
        library = GeneralAttention(enc, dec)
        library.load_state_dict({"W.weight": W})
        expected = loop_over_steps(library, S, H)[0]
        got = outputs_of(run(S.numpy(), H.numpy(), W.numpy()), "general_scores",
                         {"scores": expected.shape}, _SWAPPED)
        ops[case] = got["ops"]
        if not _near(got["scores"], expected):
            raise_named(got["scores"], [
                (expected.transpose(1, 2) if square else None,
                 f"with as many steps as source positions: {_SWAPPED}"),
                (_wrong_side(W, S, H) if square else None,
                 "W is on the wrong side: you computed s^T W^T h_j; the general score is "
                 "s^T (W h_j), W applied to the encoder outputs (keys = H @ W.T)"),
            ], _near)
            raise CheckFailed(f"scores differ from s_t^T W h_j on a batch of {S.shape[0]} "
                              f"sentences (encoder outputs of {enc}, states of {dec})")
    return _all_steps("general_scores", 1, ops)


@_every_step_part("additive", 2, "additive_scores", ("scores",))
def check_additive(run: Callable) -> str:
    ops: dict[str, int] = {}
    for case in _STEP_CASES:
        S, H = _draw(case, (_ENC, _DEC), 80)
        generator = torch.Generator().manual_seed(fresh_seed(85 + len(ops)))
        W_s = torch.randn(_ATT, _DEC, generator=generator) / _DEC ** 0.5
        W_h = torch.randn(_ATT, _ENC, generator=generator) / _ENC ** 0.5
        v = torch.randn(_ATT, generator=generator) / _ATT ** 0.5
        library = BahdanauAttention(_ENC, _DEC, _ATT)
        library.load_state_dict({"W_s.weight": W_s, "W_h.weight": W_h, "v.weight": v[None]})
        expected = loop_over_steps(library, S, H)[0]
        out = run(S.numpy(), H.numpy(), W_s.numpy(), W_h.numpy(), v.numpy())
        if isinstance(out, dict) and "size of tensor" in str(out.get("error", "")):
            raise CheckFailed(f"{out['error']}: to pair every step with every position, give "
                              "the steps' part (batch, tgt_len, a) an axis for the positions "
                              "and the positions' part (batch, src_len, a) one for the steps, "
                              "(batch, tgt_len, 1, a) + (batch, 1, src_len, a), and let "
                              "broadcasting do the rest")
        reported = np.asarray(out.get("scores")) if isinstance(out, dict) else None
        if case == "square" and reported is not None and reported.shape == expected.shape[:2]:
            raise CheckFailed("with as many steps as source positions your scores have one "
                              "number per step: W_s s_t was added to W_h h_t only, step t "
                              "paired with position t. Add an axis to each, (batch, tgt_len, "
                              "1, a) + (batch, 1, src_len, a), to pair every step with every "
                              "position")
        got = outputs_of(out, "additive_scores", {"scores": expected.shape}, _SWAPPED)
        ops[case] = got["ops"]
        if not _near(got["scores"], expected):
            keys = library.project_keys(H)  # the mistakes one step at a time, as the library
            no_tanh = torch.stack([(keys + library.W_s(S[:, t]).unsqueeze(1)) @ v
                                   for t in range(S.shape[1])], 1).detach()
            raise_named(got["scores"], [
                (expected.transpose(1, 2) if case == "square" else None,
                 f"with as many steps as source positions: {_SWAPPED}"),
                (no_tanh, "the tanh is missing: e_tj = v^T tanh(W_s s_t + W_h h_j)"),
                (torch.tanh(no_tanh), "tanh is applied after v: e_tj = v^T tanh(W_s s_t + "
                                      "W_h h_j), the tanh on the a-dimensional sum"),
            ], _near)
            raise CheckFailed(f"scores differ from v^T tanh(W_s s_t + W_h h_j) on a batch of "
                              f"{S.shape[0]} sentences")
    return _all_steps("additive_scores", 2, ops)



# ------------------------------------------------------------------------------ low rank

#: the grader's named mistakes of Part 5b (:mod:`.hidden`); a student handout has none
HIDDEN = load_hidden("E10.4")


def _general_score(W: torch.Tensor, state: torch.Tensor, outputs: torch.Tensor) -> torch.Tensor:
    """The energies ``s^T W h_j`` of the library's general score with the matrix ``W``
    ``(decoder_dim, encoder_dim)``: a rank-limited score is the general one with ``W = U V``."""
    general = GeneralAttention(W.shape[1], W.shape[0])
    with torch.no_grad():
        general.W.weight.copy_(W)
        return general.energies(state, general.project_keys(outputs))

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
        expected = _general_score(U @ V, state, outputs)  # W = U V, the library's general score
        if not _close(result["energies"], expected):
            if HIDDEN is not None:
                raise_named(result["energies"], HIDDEN.low_rank_slips(state, outputs, U, V),
                            _close)
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
